"""GGUF for llama.cpp: read a file's metadata, export a DeepSpec-native DSpark checkpoint (or a target) with
the vendored ``convert_hf_to_gguf.py --target-model-dir`` (docs/serving.md section 3), and the export
command line ``python -m drafters.engines.llamacpp export`` that the service CLI runs as a subprocess.

Failure codes: bad_gguf, gguf_export_failed / gguf_export_unsupported / gguf_export_mismatch /
gguf_export_bad_input, llamacpp_not_installed (``build.find_converter``), target_not_found.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drafters.engines.llamacpp.build import DEFAULT_VERSION, find_converter
from drafters.errors import TracedraftError

DSPARK_ARCHITECTURES = ("Qwen3DSparkModel", "DSparkDraftModel")

_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def read_gguf_metadata(path: str | Path, max_array: int = 4096) -> dict[str, Any]:
    """Metadata key/values of a GGUF file (v2/v3 header, little-endian) plus "__tensors__": tensor names.

    A small stdlib reader (the ``gguf`` package's reader decodes every token string into numpy objects,
    seconds per call on a 49k vocabulary). Arrays longer than ``max_array`` (token lists, merges, scores)
    are skipped and read as None. Raises TracedraftError(bad_gguf) for a file that is not GGUF."""
    import struct

    def rd(f, fmt):
        n = struct.calcsize(fmt)
        b = f.read(n)
        if len(b) != n:
            raise TracedraftError("bad_gguf", "truncated GGUF header", str(path))
        return struct.unpack(fmt, b)[0]

    def rstr(f):
        return f.read(rd(f, "<Q")).decode("utf-8", errors="replace")

    def value(f, t, keep=True):
        if t in _GGUF_SCALARS:
            return rd(f, _GGUF_SCALARS[t])
        if t == _GGUF_STRING:
            return rstr(f)
        if t == _GGUF_ARRAY:
            et, n = rd(f, "<I"), rd(f, "<Q")
            keep = keep and n <= max_array
            if et in _GGUF_SCALARS and not keep:
                f.seek(n * struct.calcsize(_GGUF_SCALARS[et]), 1)
                return None
            items = [value(f, et, keep) for _ in range(n)]
            return items if keep else None
        raise TracedraftError("bad_gguf", f"unknown GGUF value type {t}", str(path))

    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise TracedraftError("bad_gguf", "not a GGUF file (bad magic)", str(path))
        version = rd(f, "<I")
        n_tensors, n_kv = rd(f, "<Q"), rd(f, "<Q")
        out: dict[str, Any] = {"GGUF.version": version}
        for _ in range(n_kv):
            key = rstr(f)
            out[key] = value(f, rd(f, "<I"))
        names = []
        for _ in range(n_tensors):
            names.append(rstr(f))
            f.seek(8 * rd(f, "<I") + 4 + 8, 1)  # dims, ggml type, data offset
        out["__tensors__"] = names
    return out


def _check_export_inputs(checkpoint_dir: Path, target_dir: Path) -> dict:
    where = str(checkpoint_dir / "config.json")
    try:
        cfg = json.loads((checkpoint_dir / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise TracedraftError("gguf_export_bad_input", f"cannot read the drafter config: {e}", where) from e
    if not (checkpoint_dir / "model.safetensors").is_file() and not list(checkpoint_dir.glob("*.safetensors")):
        raise TracedraftError("gguf_export_bad_input", "no safetensors weights in the checkpoint directory",
                              str(checkpoint_dir))
    archs = cfg.get("architectures") or []
    if not any(a in DSPARK_ARCHITECTURES for a in archs):
        raise TracedraftError("gguf_export_bad_input", f"architectures {archs} is not a DeepSpec-native DSpark "
                              f"checkpoint (expected {DSPARK_ARCHITECTURES[0]})", where + ":architectures")
    if "block_size" not in cfg:
        # The converter would silently write block size 16 (docs/serving.md 3).
        raise TracedraftError("gguf_export_bad_input", "config.json has no block_size: the converter would "
                              "silently use 16", where + ":block_size")
    head = cfg.get("markov_head_type", "vanilla")
    if head != "vanilla":
        raise TracedraftError("gguf_export_unsupported", f"markov_head_type {head!r}: llama.cpp loads only "
                              "'vanilla' Markov heads; retrain with markov_head_type='vanilla'",
                              where + ":markov_head_type")
    if not (target_dir / "config.json").is_file():
        raise TracedraftError("gguf_export_bad_input", "the target directory has no config.json (it must be a "
                              "transformers directory with config and tokenizer, e.g. drafters.target."
                              "convert_gguf(...) for a GGUF target)", str(target_dir))
    if not any((target_dir / f).is_file() for f in ("tokenizer.json", "tokenizer.model")):
        raise TracedraftError("gguf_export_bad_input", "the target directory has no tokenizer.json or "
                              "tokenizer.model", str(target_dir))
    tcfg = json.loads((target_dir / "config.json").read_text())
    tcfg = {**tcfg, **(tcfg.get("text_config") or {})}
    for key in ("vocab_size", "hidden_size"):
        if key in tcfg and cfg.get(key) != tcfg[key]:
            raise TracedraftError("gguf_export_bad_input", f"drafter {key} {cfg.get(key)} != target {key} "
                                  f"{tcfg[key]}: wrong target directory", where + f":{key}")
    return cfg


def export_gguf(checkpoint_dir: str | Path, target_dir: str | Path, out_path: str | Path, *,
                version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None, outtype: str = "f32",
                python: str = sys.executable, timeout: float = 1800.0) -> Path:
    """Convert a DeepSpec-native DSpark checkpoint (docs/serving.md 2) to a llama.cpp draft GGUF.

    Runs the vendored ``convert_hf_to_gguf.py CHECKPOINT --target-model-dir TARGET --outtype OUTTYPE`` of the
    installed llama.cpp ``version`` (``build.install_llamacpp``). target_dir: a transformers
    directory of the target with config and tokenizer (for a GGUF target, ``drafters.target_cache.convert_gguf``'s
    output); the converter takes the vocabulary from it, and the engine takes embeddings (mask token row
    included) and LM head from the target at run time. The converter shifts ``target_layer_ids`` by one
    itself (our ids are layer outputs, llama.cpp's are layer inputs).

    Checked before: config readable, DSpark architecture, ``block_size`` present (else the converter silently
    uses 16), ``markov_head_type`` vanilla, vocab and hidden size equal to the target's, ``sentencepiece``
    importable. Checked after, in the GGUF: ``dflash.block_size`` = block_size, ``dflash.target_layers`` =
    ids + 1, ``tokenizer.ggml.mask_token_id`` = mask_token_id, the Markov tensors present, confidence head
    flag as configured. The file is written under a temporary name and renamed. Returns ``out_path``.
    Raises TracedraftError: gguf_export_bad_input, gguf_export_unsupported (the converter or we reject the
    checkpoint, e.g. a non-vanilla Markov head), gguf_export_failed (converter error, with its output tail),
    gguf_export_mismatch (the GGUF does not say what the checkpoint says), llamacpp_not_installed."""
    checkpoint_dir, target_dir, out_path = Path(checkpoint_dir), Path(target_dir), Path(out_path)
    cfg = _check_export_inputs(checkpoint_dir, target_dir)
    if python == sys.executable and importlib.util.find_spec("sentencepiece") is None:
        raise TracedraftError("gguf_export_bad_input", "the GGUF converter needs the package sentencepiece "
                              "(a tracedraft dependency): pip install sentencepiece", "sentencepiece")
    conv = find_converter(version, cache_dir)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp-{os.getpid()}")
    argv = [python, str(conv), str(checkpoint_dir), "--outfile", str(tmp), "--outtype", outtype,
            "--target-model-dir", str(target_dir)]
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}  # use the vendored gguf-py
    try:
        p = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        tmp.unlink(missing_ok=True)
        raise TracedraftError("gguf_export_failed", f"the converter ran past {timeout:g} s", str(checkpoint_dir)) from e
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        tail = (p.stdout + p.stderr)[-2500:]
        code = "gguf_export_unsupported" if re.search(r"unsupported|not supported", tail, re.IGNORECASE) else "gguf_export_failed"
        raise TracedraftError(code, f"convert_hf_to_gguf.py rejected the checkpoint (exit {p.returncode}):\n{tail}",
                              str(checkpoint_dir))
    try:
        meta = read_gguf_metadata(tmp)
        _check_exported(meta, cfg, str(out_path))
    except Exception:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out_path)
    return out_path


def _check_exported(meta: Mapping[str, Any], cfg: Mapping[str, Any], where: str) -> None:
    arch = meta.get("general.architecture")
    problems = []
    if meta.get(f"{arch}.block_size") != cfg["block_size"]:
        problems.append(f"{arch}.block_size = {meta.get(f'{arch}.block_size')} (config block_size {cfg['block_size']})")
    ids = cfg.get("target_layer_ids")
    if ids is not None and list(meta.get(f"{arch}.target_layers") or []) != [i + 1 for i in ids]:
        problems.append(f"{arch}.target_layers = {meta.get(f'{arch}.target_layers')} (expected target_layer_ids + 1 "
                        f"= {[i + 1 for i in ids]})")
    if cfg.get("mask_token_id") is not None and meta.get("tokenizer.ggml.mask_token_id") != cfg["mask_token_id"]:
        problems.append(f"tokenizer.ggml.mask_token_id = {meta.get('tokenizer.ggml.mask_token_id')} "
                        f"(config mask_token_id {cfg['mask_token_id']})")
    names = set(meta.get("__tensors__") or [])
    for t in ("markov_w1.weight", "markov_w2.weight"):
        if not any(n.endswith(t) for n in names):
            problems.append(f"no tensor *{t}: the Markov head was not exported")
    if meta.get(f"{arch}.sample_from_anchor") is False:
        problems.append("sample_from_anchor is false (our layout is anchor-first)")
    n_layers = cfg.get("num_hidden_layers")
    if n_layers is not None and meta.get(f"{arch}.block_count") not in (None, n_layers):
        problems.append(f"{arch}.block_count = {meta.get(f'{arch}.block_count')} (num_hidden_layers {n_layers})")
    if problems:
        raise TracedraftError("gguf_export_mismatch", "the exported GGUF does not match the checkpoint: "
                              + "; ".join(problems), where)


def export_target_gguf(target_dir: str | Path, out_path: str | Path, *, version: str = DEFAULT_VERSION,
                       cache_dir: str | Path | None = None, outtype: str = "f32", python: str = sys.executable,
                       timeout: float = 3600.0) -> Path:
    """Convert a transformers target directory to GGUF with the vendored converter (for targets that are not
    already GGUF, or to serve exactly the fp32 weights the hf engine uses). Idempotent: an existing
    ``out_path`` is returned as is. Raises TracedraftError(gguf_export_failed)."""
    out_path = Path(out_path)
    if out_path.is_file():
        return out_path
    conv = find_converter(version, cache_dir)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp-{os.getpid()}")
    p = subprocess.run([python, str(conv), str(target_dir), "--outfile", str(tmp), "--outtype", outtype],
                       check=False, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise TracedraftError("gguf_export_failed", f"converting the target failed (exit {p.returncode}):\n"
                              f"{(p.stdout + p.stderr)[-2500:]}", str(target_dir))
    tmp.replace(out_path)
    return out_path


# ---------------------------------------------------------------------------------------------------------
# command line (the service CLI runs this as a subprocess: service never imports drafters beyond traces)
# ---------------------------------------------------------------------------------------------------------

def resolve_target_files(spec: str, cache_dir: str | Path | None = None) -> tuple[Path, Path | None]:
    """(transformers target directory, target GGUF or None) for a target spec as ``load_target`` takes it:
    "smollm2-135m-instruct" or a .gguf file (converted once by ``drafters.target_cache.convert_gguf``; the GGUF
    itself is what llama-server serves), a local model directory, or a HF id in the local cache (offline).
    Raises TargetLoadError (drafters.target) when not found."""
    from drafters.target_cache import (
        AGENT_SPEC,
        SMOLLM2_SPEC,
        TargetLoadError,
        convert_gguf,
        smollm2_gguf_path,
    )

    if spec == AGENT_SPEC:  # a merged transformers directory: export_target_gguf converts it
        from drafters.agent_target import agent_target_dir

        return agent_target_dir(cache_dir), None

    gguf = smollm2_gguf_path() if spec == SMOLLM2_SPEC else Path(spec).expanduser() if spec.lower().endswith(
        ".gguf") else None
    if gguf is not None:
        if not gguf.is_file():
            raise TargetLoadError("target_not_found", f"GGUF file {gguf} does not exist", str(gguf))
        return convert_gguf(gguf, cache_dir), gguf
    path = Path(spec).expanduser()
    if path.is_dir():
        return path, None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(spec, local_files_only=True)), None
    except Exception as e:
        raise TargetLoadError("target_not_found", f"target '{spec}' is not a GGUF, a directory or a cached HF id "
                              f"({type(e).__name__})", spec) from e


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m drafters.engines.llamacpp export CHECKPOINT_DIR --target SPEC --out DRAFT.gguf`` (exit 0,
    prints JSON {"ok", "gguf", "bytes", "block_size", "target_gguf"}); exit 1 with {"ok": false, "code",
    "message", "where"} on a TracedraftError."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m drafters.engines.llamacpp")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export", help="convert a DeepSpec-native DSpark checkpoint to a llama.cpp draft GGUF")
    ex.add_argument("checkpoint")
    ex.add_argument("--target", required=True, help="target spec (smollm2-135m-instruct, .gguf, model dir, HF id)")
    ex.add_argument("--out", required=True)
    ex.add_argument("--outtype", default="f32", choices=["f32", "f16", "bf16", "q8_0"])
    ex.add_argument("--version", default=DEFAULT_VERSION)
    ex.add_argument("--llamacpp-cache-dir", default=None)
    ex.add_argument("--target-cache-dir", default=None)
    a = ap.parse_args(argv)
    try:
        target_dir, target_gguf = resolve_target_files(a.target, a.target_cache_dir)
        out = export_gguf(a.checkpoint, target_dir, a.out, version=a.version, cache_dir=a.llamacpp_cache_dir,
                          outtype=a.outtype)
        meta = read_gguf_metadata(out)
        arch = meta.get("general.architecture")
        print(json.dumps({"ok": True, "gguf": str(out), "bytes": out.stat().st_size,
                          "block_size": meta.get(f"{arch}.block_size"), "target_dir": str(target_dir),
                          "target_gguf": None if target_gguf is None else str(target_gguf),
                          "llamacpp_version": a.version}))
    except TracedraftError as e:
        print(json.dumps({"ok": False, "code": e.code, "message": e.message, "where": e.where}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
