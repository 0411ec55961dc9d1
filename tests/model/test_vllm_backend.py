"""The vLLM backend: the truncation rule everywhere; the real engine only where vllm and CUDA exist."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from m1model import Engine, SamplingParams
from m1model.vllm_backend import truncate_repetition

from .conftest import tiny_model


def test_truncate_repetition_cuts_at_the_first_long_enough_run():
    hi, lo = math.log(0.995), math.log(0.5)
    assert truncate_repetition([hi, hi, lo, hi, hi, hi, hi], run=3, prob=0.99) == 6
    assert truncate_repetition([hi, lo, hi, lo], run=2, prob=0.99) is None


def test_finished_sequences_match_the_engine_on_the_same_weights():
    """What the backend does to vLLM's output (repetition cut, finish reason) reproduces the bundled
    engine's early stop: the engine decoding without the cut, post-processed, equals the engine with it
    (greedy, so a batch that shrinks at different steps decodes the same tokens)."""
    from m1model.vllm_backend import finish

    model = tiny_model(initializer_range=0.6)  # peaked next-token distributions: runs above the threshold
    prompts = [[5, 9, 14], [7, 3, 3, 40], [11, 12], [1, 2, 3, 4, 5], [60, 61]]
    base = dict(temperature=0.0, max_tokens=12, stop_token_ids=(2,))
    params = SamplingParams(**base, repetition_run=3, repetition_prob=0.3)
    early = Engine(model).generate(prompts, params)
    full = Engine(model).generate(prompts, SamplingParams(**base))
    post = [finish(c.token_ids, c.logprobs, c.finish_reason == "stop", params) for c in full]
    assert [(c.token_ids, c.finish_reason) for c in post] == [(c.token_ids, c.finish_reason) for c in early]
    for a, b in zip(post, early, strict=True):
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=0)
    assert "repetition" in {c.finish_reason for c in early} and len({c.finish_reason for c in early}) > 1


@pytest.mark.gpu
@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None or not torch.cuda.is_available(),
    reason="needs vllm and a CUDA GPU",
)
def test_vllm_generates_from_the_exported_checkpoint(tmp_path):
    from m1model.vllm_backend import VLLMEngine

    # Power-of-two heads: vLLM's slope formula equals transformers' only then.
    model = tiny_model(
        hidden_size=256,
        head_dim=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=256,
        layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        vocab_size=512,
        initializer_range=0.05,
    )
    model.save_pretrained(tmp_path / "ckpt")
    engine = VLLMEngine(tmp_path / "ckpt", gpu_memory_utilization=0.3, enforce_eager=True)
    prompts = [[5, 9, 14], [7, 3, 3, 40, 41, 12, 8]]
    params = SamplingParams(temperature=1.0, max_tokens=16, seed=0)
    out = engine.generate(prompts, params)
    assert [len(c.token_ids) for c in out] == [16, 16] and {c.finish_reason for c in out} == {"length"}
    # vLLM's log-probs are the policy's: they agree with our FP32 training forward on the same tokens.
    for prompt, c in zip(prompts, out, strict=True):
        with torch.no_grad():
            ours = model.token_logprobs(torch.tensor([prompt + c.token_ids]))[0, len(prompt) - 1 :]
        torch.testing.assert_close(torch.tensor(c.logprobs), ours, atol=0.05, rtol=0)
    greedy = SamplingParams(temperature=0, max_tokens=8)
    assert (
        engine.generate(prompts, greedy)[0].token_ids[:4]
        == Engine(model).generate(prompts, greedy)[0].token_ids[:4]
    )


def test_vllm_view_strips_decay_tables_and_follows_rewrites(tmp_path):
    from safetensors import safe_open

    from m1model.vllm_backend import vllm_view

    model = tiny_model()
    model.save_pretrained(tmp_path / "ckpt")
    view = vllm_view(tmp_path / "ckpt")
    assert vllm_view(tmp_path / "ckpt") == view  # reused while the weights are unchanged
    with safe_open(str(view / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert keys == set(model.state_dict()) and (view / "config.json").is_file()
    model.save_pretrained(tmp_path / "ckpt")  # rewritten in place: a new view replaces the old one
    assert vllm_view(tmp_path / "ckpt") != view and not view.exists()
