"""From the one `PipelineConfig` to the settings objects of m1model.rl for a stage: its TrainConfig (the
curriculum's and the stage's overrides applied), the RL trainer's settings, the length-bias hook's. The
model and SFT settings every flow shares are flows/model_settings.py.

Not a flow: how the training flows translate the config into m1model.rl's settings.
"""

from __future__ import annotations

from pydantic import ValidationError

from flows.config import LengthBiasConfig, TrainConfig
from flows.curriculum import Curriculum, Stage
from flows.errors import ConfigError


def stage_train_config(base: TrainConfig, stage: Stage, curriculum: Curriculum) -> TrainConfig:
    """TrainConfig with the stage's overrides applied and validated."""
    try:
        return TrainConfig.model_validate(base.model_dump() | curriculum.overrides | stage.overrides)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ConfigError(
            f"curriculum {curriculum.name}, stage {stage.name}: overrides."  # the stage's or the curriculum's
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
        ) from None


def length_bias_settings(section: LengthBiasConfig):
    """`train.length_bias` as the length-bias hook's settings (m1model.rl.length_bias)."""
    # heavy: numpy
    from m1model.rl.length_bias import LengthBiasSettings

    return LengthBiasSettings(**section.model_dump())


def rl_config(tc: TrainConfig, tokenizer=None, stage: Stage | None = None):
    """The trainer's settings: TrainConfig, with the stage's generation window when there is a stage.
    The one translation: stages, `m1 experiment` and the benches all build their RLConfig here. Without
    a tokenizer (a bench on random token ids) there is no stop token and padding is id 0."""
    # heavy: torch, transformers, numpy
    from m1model.rl.losses import LossConfig
    from m1model.rl.trainer import RLConfig

    start, limit, step = tc.max_new_tokens, None, 0
    if stage is not None:
        start, limit, step = stage.start_new_tokens, stage.max_new_tokens, stage.window_step
    return RLConfig(
        algorithm=tc.algorithm,
        group_size=tc.group_size,
        prompts_per_step=tc.prompts_per_step,
        lr=tc.rl_lr,
        loss=LossConfig(
            eps_low=tc.eps_low,
            eps_high=tc.eps_high,
            eps_is_low=tc.eps_is_low,
            eps_is_high=tc.eps_is_high,
            unified_mask=tc.unified_mask,
            sample_level=tc.sample_level,
            negative_weight=tc.negative_weight,
        ),
        updates_per_batch=tc.updates_per_batch,
        grad_clip=tc.grad_clip,
        max_new_tokens=start,
        max_new_tokens_limit=limit if step else None,
        window_step=step,
        window_ppl_steps=tc.window_ppl_steps,
        window_ppl_tol=tc.window_ppl_tol,
        repetition_run=tc.repetition_run,
        repetition_prob=tc.repetition_prob,
        temperature=tc.temperature,
        stop_token_ids=_stop(tokenizer),
        normalize_std=tc.normalize_std,
        dynamic_sampling=tc.dynamic_sampling,
        max_sampling_rounds=tc.max_sampling_rounds,
        overlong_cache=tc.overlong_cache,
        micro_batch_size=tc.micro_batch_size or max(tc.batch_size, tc.group_size),
        pad_token_id=(tokenizer.pad_token_id if tokenizer is not None else 0) or 0,
        seed=tc.seed,
    )


def _stop(tokenizer) -> tuple[int, ...]:
    eos = getattr(tokenizer, "eos_token_id", None)
    return (eos,) if eos is not None else ()
