"""Tiny model configs shared by the model tests (small enough that a forward pass takes milliseconds)."""

from __future__ import annotations

import pytest
import torch

from m1model import M1Config, M1ForCausalLM

L, S = "linear_attention", "full_attention"

# Each config exercises a different part of the architecture; block_size is smaller than the test
# sequences so transformers' reference runs its multi-block path.
TINY_CONFIGS = {
    "lightning_prefix_top2": dict(layer_types=[L, L, L, S], num_experts_per_tok=2, num_local_experts=4),
    "several_softmax_top1_gqa": dict(
        layer_types=[S, L, S, L, S], num_experts_per_tok=1, num_local_experts=4, num_key_value_heads=1
    ),
    "hybrid_1_in_8_top2_scaled_residuals": dict(
        num_hidden_layers=9,
        layer_types=None,  # the default MiniMax pattern: softmax at layer 7
        num_experts_per_tok=2,
        num_local_experts=6,
        linear_attn_alpha_factor=0.8,
        linear_attn_beta_factor=1.3,
        full_attn_alpha_factor=1.1,
        full_attn_beta_factor=0.7,
        mlp_alpha_factor=0.9,
        mlp_beta_factor=1.2,
    ),
}


def tiny_config(**overrides) -> M1Config:
    base = dict(
        vocab_size=101,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=len(overrides.get("layer_types") or []) or 4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        block_size=16,
        initializer_range=0.15,  # large enough that logits (and their differences) are O(1)
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    base.update(overrides)
    return M1Config(**base)


def tiny_model(seed: int = 0, **overrides) -> M1ForCausalLM:
    torch.manual_seed(seed)
    return M1ForCausalLM(tiny_config(**overrides)).eval()


@pytest.fixture(params=list(TINY_CONFIGS), ids=list(TINY_CONFIGS))
def tiny(request) -> M1ForCausalLM:
    return tiny_model(**TINY_CONFIGS[request.param])
