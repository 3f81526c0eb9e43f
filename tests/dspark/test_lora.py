"""LoRA: trainable set, training step, merge equals the adapted model, export refuses unmerged adapters."""

import pytest
import torch

from drafters.dspark.anchors import sample_anchors
from drafters.dspark.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from drafters.dspark.lora import apply_lora, has_lora, merge_lora
from drafters.dspark.losses import dspark_loss
from tests.dspark._tiny import V, target_features, tiny_drafter


def _batch(target):
    ids = torch.randint(0, V - 1, (1, 30), generator=torch.Generator().manual_seed(0))
    lm = torch.ones(1, 30, dtype=torch.long)
    lm[0, :5] = 0
    aux, last = target_features(target, ids, [0, 1])
    a, k = sample_anchors(lm[0], 6, torch.Generator().manual_seed(1))
    return ids, lm, aux, last, a[None], k[None]


@pytest.mark.parametrize("head", ["vanilla", "gated"])
def test_lora_trainable_set_and_merge(tmp_path, head):
    d, t = tiny_drafter("qwen3", markov_head_type=head)
    apply_lora(d, r=4, alpha=8, dropout=0.0)
    assert has_lora(d)
    trainable = {n for n, p in d.named_parameters() if p.requires_grad}
    assert any("layers.0.self_attn.q_proj.lora_A" in n for n in trainable)
    assert any(n.startswith("fc.lora_B") for n in trainable)
    assert "markov_head.markov_w1.weight" in trainable and "confidence_head.proj.weight" in trainable
    assert "layers.0.self_attn.q_proj.base_layer.weight" not in trainable
    assert "fc.base_layer.weight" not in trainable
    assert not any(n.startswith(("embed_tokens", "lm_head")) for n in trainable)
    if head == "gated":  # the Markov gate is trained fully, never LoRA-wrapped
        assert "markov_head.gate_proj.weight" in trainable
        assert not any("gate_proj.lora" in n and n.startswith("markov") for n in trainable)
    batch = _batch(t)
    opt = torch.optim.AdamW([p for p in d.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        out = dspark_loss(d, *batch)
        out.total.backward()
        opt.step()
    assert d.fc.lora_B["default"].weight.abs().sum() > 0  # adapters moved
    with pytest.raises(CheckpointError) as e:
        save_checkpoint(d, tmp_path / "bad")
    assert e.value.code == "unmerged_lora"
    merged = merge_lora(d)
    assert not has_lora(merged) and has_lora(d)
    d.eval()
    merged.eval()
    ids, _, aux, _, a, k = batch
    with torch.no_grad():
        torch.testing.assert_close(merged(ids, aux, a, k), d(ids, aux, a, k), atol=1e-5, rtol=1e-4)
        assert dspark_loss(merged, *batch).total.item() == pytest.approx(dspark_loss(d, *batch).total.item(),
                                                                         rel=1e-4)
    save_checkpoint(merged, tmp_path / "ok")
    back = load_checkpoint(tmp_path / "ok", t.get_input_embeddings().weight, t.get_output_embeddings().weight)
    for n, p in merged.state_dict().items():
        assert torch.equal(p, back.state_dict()[n]), n
