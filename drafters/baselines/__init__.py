"""Proposers a user would pick instead of a trained drafter: n-gram (prompt lookup), suffix decoding over the
organization's traces, and the what-if hybrid of a drafter with one of them (docs/architecture.md section 5).

The n-gram names are re-exported here; suffix decoding and the hybrid are imported from their modules.
"""

from drafters.baselines.ngram import NGramProposer, NoDraftProposer, make_baseline

__all__ = ["NGramProposer", "NoDraftProposer", "make_baseline"]
