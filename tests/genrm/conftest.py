"""A tiny real checkpoint (BPE tokenizer + hybrid model), served on loopback for the GenRM tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    from flows.config import ModelConfig
    from flows.model_settings import fresh_model
    from m1model import train_tokenizer
    from m1model.policy import save_policy

    texts = [f"the quick brown fox {i} jumps over the lazy dog at the market" for i in range(300)]
    tokenizer = train_tokenizer(texts, vocab_size=320)
    model = fresh_model(ModelConfig(vocab_size=320), tokenizer).eval()
    return save_policy(model, tokenizer, tmp_path_factory.mktemp("ckpt") / "tiny-m1")


@pytest.fixture(scope="session")
def served(tiny_checkpoint):
    """The checkpoint behind the real app, on a loopback port: yields the base URL (no /v1)."""
    from m1model.serving import ServerSettings, app_from_checkpoint, background

    app = app_from_checkpoint(tiny_checkpoint, ServerSettings(model_name="tiny"))
    with background(app) as url:
        yield url
