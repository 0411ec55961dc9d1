"""A short stage with vLLM rollouts (GPU only): the engine samples from the pushed policy after every
update, so the train-vs-rollout log-prob gap stays at bf16 precision while the weights move."""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None or not torch.cuda.is_available(),
        reason="needs vllm and a CUDA GPU",
    ),
]


def test_stage_with_vllm_rollouts_follows_the_policy(tiny_stage):
    from safetensors.torch import load_file

    from flows.config import load_config
    from flows.curriculum.stage import run_stage

    # Power-of-two heads (vLLM's decay slopes equal ours only then); a high learning rate, so a stale
    # engine would drift from the trainer within a step.
    path, _, stage = tiny_stage(steps=4, rollout="vllm", rl_lr=0.05, vllm_gpu_memory=0.2)
    config = load_config(path, ["model.num_attention_heads=4", "model.head_dim=8"])
    result = run_stage(config, "a")
    assert len(result.history) == 4 and all(m["finite"] == 1.0 for m in result.history)
    updated = [m for m in result.history if "logprob_abs_diff" in m]
    assert len(updated) >= 3
    # The paper's precision-mismatch check, every step: vLLM's bf16 log-probs vs the FP32 trainer's.
    assert max(m["logprob_abs_diff"] for m in updated) < 0.05, [m["logprob_abs_diff"] for m in updated]
    assert min(m.get("logprob_corr", 1.0) for m in updated) > 0.99
    start, final = (
        load_file(stage.parent / "base" / "model.safetensors"),
        load_file(stage / "final" / "model.safetensors"),
    )
    assert any(not torch.equal(start[k], final[k]) for k in final)
