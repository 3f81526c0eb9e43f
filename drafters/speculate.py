"""Speculative decoding for any proposer (greedy and exact rejection sampling).

One readable file: the Proposer interface and the decoding loop (docs/dspark.md 5.1) that drives a frozen target
and any proposer (a DSpark drafter, the n-gram baseline, or none). The what-if functions for confidence
truncation and the prefix scheduler are in drafters/whatif.py.
Accepted length (tau) is NOT computed here: drafters/evaluate/metrics.py is the one place that does it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from drafters.errors import TracedraftError


@dataclass
class Proposal:
    """A drafted block.

    tokens: LongTensor [n], the drafted tokens (n <= block size; n = 0 means "no draft this round").
    probs: FloatTensor [n, V] fp32, the draft distribution each token was sampled from; None for a
        deterministic proposer (treated as one-hot on ``tokens``).
    confidences: FloatTensor [n] in [0, 1], the confidence head's per-position scores, or None.
    """

    tokens: torch.Tensor
    probs: torch.Tensor | None = None
    confidences: torch.Tensor | None = None


class Proposer(Protocol):
    """What the speculative loop needs from a drafter or a model-free baseline."""

    block_size: int
    layer_ids: list[int] | None  # target layers whose outputs the proposer reads as features, or None

    def start(self, prompt_ids: torch.Tensor, features: torch.Tensor | None) -> None:
        """Begin a request. prompt_ids: LongTensor [T]; features: FloatTensor [T, m*d] or None."""

    def propose(self, anchor: int, temperature: float, generator: torch.Generator | None) -> Proposal:
        """Draft up to block_size tokens following ``anchor`` (the last committed token)."""

    def commit(self, tokens: torch.Tensor, features: torch.Tensor | None) -> None:
        """Append committed context. tokens: LongTensor [a+1] = anchor then the accepted drafts;
        features: FloatTensor [a+1, m*d] (the target's features at those positions) or None."""


def prepare_request(proposer: Proposer | None, request: object) -> None:
    """Hand ``request`` (the RenderedPrompt-like record of the call about to be decoded: call_id,
    prompt_ids, tools) to a proposer that reads the request itself, before ``start``: one with a
    ``prepare(request)`` method (the tool-schema proposer reads the request's tool schemas, as a serving
    engine's would). Others, and None, are left alone."""
    prepare = getattr(proposer, "prepare", None)
    if callable(prepare):
        prepare(request)


# ---------------------------------------------------------------------------------------------------------
# The loop (docs/dspark.md 5.1). One function for every proposer; proposer=None is plain decoding through the
# same code path (a round with zero drafts), so speculative-vs-plain timings compare like for like.
# ---------------------------------------------------------------------------------------------------------

#: The residual max(0, p_t - p_d) is renormalised unless its mass is at most this; then p_t is used
#: (docs/dspark.md 5.1 step 4: "falls back to p_t if the residual mass <= 1e-8").
RESIDUAL_EPS = 1e-8
#: Below this temperature sampling is greedy (docs/dspark.md 5.1 step 3: "< 1e-5 ... one-hot argmax").
GREEDY_TEMPERATURE = 1e-5


@dataclass
class Round:
    """One verification round.

    proposed: n, drafts verified by the target this round (after any truncation), 0 for plain decoding.
    accepted: a, leading drafts the target accepted (0 <= a <= n).
    confidences: the proposer's per-slot confidences for the n verified drafts (conditional sigmoid scores,
        docs/dspark.md 1.6), or None.
    positions: for each token this round committed, its position in the block: accepted draft i -> i
        (1-based), the target's corrected/bonus token -> a + 1. Normally [1..a+1]; [1..a] when an accepted
        stop token ended generation (no bonus, docs/dspark.md 5.1 step 6); shorter when a stop string or the
        token budget cut the round.
    eos: an accepted draft or the round's own token was a stop token (generation ended in this round).
    drafted: drafts the proposer offered before confidence truncation (>= proposed).
    """

    proposed: int
    accepted: int
    confidences: list[float] | None = None
    positions: list[int] = field(default_factory=list)
    eos: bool = False
    drafted: int = 0

    @property
    def committed(self) -> int:
        """Tokens this round added to the output (its acceptance length, docs/dspark.md 5.2)."""
        return len(self.positions)

    def to_dict(self) -> dict:
        return {"n": self.proposed, "a": self.accepted, "len": self.committed, "eos": self.eos,
                "drafted": self.drafted, "conf": self.confidences}


@dataclass
class Generation:
    """The result of one speculative (or plain) generation.

    tokens: generated token ids (stop token included when generation ended on one; no prompt).
    rounds: the verification rounds, in order. The first token comes from the prefill, outside any round,
        so len(tokens) == 1 + sum(r.committed for r in rounds) (or 0 when max_new_tokens == 0).
    positions: per generated token, its position in its round's block (0 for the prefill token).
    round_index: per generated token, the index into ``rounds`` of the round that committed it (-1: prefill).
    margins: per generated token, target logit top-1 minus top-2 at the row that produced it (fp32); a tiny
        margin marks a numerical near-tie where fp32 reduction order may flip the argmax.
    finish_reason: "stop" (stop token), "stop_string", "length" (max_new_tokens reached).
    prefill_s: wall-clock seconds of the prompt's prefill (inside target_s and total_s); the decoding phase
        that speed-ups compare is total_s - prefill_s (docs/dspark.md 5.5).
    target_s / drafter_s / overhead_s / total_s: wall-clock seconds in target forwards (prefill included),
        in proposer calls (start/propose/commit), and the rest of the loop (acceptance, sampling, cache
        cropping, bookkeeping); total_s = their sum.
    """

    tokens: list[int]
    rounds: list[Round]
    positions: list[int]
    round_index: list[int]
    margins: list[float]
    prompt_len: int
    finish_reason: str
    target_s: float = 0.0
    drafter_s: float = 0.0
    overhead_s: float = 0.0
    total_s: float = 0.0
    stop_string: str | None = None
    prefill_s: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per wall-clock second of the whole call (prefill included)."""
        return len(self.tokens) / self.total_s if self.total_s > 0 else 0.0


class _Clock:
    """Splits wall-clock time into target / drafter / loop buckets. On CUDA each stamp synchronises so a
    kernel's time lands in the bucket that launched it (otherwise the next .item() would absorb it)."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.target = 0.0
        self.drafter = 0.0
        self.charged = 0.0  # work done before this clock started and charged to it (a shared prefill)
        self.t0 = self._now()

    def _now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def start(self) -> float:
        return self._now()

    def add_target(self, t: float) -> None:
        self.target += self._now() - t

    def add_drafter(self, t: float) -> None:
        self.drafter += self._now() - t

    def total(self) -> float:
        return self._now() - self.t0 + self.charged


@dataclass
class Prefill:
    """A prompt's prefill, computed once and shared by every proposer replaying it (evaluation).

    cache: the target's KV cache after the prompt (copied, never mutated, by each user); last_logits:
    FloatTensor [1, V] fp32 at the last prompt position; aux: FloatTensor [1, T, m*d] features of
    ``layer_ids`` or None; seconds: the wall time the prefill took, charged to every generation that uses
    it, so tokens/s keep their meaning.
    """

    cache: object
    last_logits: torch.Tensor
    aux: torch.Tensor | None
    layer_ids: list[int] | None
    seconds: float


def prefill(target, prompt_ids, layer_ids: Sequence[int] | None = None) -> Prefill:
    """Run the target over the prompt once: KV cache, last-position logits and ``layer_ids`` features."""
    ids = torch.as_tensor(prompt_ids, dtype=torch.long).reshape(-1)
    device = torch.device(getattr(target, "device", "cpu"))
    clock = _Clock(device)
    layer_ids = list(layer_ids) if layer_ids else None
    with torch.inference_mode():
        t = clock.start()
        step = target.step(ids.to(device).unsqueeze(0), None, layer_ids, logits_to_keep=1)
        clock.add_target(t)
    return Prefill(step.past_key_values, step.logits[0, -1:].float(), step.aux, layer_ids, clock.target)


def crop_cache(cache, keep: int) -> None:
    """Crop a transformers cache in place to its first ``keep`` positions.

    transformers >= 5 takes ``crop(-tokens_to_remove)``; 4.x took ``crop(max_length)``. Both are handled.
    Raises TracedraftError(code="cache_crop") if the cache is shorter than ``keep``.
    """
    length = int(cache.get_seq_length())
    if keep > length:
        raise TracedraftError("cache_crop", f"cannot crop a cache of {length} positions to {keep}", "cache")
    if keep == length:
        return
    try:
        cache.crop(keep - length)  # negative: remove that many tokens (transformers >= 5)
    except ValueError:
        cache.crop(keep)  # legacy absolute length
    if int(cache.get_seq_length()) != keep:  # a legacy cache read the negative value as a length
        raise TracedraftError("cache_crop", f"cache crop left {cache.get_seq_length()} != {keep}", "cache")


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) in fp32. logits [..., V] -> probs [..., V]."""
    return torch.softmax(logits.float() / temperature, dim=-1)


def _margins(logits: torch.Tensor) -> list[float]:
    """Top-1 minus top-2 logit per row. logits [r, V] fp32 -> r floats."""
    if logits.shape[-1] < 2:
        return [float("inf")] * logits.shape[0]
    top = torch.topk(logits.float(), 2, dim=-1).values
    return (top[:, 0] - top[:, 1]).tolist()


def verify_greedy(drafts: torch.Tensor, logits: torch.Tensor) -> tuple[int, int]:
    """Greedy verification: accept while the draft equals the target's argmax (docs/dspark.md 5.1 step 4).

    drafts: LongTensor [n]; logits: [n+1, V] target logits for [anchor, d1..dn] (row i predicts the token
    after input i). Returns (a, next_token): a = leading matches, next_token = target argmax at row a
    (the corrected token, or the bonus token when a == n).
    """
    target_tok = logits.argmax(dim=-1)  # [n+1]
    n = drafts.shape[0]
    if n == 0:
        return 0, int(target_tok[0])
    match = (drafts == target_tok[:n]).to(torch.int64)
    a = int(match.cumprod(0).sum())
    return a, int(target_tok[a])


def verify_sampling(drafts: torch.Tensor, draft_probs: torch.Tensor | None, logits: torch.Tensor,
                    temperature: float, generator: torch.Generator | None) -> tuple[int, int]:
    """Exact speculative sampling (Leviathan et al. 2023; Chen et al. 2023; docs/dspark.md 5.1 step 4).

    drafts: LongTensor [n]; draft_probs: FloatTensor [n, V] (the distribution each draft was sampled from)
    or None for a deterministic proposer (one-hot on the draft); logits: [n+1, V] target logits.
    Position i is accepted with probability min(1, p_t(d_i) / p_d(d_i)) using one uniform per position;
    a = leading accepts. On a rejection the next token is sampled from norm(max(0, p_t - p_d)) at row a
    (p_t itself when that mass <= 1e-8); when all n are accepted, the bonus token is sampled from p_t at
    row n. All probabilities fp32. Returns (a, next_token). The output is distributed exactly as p_t.
    """
    p_t = _probs(logits, temperature)  # [n+1, V]
    n = drafts.shape[0]
    a = n
    if n > 0:
        idx = torch.arange(n, device=p_t.device)
        pt_d = p_t[idx, drafts]
        pd_d = draft_probs[idx, drafts].float() if draft_probs is not None else torch.ones_like(pt_d)
        u = torch.rand(n, generator=generator, device=p_t.device)
        # u < p_t/p_d written without division: p_d == 0 for a drafted token cannot happen for a sound
        # proposer, and if it does the draft is rejected (u * 0 < p_t only if p_t > 0, which is correct).
        accept = (u * pd_d < pt_d).to(torch.int64)
        a = int(accept.cumprod(0).sum())
    if a < n:
        if draft_probs is not None:
            residual = (p_t[a] - draft_probs[a].float()).clamp_min(0.0)
        else:
            residual = p_t[a].clone()
            residual[drafts[a]] = 0.0  # max(0, p_t - onehot(d)) for a deterministic draft
        mass = float(residual.sum())
        dist = residual / mass if mass > RESIDUAL_EPS else p_t[a]
    else:
        dist = p_t[n]
    return a, int(torch.multinomial(dist, 1, generator=generator))


def _stop_string_cut(tokenizer, tokens: list[int], stop_strings: Sequence[str], start: int) -> tuple[int, str] | None:
    """If a stop string is completed by a token at index >= start, return (length of the shortest prefix
    of ``tokens`` whose text contains it, the stop string); else None. Only a tail window is decoded (stop
    strings are short; one completed earlier would have ended generation already)."""
    w = max(start - 16, 0)
    text = tokenizer.decode(tokens[w:], skip_special_tokens=False)
    if not any(s in text for s in stop_strings):
        return None
    for cut in range(max(start, 0) + 1, len(tokens) + 1):
        prefix = tokenizer.decode(tokens[w:cut], skip_special_tokens=False)
        for s in stop_strings:
            if s in prefix:
                return cut, s
    return None


def speculative_generate(target, proposer: Proposer | None, prompt_ids, max_new_tokens: int,
                         temperature: float = 0.0, seed: int = 0, stop_token_ids: Sequence[int] = (),
                         stop_strings: Sequence[str] = (), tokenizer=None,
                         confidence_threshold: float = 0.0, shared_prefill: Prefill | None = None) -> Generation:
    """Generate up to ``max_new_tokens`` tokens with speculative decoding (docs/dspark.md 5.1), batch size 1.

    target: drafters.target.Target (uses ``step(input_ids [1,t], past_key_values, layer_ids) ->
        TargetStep(logits [1,t,V] fp32, aux [1,t,m*d] | None, past_key_values)`` and ``device``).
    proposer: any Proposer, or None for plain decoding (one target forward per token, same loop).
    prompt_ids: LongTensor [T] or list[int], the exactly rendered prompt (T >= 1).
    temperature: 0 (or < 1e-5) greedy, else exact rejection sampling at that temperature.
    seed: seeds the verification sampler (and, offset, the proposer's sampler).
    stop_token_ids: an accepted or sampled stop token ends generation and is kept in ``tokens``.
    stop_strings: generation ends at the first token whose decoded text completes one (needs tokenizer,
        taken from ``target.tokenizer`` when not given); the tokens after it are dropped.
    confidence_threshold: static truncation (docs/dspark.md 5.3): the proposal is cut at the first slot whose
        confidence < threshold (0 verifies everything; proposals without confidences are never cut).
    shared_prefill: ``prefill(target, prompt_ids, layer_ids)`` computed once for several generations (its
        layer ids must cover the proposer's); its cache is copied and its time charged to this generation.

    Loop: prefill (with the proposer's feature layers) -> first token from the target -> rounds of
    propose -> verify [anchor, d1..dn] in one target forward -> accept -> crop the target cache to the
    committed prefix -> commit anchor + accepted drafts (and their target features) to the proposer.
    Raises TracedraftError(code="bad_input") for an empty prompt or a negative budget.
    """
    ids = torch.as_tensor(prompt_ids, dtype=torch.long).reshape(-1)
    tokenizer = _check_inputs(target, ids, max_new_tokens, stop_strings, tokenizer)
    device = torch.device(getattr(target, "device", "cpu"))
    greedy = temperature < GREEDY_TEMPERATURE
    gen = torch.Generator(device=device).manual_seed(seed)
    draft_gen = torch.Generator(device=device).manual_seed(seed + 0x5EED)  # independent draft stream
    stops = {int(s) for s in stop_token_ids}
    layer_ids = list(proposer.layer_ids) if proposer is not None and proposer.layer_ids else None
    block_size = int(proposer.block_size) if proposer is not None else 0

    clock = _Clock(device)
    out = Generation([], [], [], [], [], prompt_len=int(ids.numel()), finish_reason="length")
    if max_new_tokens == 0:
        return out

    with torch.inference_mode():
        pre, cache, aux = _prompt_state(target, ids, layer_ids, shared_prefill, clock)
        cache_len = int(ids.numel())
        last = pre.last_logits  # [1, V]
        if greedy:
            anchor = int(last[0].argmax())
        else:
            anchor = int(torch.multinomial(_probs(last[0], temperature), 1, generator=gen))
        out.tokens.append(anchor)
        out.positions.append(0)
        out.round_index.append(-1)
        out.margins.extend(_margins(last))
        if proposer is not None:
            t = clock.start()
            proposer.start(ids.to(device), aux[0] if aux is not None and layer_ids else None)
            clock.add_drafter(t)
        finished = anchor in stops
        if finished:
            out.finish_reason = "stop"

        while not finished and len(out.tokens) < max_new_tokens:
            # Never verify more drafts than the budget can commit (a + 1 <= remaining): an end effect.
            budget = min(block_size, max_new_tokens - len(out.tokens) - 1)
            if proposer is not None and block_size > 0:
                draft = _draft(proposer, anchor, temperature, draft_gen, budget, confidence_threshold, greedy,
                               clock, device)
            else:
                draft = _Draft(ids.new_empty(0).to(device), None, None, 0)
            verify_in = torch.cat([torch.tensor([anchor], device=device), draft.tokens]).unsqueeze(0)
            t = clock.start()
            step = target.step(verify_in, cache, layer_ids)
            clock.add_target(t)
            cache = step.past_key_values
            logits = step.logits[0].float()  # [n+1, V]
            if greedy:
                a, nxt = verify_greedy(draft.tokens, logits)
            else:
                a, nxt = verify_sampling(draft.tokens, draft.probs, logits, temperature, gen)
            start = len(out.tokens)
            rnd = _commit_round(out, draft, a, nxt, logits, stops)
            if rnd.eos:
                out.finish_reason = "stop"
                finished = True
            if stop_strings and _trim_stop_string(out, rnd, tokenizer, stop_strings, start):
                finished = True
            if finished:
                break
            # Keep anchor + accepted drafts in the target cache; the next anchor (nxt) is not in it yet.
            cache_len += a + 1
            crop_cache(cache, cache_len)
            anchor = nxt
            if proposer is not None:
                feats = step.aux[0, : a + 1] if step.aux is not None else None
                t = clock.start()
                proposer.commit(verify_in[0, : a + 1], feats)
                clock.add_drafter(t)

    out.total_s = clock.total()
    out.target_s, out.drafter_s, out.prefill_s = clock.target, clock.drafter, pre.seconds
    out.overhead_s = max(out.total_s - out.target_s - out.drafter_s, 0.0)
    return out


def _check_inputs(target, ids: torch.Tensor, max_new_tokens: int, stop_strings: Sequence[str], tokenizer):
    """The tokenizer stop strings are decoded with (``target.tokenizer`` when none is given). Raises
    TracedraftError(code="bad_input") for an empty prompt, a negative budget or stop strings without one."""
    if ids.numel() == 0:
        raise TracedraftError("bad_input", "empty prompt", "prompt_ids")
    if max_new_tokens < 0:
        raise TracedraftError("bad_input", f"max_new_tokens must be >= 0, got {max_new_tokens}", "max_new_tokens")
    if stop_strings and tokenizer is None:
        tokenizer = getattr(target, "tokenizer", None)
        if tokenizer is None:
            raise TracedraftError("bad_input", "stop_strings need a tokenizer", "tokenizer")
    return tokenizer


def _prompt_state(target, ids: torch.Tensor, layer_ids: list[int] | None, shared_prefill: Prefill | None,
                  clock: _Clock) -> tuple[Prefill, object, torch.Tensor | None]:
    """(prefill, KV cache to extend, features [1, T, m*d] of ``layer_ids`` in that order or None): a fresh
    prefill, or a shared one whose cache is copied and whose time is charged to this generation.
    Raises TracedraftError(code="bad_input") when a shared prefill lacks the proposer's layers."""
    if shared_prefill is None:
        pre = prefill(target, ids, layer_ids)
    else:
        pre = shared_prefill
        if layer_ids and not set(layer_ids) <= set(pre.layer_ids or ()):
            raise TracedraftError("bad_input", f"shared prefill has features of layers {pre.layer_ids}, "
                                  f"the proposer needs {layer_ids}", "shared_prefill")
    clock.target += pre.seconds
    if shared_prefill is not None:  # it ran before this generation's clock started: charge it to the total too
        clock.charged += pre.seconds
    cache = copy.deepcopy(pre.cache) if shared_prefill is not None else pre.cache
    aux = pre.aux
    if aux is not None and layer_ids and list(pre.layer_ids) != layer_ids:
        d = aux.shape[-1] // len(pre.layer_ids)
        aux = torch.cat([aux[..., pre.layer_ids.index(i) * d:(pre.layer_ids.index(i) + 1) * d] for i in layer_ids], -1)
    return pre, cache, aux


@dataclass
class _Draft:
    """This round's drafts as verified: tokens LongTensor [n]; probs FloatTensor [n, V] (sampling only, else
    None); confidences (n floats) or None; drafted: how many the proposer offered before any cut."""

    tokens: torch.Tensor
    probs: torch.Tensor | None
    confidences: list[float] | None
    drafted: int


def _draft(proposer: Proposer, anchor: int, temperature: float, draft_gen: torch.Generator, budget: int,
           confidence_threshold: float, greedy: bool, clock: _Clock, device: torch.device) -> _Draft:
    """Ask the proposer for a block after ``anchor`` and cut it to ``budget`` drafts, then at the first slot
    whose confidence is below ``confidence_threshold`` (static truncation, docs/dspark.md 5.3)."""
    t = clock.start()
    prop = proposer.propose(anchor, temperature, draft_gen)
    clock.add_drafter(t)
    drafted = int(prop.tokens.numel())
    n = min(drafted, budget)
    if confidence_threshold > 0 and prop.confidences is not None and n > 0:
        low = (prop.confidences[:n] < confidence_threshold).nonzero()
        if low.numel():
            n = int(low[0, 0])
    probs = prop.probs[:n] if prop.probs is not None and not greedy else None
    conf = prop.confidences[:n].float().tolist() if prop.confidences is not None else None
    return _Draft(prop.tokens[:n].to(device=device, dtype=torch.long), probs, conf, drafted)


def _commit_round(out: Generation, draft: _Draft, a: int, nxt: int, logits: torch.Tensor, stops: set[int]) -> Round:
    """Append the round's committed tokens (the ``a`` accepted drafts, then ``nxt``) to ``out`` and record
    the Round. An accepted stop token ends generation there: that round counts a, no bonus (docs/dspark.md 5.1
    step 6). ``logits`` [n+1, V] give each committed token's margin."""
    new = draft.tokens[:a].tolist() + [nxt]
    eos = False
    for i, tok in enumerate(new):
        if tok in stops:
            new = new[: i + 1]
            eos = True
            a = min(a, i + 1)  # drafts past an accepted stop token are void, not accepted
            break
    rnd = Round(proposed=int(draft.tokens.numel()), accepted=a, confidences=draft.confidences,
                positions=list(range(1, len(new) + 1)), eos=eos, drafted=draft.drafted)
    out.tokens.extend(new)
    out.positions.extend(rnd.positions)
    out.round_index.extend([len(out.rounds)] * len(new))
    out.margins.extend(_margins(logits[: len(new)]))
    out.rounds.append(rnd)
    return rnd


def _trim_stop_string(out: Generation, rnd: Round, tokenizer, stop_strings: Sequence[str], start: int) -> bool:
    """If a token from index ``start`` on completes a stop string, drop the tokens after it (from ``out``
    and the round's positions), record the stop string and return True."""
    cut = _stop_string_cut(tokenizer, out.tokens, stop_strings, start)
    if cut is None:
        return False
    keep, s = cut
    drop = len(out.tokens) - keep
    if drop:
        del out.tokens[keep:], out.positions[keep:], out.round_index[keep:], out.margins[keep:]
        rnd.positions = rnd.positions[: len(rnd.positions) - drop]
    out.finish_reason, out.stop_string = "stop_string", s
    return True


def plain_generate(target, prompt_ids, max_new_tokens: int, temperature: float = 0.0, seed: int = 0,
                   stop_token_ids: Sequence[int] = (), stop_strings: Sequence[str] = (),
                   tokenizer=None) -> Generation:
    """Plain autoregressive decoding: ``speculative_generate`` with no proposer (one token per round), so
    speculative-vs-plain speed compares the same loop, cache handling and sampler."""
    return speculative_generate(target, None, prompt_ids, max_new_tokens, temperature=temperature, seed=seed,
                                stop_token_ids=stop_token_ids, stop_strings=stop_strings, tokenizer=tokenizer)
