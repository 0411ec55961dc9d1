"""A tiny real M1 model (one lightning and one softmax layer, MoE) for the RL tests."""

from __future__ import annotations

import pytest
import torch

from m1model import M1Config, M1ForCausalLM

VOCAB = 24


def make_tiny_model(seed: int = 0, **overrides) -> M1ForCausalLM:
    torch.manual_seed(seed)
    settings = dict(
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
    return M1ForCausalLM(M1Config(**(settings | overrides)))


@pytest.fixture
def tiny_model() -> M1ForCausalLM:
    return make_tiny_model()


@pytest.fixture
def new_tiny_model():
    """A factory: several independent models (e.g. to compare a resumed run with a straight one)."""
    return make_tiny_model


# A verifier plugin loaded from a directory, as a user's would be; its reward (the share of digits in the
# response) varies within a group, so most groups train.
DIGIT_SHARE = """
from verifiers.base import Reward


def digit_share(text):
    return sum(ch.isdigit() for ch in text) / max(len(text), 1)


class DigitShare:
    name = "digit-share"
    version = "1"

    def verify(self, items):
        return [Reward(digit_share(item["response"])) for item in items]
"""


@pytest.fixture
def tiny_stage(tmp_path):
    """A factory: a store with one math dataset (two tasks), the plugin, a one-stage curriculum whose
    mixture weights move with pass rates, and a tiny config for run ``run``; returns (config file, home,
    stage dir)."""
    import json

    import polars as pl

    from flows.schema import ITEM_COLUMNS
    from flows.store import DatasetStore

    def make(steps: int, run: str = "f", **train) -> tuple:
        home = tmp_path / "home"
        rows = [
            {
                "id": f"item-{i}",
                "source": "test",
                "domain": "math",
                "task": "add" if i % 2 else "mul",
                "prompt": f"{i} + {i + 4} =" if i % 2 else f"{i} * 7 =",
                "reference": str(2 * i + 4) if i % 2 else str(7 * i),
                "metadata": "{}",
            }
            for i in range(24)
        ]
        DatasetStore(home).write(f"{run}-curated", pl.DataFrame(rows, schema=ITEM_COLUMNS))
        (tmp_path / "plugins").mkdir(exist_ok=True)
        (tmp_path / "plugins" / "digit_share.py").write_text(DIGIT_SHARE)
        (tmp_path / "tiny.toml").write_text(
            'name = "tiny-stage"\ndatasets = ["{run}-curated"]\nverifiers = { math = "digit-share" }\n\n'
            f'[[stages]]\nname = "a"\nmixture = {{ "math/add" = 0.5, "math/mul" = 0.5 }}\nsteps = {steps}\n'
            "max_new_tokens = 6\n"
        )
        config = {
            "name": run,
            "home": str(home),
            "plugin_dirs": [str(tmp_path / "plugins")],
            "model": {
                "hidden_size": 32,
                "num_hidden_layers": 2,
                "softmax_every": 2,
                "num_attention_heads": 2,
                "num_key_value_heads": 1,
                "intermediate_size": 32,
                "vocab_size": 300,
            },
            "train": {
                "curriculum": str(tmp_path / "tiny.toml"),
                "sft_steps": 3,
                "prompts_per_step": 4,
                "group_size": 4,
                "batch_size": 8,
                "rl_lr": 0.01,
                "max_sampling_rounds": 2,
                "samples_per_step": 2,
            }
            | train,
            "eval": {"n_items": 3, "max_new_tokens": 4},
        }
        (tmp_path / f"{run}.json").write_text(json.dumps(config))
        return tmp_path / f"{run}.json", home, home / "runs" / run / "train" / "a"

    return make
