"""End to end with the speculative loop (drafters.speculate) and a tiny target: lossless greedy decoding with
the DSparkProposer, and a drafter trained with dspark_loss on the target's own continuation gets accepted."""

import torch

from drafters.dspark.anchors import sample_anchors
from drafters.dspark.losses import dspark_loss
from drafters.dspark.proposer import DSparkProposer
from drafters.speculate import plain_generate, speculative_generate
from drafters.target import Target
from tests.dspark._tiny import V, target_features, tiny_drafter


def test_training_makes_drafts_accepted_and_decoding_stays_lossless():
    d, t = tiny_drafter("qwen3", markov_rank=32)
    target = Target(t, tokenizer=None, name="tiny")
    prompt = torch.randint(0, V - 1, (10,), generator=torch.Generator().manual_seed(0))
    ref = plain_generate(target, prompt, max_new_tokens=24)
    before = speculative_generate(target, DSparkProposer(d), prompt, max_new_tokens=24)
    assert list(before.tokens) == list(ref.tokens)  # greedy speculative decoding is lossless
    seq = torch.cat([prompt, torch.as_tensor(ref.tokens)])[None]
    lm = torch.zeros_like(seq)
    lm[0, prompt.numel():] = 1
    aux, last = target_features(t, seq, d.config.target_layer_ids)
    opt = torch.optim.AdamW(d.trainable_parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(0)
    d.train()
    for _ in range(60):
        a, k = sample_anchors(lm[0], 16, g)
        opt.zero_grad()
        out = dspark_loss(d, seq, lm, aux, last, a[None], k[None])
        out.total.backward()
        opt.step()
    assert out.expected_tau.item() > 2.0
    after = speculative_generate(target, DSparkProposer(d), prompt, max_new_tokens=24)
    assert list(after.tokens) == list(ref.tokens)
    acc_before = sum(r.accepted for r in before.rounds) / len(before.rounds)
    acc_after = sum(r.accepted for r in after.rounds) / len(after.rounds)
    assert acc_after > max(1.5, acc_before + 1.0), (acc_before, acc_after)  # ~2.8 of 4 observed
