"""Trace formats -> canonical conversations (torch-free)."""
