"""A tiny real M1 model (one lightning and one softmax layer, MoE) for the RL tests."""

from __future__ import annotations

import pytest
import torch

from m1model import M1Config, M1ForCausalLM

VOCAB = 24


def make_tiny_model(seed: int = 0) -> M1ForCausalLM:
    torch.manual_seed(seed)
    config = M1Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        block_size=16,
        layer_types=["linear_attention", "full_attention"],
        pad_token_id=0,
    )
    return M1ForCausalLM(config)


@pytest.fixture
def tiny_model() -> M1ForCausalLM:
    return make_tiny_model()


@pytest.fixture
def new_tiny_model():
    """A factory: several independent models (e.g. to compare a resumed run with a straight one)."""
    return make_tiny_model
