"""The model's own contracts: log-probs, left padding, cached decoding, config and checkpoint handling."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import MiniMaxConfig

from m1model import M1Config, M1ForCausalLM
from m1model.cache import M1Cache

from .conftest import TINY_CONFIGS, tiny_config, tiny_model

# fp32 across different batch shapes and kernels (AVX-512 vs AMD): summation order moves logits of a
# 9-layer model with scaled residuals by up to ~4e-5; a cache or padding bug moves them by O(1).
ATOL = 1e-4


def _ids(model, B, T, seed=0):
    return torch.randint(3, model.config.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("fp32_head", [True, False])
def test_token_logprobs_equal_log_softmax_of_logits(fp32_head):
    model = tiny_model(fp32_lm_head=fp32_head, **TINY_CONFIGS["lightning_prefix_top2"])
    x = _ids(model, 2, 30)
    logits = model(x).logits
    expected = torch.log_softmax(logits.float(), -1)[:, :-1].gather(-1, x[:, 1:, None]).squeeze(-1)
    logp, entropy = model.token_logprobs(x, return_entropy=True)
    assert logp.dtype == torch.float32 and logp.shape == (2, 29)
    torch.testing.assert_close(logp, expected, atol=ATOL, rtol=0)
    dist = torch.log_softmax(logits.float(), -1)[:, :-1]
    torch.testing.assert_close(entropy, -(dist.exp() * dist).sum(-1), atol=ATOL, rtol=0)


def test_token_logprobs_are_differentiable(tiny):
    x = _ids(tiny, 2, 20)
    tiny.token_logprobs(x).sum().backward()
    grads = {n: p.grad for n, p in tiny.named_parameters()}
    assert grads["lm_head.weight"].abs().sum() > 0
    assert (
        grads[
            "model.layers.0.self_attn."
            + ("qkv_proj" if tiny.model.layers[0].is_lightning else "q_proj")
            + ".weight"
        ]
        .abs()
        .sum()
        > 0
    )


def test_left_padding_gives_the_unpadded_results(tiny):
    """A left-padded row's logits and log-probs equal those of the sequence run alone."""
    short, long_ = _ids(tiny, 1, 9, seed=3)[0], _ids(tiny, 1, 23, seed=4)[0]
    pad = 23 - 9
    batch = torch.stack([torch.cat([torch.zeros(pad, dtype=torch.long), short]), long_])
    mask = torch.ones(2, 23, dtype=torch.long)
    mask[0, :pad] = 0
    with torch.no_grad():
        padded = tiny(batch, attention_mask=mask).logits
        alone = tiny(short[None]).logits
        torch.testing.assert_close(padded[0, pad:], alone[0], atol=ATOL, rtol=0)
        torch.testing.assert_close(padded[1], tiny(long_[None]).logits[0], atol=ATOL, rtol=0)
        logp = tiny.token_logprobs(batch, attention_mask=mask)
    torch.testing.assert_close(logp[0, pad:], tiny.token_logprobs(short[None])[0].detach(), atol=ATOL, rtol=0)
    assert torch.all(logp[0, : pad - 1] == 0)  # targets that are padding


def test_cached_decoding_equals_full_forward(tiny):
    """Prefill a prefix, then feed tokens one at a time: every step's logits match the full pass."""
    x = _ids(tiny, 2, 24)
    with torch.no_grad():
        full = tiny(x).logits
        cache = M1Cache()
        steps = [tiny(x[:, :10], cache=cache, use_cache=True).logits]
        steps += [tiny(x[:, t : t + 1], cache=cache, use_cache=True).logits for t in range(10, 24)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=ATOL, rtol=0)
    with torch.no_grad():  # transformers' convention: the mask covers the past too
        again = M1Cache()
        tiny(x[:, :10], cache=again, use_cache=True)
        step = tiny(x[:, 10:11], attention_mask=torch.ones(2, 11), cache=again, use_cache=True).logits
    torch.testing.assert_close(step, full[:, 10:11], atol=ATOL, rtol=0)
    with pytest.raises(ValueError, match="expected 1 or 25"):
        tiny(x[:, :1], attention_mask=torch.ones(2, 7), cache=cache)
    for i, layer in enumerate(tiny.model.layers):  # constant-size state vs growing KV
        if layer.is_lightning:
            assert cache.states[i].shape == (2, 4, 8, 8) and cache.states[i].dtype == torch.float32
        else:
            assert cache.kv[i].length == 24


def test_bf16_keeps_decay_rates_and_rope_in_float32():
    model = tiny_model(**TINY_CONFIGS["lightning_prefix_top2"])
    slope = model.model.layers[0].self_attn.slope.clone()
    model.to(torch.bfloat16)
    assert model.model.layers[0].self_attn.slope.dtype == torch.float32
    assert torch.equal(model.model.layers[0].self_attn.slope, slope)
    assert model.model.inv_freq.dtype == torch.float32
    logits = model(_ids(model, 1, 12)).logits
    assert logits.dtype == torch.float32  # the FP32 head
    model.config.fp32_lm_head = False
    assert model(_ids(model, 1, 12)).logits.dtype == torch.bfloat16


def test_config_round_trips_through_transformers(tmp_path):
    config = tiny_config(**TINY_CONFIGS["hybrid_1_in_8_top2_scaled_residuals"])
    assert config.layer_types[7] == "full_attention" and config.layer_types.count("full_attention") == 1
    config.save_pretrained(tmp_path)
    theirs = MiniMaxConfig.from_pretrained(tmp_path)
    ours = M1Config.from_pretrained(tmp_path)
    for key, value in config.to_dict().items():
        if key not in ("transformers_version", "fp32_lm_head"):
            assert getattr(theirs, key) == value, key
    assert ours.to_dict() == config.to_dict()


def test_config_rejects_inconsistent_layer_types():
    with pytest.raises(ValueError, match="layer_types has 2 entries"):
        tiny_config(num_hidden_layers=3, layer_types=["linear_attention", "full_attention"])
    with pytest.raises(ValueError, match="unknown kinds"):
        tiny_config(layer_types=["linear_attention", "sliding_window_attention"])


def test_checkpoint_round_trip_and_clear_errors(tmp_path):
    model = tiny_model(**TINY_CONFIGS["several_softmax_top1_gqa"]).to(torch.bfloat16)
    model.save_pretrained(tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["architectures"] == ["MiniMaxForCausalLM"] and config["dtype"] == "bfloat16"
    loaded = M1ForCausalLM.from_pretrained(tmp_path / "ckpt")
    assert loaded.dtype == torch.bfloat16
    for (name, a), b in zip(model.state_dict().items(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name

    config["num_local_experts"] = 5  # weights no longer fit the config
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="missing"):
        M1ForCausalLM.from_pretrained(tmp_path / "ckpt")
    with pytest.raises(FileNotFoundError, match="config.json"):
        M1ForCausalLM.from_pretrained(tmp_path / "nowhere")
