"""scripts/stack: the local stack with or without an image registry (docs/stack.md)."""
