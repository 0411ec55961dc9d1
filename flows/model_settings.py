"""The pipeline's model and training settings (flows/config/training.py: ModelConfig, TrainConfig) as
m1model's: a fresh model of the configured size, the SFT settings, the machine's torch threads.

A shared module of the flows, beside the config: the curriculum's base model, the judge's training
(flows/genrm/), `m1 model init` and the benches all build and warm-start models from it, and none of
them owns it. The RL trainer's settings are a stage's (`flows.curriculum.settings.rl_config`).
"""

from __future__ import annotations

from typing import Any

from flows.config import ModelConfig, TrainConfig

# ModelConfig fields that are not M1Config fields of the same name.
_NOT_MODEL = {"softmax_every", "vocab_size", "seed"}


def use_threads(tc: TrainConfig) -> None:
    """Apply `train.torch_threads`: small models lose more to OpenMP threads spinning on a shared
    2-core machine than they gain from them (10x slower steps were measured under load)."""
    if tc.torch_threads:
        # heavy: torch
        import torch

        torch.set_num_threads(tc.torch_threads)


def fresh_model(model_cfg: ModelConfig, tokenizer: Any):
    """A freshly initialised model of the configured size for this tokenizer's vocabulary, from
    m1model's one factory."""
    # heavy: torch, transformers
    from m1model.policy import build_model

    return build_model(
        tokenizer=tokenizer,
        seed=model_cfg.seed,
        softmax_every=model_cfg.softmax_every,
        **model_cfg.model_dump(exclude=_NOT_MODEL),
    )


def sft_config(tc: TrainConfig, tokenizer):
    # heavy: torch, numpy
    from m1model.rl.sft import SFTConfig

    return SFTConfig(
        steps=tc.sft_steps,
        lr=tc.sft_lr,
        batch_size=tc.batch_size,
        grad_clip=tc.grad_clip,
        pad_token_id=tokenizer.pad_token_id or 0,
        seed=tc.seed,
    )
