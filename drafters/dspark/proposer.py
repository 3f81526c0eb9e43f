"""DSparkProposer: a DSparkDrafter behind the `drafters.speculate.Proposer` protocol (docs/dspark.md 5.1).

Per request the proposer keeps, for every draft layer, the K/V of the *context* only (positions
0..start-1, projected from the target's features). Each `propose` runs the not-yet-cached context and the
block [anchor, MASK x (g-1)] at positions start..start+g-1 in one drafter call, keeps the context K/V, drops
the block's K/V (the "crop back to start" of docs/dspark.md 5.1 step 2), then samples the g drafts one after
another through the Markov head (docs/dspark.md 1.5), in fp32.

Greedy (temperature < 1e-5): tokens are the argmax of the Markov-corrected logits and ``probs`` are ONE-HOT
on them, as DeepSpec's evaluator treats both draft and target at temperature 0 (docs/dspark.md 5.1 step 3).
Otherwise probs = softmax(Z / temperature) in fp32 and tokens are sampled from them with ``generator``.
"""

from __future__ import annotations

import torch
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
    Attributes: block_size (g), layer_ids (the target layers whose outputs ``features`` must hold).
    """

    def __init__(self, drafter: DSparkDrafter, confidence_threshold: float = 0.0):
        self.drafter = drafter.eval()
        self.block_size = drafter.config.block_size
        self.layer_ids: list[int] | None = list(drafter.config.target_layer_ids)
        self.confidence_threshold = confidence_threshold
        self._cache: list[tuple[Tensor, Tensor]] | None = None
        self._pending: Tensor | None = None
        self._length = 0  # committed context length (cached + pending)

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
        greedy = temperature < GREEDY_EPS
        prev = torch.tensor([int(anchor)], device=h.device)
        state = None
        toks, probs, confs = [], [], []
        for k in range(self.block_size):
            hk = h[k : k + 1]
            bias, state = d.markov_head.step(prev, hk, state)
            z = d.logits(hk) + bias.float()  # [1, V] fp32
            if d.confidence_head is not None:
                confs.append(torch.sigmoid(d.confidence_logits(hk, prev))[0])
            if greedy:
                tok = z.argmax(-1)
                p = torch.zeros_like(z).scatter_(-1, tok[:, None], 1.0)
            else:
                p = torch.softmax(z / temperature, dim=-1)
                pc = p if generator is None or generator.device == p.device else p.cpu()
                tok = torch.multinomial(pc, 1, generator=generator)[:, 0].to(p.device)
            toks.append(tok[0])
            probs.append(p[0])
            prev = tok
        tokens = torch.stack(toks)
        probs_t = torch.stack(probs).float()
        conf_t = torch.stack(confs).float() if confs else None
        if conf_t is not None and self.confidence_threshold > 0:
            below = (conf_t < self.confidence_threshold).nonzero()
            n = int(below[0]) if below.numel() else self.block_size
            tokens, probs_t, conf_t = tokens[:n], probs_t[:n], conf_t[:n]
        return Proposal(tokens=tokens, probs=probs_t, confidences=conf_t)
