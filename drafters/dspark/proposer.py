"""DSparkProposer: a DSparkDrafter behind the `drafters.speculate.Proposer` protocol (docs/dspark.md 5.1).

Per request the proposer keeps, for every draft layer, the K/V of the *context* only (positions
0..start-1, projected from the target's features). Each `propose` runs the not-yet-cached context and the
block [anchor, MASK x (g-1)] at positions start..start+g-1 in one drafter call, keeps the context K/V, drops
the block's K/V (the "crop back to start" of docs/dspark.md 5.1 step 2), then samples the g drafts one after
another through the Markov head (docs/dspark.md 1.5), in fp32.

Drafting cost (docs/dspark.md 5.5). The base logits U = lm_head(h) do not depend on the drafts, so the
whole block's U is one [g, V] LM-head pass. The only sequential part is the Markov bias B_k = W2 z_k, whose
z_k depends on the previous draft; it is evaluated on ``markov_candidates`` tokens only, the top-K of U_k:
- greedy (temperature < 1e-5): exact. The argmax of U_k + B_k is searched among the candidates, and the
  bound |B_k[v]| <= ||W2[v]|| ||z_k|| (Cauchy-Schwarz) proves that no other token can beat it; where the
  bound cannot prove it, the full-vocabulary bias is computed. Drafts equal the full computation's (up to
  rounding at a near tie: fp32 summation order, or the bias's bf16 rounding in a bf16 drafter). ``probs``
  are ONE-HOT on the drafts, as DeepSpec's evaluator treats both draft and target at temperature 0
  (docs/dspark.md 5.1 step 3).
- sampling: the draft distribution is softmax((U_k + B_k) / temperature) restricted to the candidates
  (zero elsewhere) and the draft is sampled from exactly that, so ``probs`` is the distribution the draft
  came from and rejection sampling stays exact. ``markov_candidates=0`` samples from the full vocabulary.

A draft vocabulary (``draft_vocab``, FR-Spec arXiv 2502.14856; EAGLE-3's reduced draft vocabulary) restricts
the LM head and the Markov bias to a subset of token ids: the organization's frequent tokens
(``drafters.dspark.draft_vocab``), to which each request's own prompt tokens are added at ``start`` (agent
answers copy from their context). Drafts then come from that subset only; the target still verifies every
one, so output is unchanged and only tau can move (measured by the evaluation, docs/dspark.md 5.5).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from drafters.dspark.config import ConfigError
from drafters.dspark.model import DSparkDrafter
from drafters.speculate import Proposal

GREEDY_EPS = 1e-5


class DSparkProposer:
    """Proposer over a DSparkDrafter.

    Args:
        drafter: the drafter (put in eval mode; its device is used).
        confidence_threshold: 0 = always propose block_size tokens; t > 0 cuts the block at the first slot
            whose sigmoid(c_k) < t (per-slot conditional score, docs/dspark.md 5.3).
        markov_candidates: K, the top-K tokens of the base logits the Markov bias is evaluated on (module
            docstring); 0 = the full vocabulary every slot (the reference computation).
        draft_vocab: LongTensor [N] of token ids drafts may take (module docstring), or None for all V.
    Attributes: block_size (g), layer_ids (the target layers whose outputs ``features`` must hold),
        full_bias_slots / slots (greedy slots where the bound failed and the full bias was computed / all).
    Raises ConfigError(code="bad_config") for a negative K or a draft vocabulary id outside [0, V).
    """

    def __init__(self, drafter: DSparkDrafter, confidence_threshold: float = 0.0, markov_candidates: int = 64,
                 draft_vocab: Tensor | None = None):
        if markov_candidates < 0:
            raise ConfigError("bad_config", f"markov_candidates must be >= 0, got {markov_candidates}",
                              "markov_candidates")
        V = drafter.config.vocab_size
        if draft_vocab is not None and (draft_vocab.numel() == 0 or int(draft_vocab.min()) < 0
                                        or int(draft_vocab.max()) >= V):
            raise ConfigError("bad_config", f"draft_vocab must hold token ids in [0, {V})", "draft_vocab")
        self.drafter = drafter.eval()
        self.block_size = drafter.config.block_size
        self.layer_ids: list[int] | None = list(drafter.config.target_layer_ids)
        self.confidence_threshold = confidence_threshold
        self.markov_candidates = markov_candidates
        self._base_vocab = None if draft_vocab is None else torch.unique(draft_vocab.long().cpu())
        self._set_vocab(self._base_vocab)
        self.full_bias_slots = 0
        self.slots = 0
        self._cache: list[tuple[Tensor, Tensor]] | None = None
        self._pending: Tensor | None = None
        self._length = 0  # committed context length (cached + pending)

    def _set_vocab(self, vocab: Tensor | None) -> None:
        """Slice the LM head and W2 to ``vocab`` (sorted ids [N]) or take them whole (None). fp32 copies are
        made once here (none when already fp32 and whole): each round then only reads them."""
        d = self.drafter
        dev = self._device()
        self._vocab = None if vocab is None else vocab.to(dev)
        lm, w2 = d.lm_head.weight.detach(), d.markov_head.markov_w2.weight.detach()  # [V, d], [V, r]
        if self._vocab is not None:
            lm, w2 = lm[self._vocab], w2[self._vocab]
        self._lm_head = lm.float().contiguous()
        self._w2 = w2.contiguous()
        self._w2_norm = self._w2.float().norm(dim=-1)  # the Cauchy-Schwarz bound's row norms
        self._k = min(self.markov_candidates, self._lm_head.shape[0])

    @property
    def vocab_size(self) -> int:
        """N, the number of token ids drafts can take in the current request."""
        return int(self._lm_head.shape[0])

    @property
    def context_length(self) -> int:
        """Number of committed context positions; the next anchor sits at this position."""
        return self._length

    def _device(self) -> torch.device:
        return self.drafter.fc.weight.device

    def _append(self, features: Tensor | None, n: int, what: str) -> None:
        if features is None:
            raise ConfigError("missing_features", "a DSpark drafter needs the target's features", what)
        width = self.drafter.config.target_hidden_size
        if features.dim() != 2 or features.shape != (n, width):
            raise ConfigError("shape_mismatch", f"{what} must be [{n}, {width}], got {tuple(features.shape)}",
                              what)
        f = features.to(self._device())
        self._pending = f if self._pending is None else torch.cat([self._pending, f], 0)
        self._length += n

    def start(self, prompt_ids: Tensor, features: Tensor | None) -> None:
        """Begin a request. prompt_ids LongTensor [T]; features [T, m*d] (the prompt positions' target
        features). Raises ConfigError when features are missing or mis-shaped."""
        self._cache, self._pending, self._length = None, None, 0
        self._append(features, int(prompt_ids.shape[0]), "features")
        if self._base_vocab is not None:
            vocab = torch.unique(torch.cat([self._base_vocab, prompt_ids.long().cpu().reshape(-1)]))
            if self._vocab is None or vocab.numel() != self._vocab.numel() or not torch.equal(vocab, self._vocab.cpu()):
                self._set_vocab(vocab)

    def commit(self, tokens: Tensor, features: Tensor | None) -> None:
        """Append committed context: tokens LongTensor [a+1] (anchor then accepted drafts), features
        [a+1, m*d] the target's features at those positions."""
        self._append(features, int(tokens.shape[0]), "features")

    @torch.no_grad()
    def propose(self, anchor: int, temperature: float, generator: torch.Generator | None) -> Proposal:
        """Draft block_size tokens after ``anchor`` (at position context_length).

        Returns Proposal(tokens [n] long, probs [n, V] fp32 (one-hot when greedy), confidences [n] =
        sigmoid(c_k), or None without a confidence head); n < block_size only with a confidence threshold.
        """
        d = self.drafter
        h, self._cache = d.infer_block(int(anchor), self._length, self._pending, self._cache)
        self._pending = None
        base = F.linear(h.float(), self._lm_head)  # [g, N] fp32: U for every slot in one pass
        greedy = temperature < GREEDY_EPS
        prev = torch.tensor([int(anchor)], device=h.device)
        state = None
        toks, probs, confs = [], [], []
        for k in range(self.block_size):
            hk = h[k : k + 1]
            z, state = d.markov_head.pre(prev, hk, state)  # [1, r]: all that depends on the previous draft
            if d.confidence_head is not None:
                confs.append(torch.sigmoid(d.confidence_logits(hk, prev))[0])
            if greedy:
                i = self._greedy_slot(base[k], z[0]).view(1)
                p = torch.zeros_like(base[k]).scatter_(-1, i, 1.0)
            else:
                i, p = self._sample_slot(base[k], z[0], temperature, generator)
            tok = i if self._vocab is None else self._vocab[i]
            toks.append(tok[0])
            probs.append(p if self._vocab is None else self._full(p))
            prev = tok
        tokens = torch.stack(toks)
        probs_t = torch.stack(probs).float()
        conf_t = torch.stack(confs).float() if confs else None
        if conf_t is not None and self.confidence_threshold > 0:
            below = (conf_t < self.confidence_threshold).nonzero()
            n = int(below[0]) if below.numel() else self.block_size
            tokens, probs_t, conf_t = tokens[:n], probs_t[:n], conf_t[:n]
        return Proposal(tokens=tokens, probs=probs_t, confidences=conf_t)

    def _full(self, p: Tensor) -> Tensor:
        """A distribution over the draft vocabulary [N] as one over all V token ids (zero elsewhere)."""
        return p.new_zeros(self.drafter.config.vocab_size).scatter_(-1, self._vocab, p)

    def _bias(self, z: Tensor, rows: Tensor | None = None) -> Tensor:
        """Markov bias W2 z in fp32 on ``rows`` (LongTensor [K]) or the whole draft vocabulary. z [r] -> [K]
        or [N]. Indices here are positions in the draft vocabulary.
        Computed in W2's dtype, as ``MarkovHead.step`` does, so the two agree."""
        w = self._w2 if rows is None else self._w2[rows]
        return F.linear(z.to(w.dtype), w).float()

    def _greedy_slot(self, u: Tensor, z: Tensor) -> Tensor:
        """argmax over the draft vocabulary of U + W2 z, exactly (module docstring). u [N] fp32, z [r] -> 0-dim
        index into the draft vocabulary."""
        self.slots += 1
        K = self._k
        if K:
            cand = torch.topk(u, K).indices
            zc = u[cand] + self._bias(z, cand)
            best = zc.max()
            bound = u + self._w2_norm * z.float().norm()
            bound[cand] = float("-inf")
            # 1e-4 relative slack covers fp32 rounding of the bound itself
            if float(bound.max()) < float(best) - 1e-4 * (1.0 + abs(float(best))):
                return cand[zc.argmax()]
        self.full_bias_slots += 1
        return (u + self._bias(z)).argmax()

    def _sample_slot(self, u: Tensor, z: Tensor, temperature: float,
                     generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
        """A draft (index into the draft vocabulary) sampled from softmax((U + W2 z) / T) over the candidates
        (every token when K = 0), and that distribution [N] fp32 (zero outside the candidates). u [N], z [r]."""
        K = self._k
        if K:
            cand = torch.topk(u, K).indices
            pc = torch.softmax((u[cand] + self._bias(z, cand)) / temperature, dim=-1)
            p = torch.zeros_like(u).scatter_(-1, cand, pc)
        else:
            p = torch.softmax((u + self._bias(z)) / temperature, dim=-1)
        src = p if generator is None or generator.device == p.device else p.cpu()
        tok = torch.multinomial(src[None], 1, generator=generator)[:, 0].to(p.device)
        return tok, p
