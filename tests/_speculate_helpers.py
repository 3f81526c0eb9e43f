"""Tiny targets and reference proposers for the speculative-decoding and evaluation tests."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from drafters.speculate import Proposal
from drafters.target import Target

VOCAB = 64


def tiny_target(seed: int = 0, vocab: int = VOCAB, layers: int = 2, scale: float = 1.0) -> Target:
    """A tiny random Llama target in fp32. ``scale`` multiplies the LM head: > 1 sharpens the distribution
    (more repetitive text), < 1 flattens it (more diverse samples)."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=vocab, max_position_embeddings=512,
                      tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).float()
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
    return Target(model, tokenizer=None, name=f"tiny{seed}")


class SelfProposer:
    """The target itself as drafter: drafts by running the target autoregressively (no cache; tiny models).
    At temperature 0 it drafts the target's argmax, so every draft is accepted; at T > 0 it samples from
    the target's own distribution and returns those probs (p_d == p_t, so every draft is accepted)."""

    layer_ids = None

    def __init__(self, target: Target, block_size: int = 4):
        self.target, self.block_size = target, block_size
        self.ctx: list[int] = []

    def start(self, prompt_ids, features=None):
        self.ctx = prompt_ids.tolist()

    @torch.no_grad()
    def propose(self, anchor, temperature, generator):
        seq = self.ctx + [anchor]
        toks, probs = [], []
        for _ in range(self.block_size):
            logits = self.target.model(torch.tensor([seq])).logits[0, -1].float()
            if temperature < 1e-5:
                t = int(logits.argmax())
            else:
                p = torch.softmax(logits / temperature, -1)
                t = int(torch.multinomial(p, 1, generator=generator))
                probs.append(p)
            toks.append(t)
            seq.append(t)
        return Proposal(torch.tensor(toks), torch.stack(probs) if probs else None,
                        torch.full((len(toks),), 0.9))

    def commit(self, tokens, features=None):
        self.ctx.extend(tokens.tolist())


class RandomProposer:
    """Drafts uniformly random tokens (probs = uniform), with random confidences."""

    layer_ids = None

    def __init__(self, vocab: int = VOCAB, block_size: int = 5):
        self.vocab, self.block_size = vocab, block_size

    def start(self, prompt_ids, features=None):
        pass

    def propose(self, anchor, temperature, generator):
        toks = torch.randint(0, self.vocab, (self.block_size,), generator=generator)
        return Proposal(toks, torch.full((self.block_size, self.vocab), 1.0 / self.vocab),
                        torch.rand(self.block_size, generator=generator))

    def commit(self, tokens, features=None):
        pass


class AdversarialProposer:
    """Drafts a token the target never picks greedily: (argmax + 1) mod V, so greedy tau is exactly 1."""

    layer_ids = None

    def __init__(self, target: Target, block_size: int = 4):
        self.target, self.block_size = target, block_size
        self.ctx: list[int] = []

    def start(self, prompt_ids, features=None):
        self.ctx = prompt_ids.tolist()

    @torch.no_grad()
    def propose(self, anchor, temperature, generator):
        logits = self.target.model(torch.tensor([self.ctx + [anchor]])).logits[0, -1]
        wrong = (int(logits.argmax()) + 1) % logits.shape[-1]
        return Proposal(torch.full((self.block_size,), wrong, dtype=torch.long))

    def commit(self, tokens, features=None):
        self.ctx.extend(tokens.tolist())


class FeatureProposer:
    """Checks the feature plumbing: asks for target layers, verifies every commit brings features for each
    committed token, and drafts n-gram style so some drafts are accepted."""

    def __init__(self, layer_ids=(0, 1), block_size: int = 3):
        from drafters.baselines import NGramProposer

        self.layer_ids = list(layer_ids)
        self.block_size = block_size
        self.inner = NGramProposer(block_size)
        self.n_features = 0
        self.n_tokens = 0

    def start(self, prompt_ids, features=None):
        assert features is not None and features.shape[0] == prompt_ids.shape[0]
        self.n_features = self.n_tokens = features.shape[0]
        self.inner.start(prompt_ids)

    def propose(self, anchor, temperature, generator):
        return self.inner.propose(anchor, temperature, generator)

    def commit(self, tokens, features=None):
        assert features is not None and features.shape[0] == tokens.shape[0]
        self.n_features += features.shape[0]
        self.n_tokens += tokens.shape[0]
        self.inner.commit(tokens)
