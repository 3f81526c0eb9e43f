"""Engines that measure acceptance: ``base.Engine`` (the interface), ``hf.HFEngine`` (in-process, exact
per-round data), ``sglang.SGLangEngine`` (launched or external SGLang server); llama.cpp implements the same
interface. Submodules are imported on demand so that ``drafters.engines`` costs nothing to import."""
