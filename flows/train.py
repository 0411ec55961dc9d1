"""Training: an SFT warm start, then curriculum stages of RL (CISPO by default), each a Prefect flow run.

A stage (flows/curriculum/*.toml) reads its datasets from the store, weight-samples its task mixture,
scores responses with the verifier of each item's domain, and trains from the previous stage's final
model. Its outputs live under ``$M1_HOME/runs/<run>/train/<stage>/``:

    checkpoints/step-NNNNNN/   resumable state (model, AdamW, step, RNG); a rerun resumes from the newest
    final/                     the stage's model + tokenizer (HF format): the next stage starts here
    curves.png, stage.json     the report (also Prefect artifacts)

The first stage starts from ``train.init_from`` or, when unset, from ``train/base/``: a fresh model of
the configured size with a tokenizer trained on the items and a short SFT warm start.

The flows are thin: `run_stage`, `warm_start_and_rl` and `pass_rate` are library functions that the
pipeline and the tests call directly.
"""

from __future__ import annotations

import contextvars
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from pydantic import ValidationError

from flows.atomic import atomic_dir, atomic_write_text
from flows.config import ModelConfig, PipelineConfig, TrainConfig
from flows.curriculum import DEFAULT_VERIFIERS, Curriculum, Stage, load_curriculum
from flows.curriculum.layout import stage_paths, train_root
from flows.curriculum.mixture import stage_items
from flows.curriculum.prompts import answer_text, prompt_text
from flows.curriculum.report import metrics_table, plot_curves, stage_markdown
from flows.curriculum.rewards import make_reward_fn, resolve_verifiers
from flows.errors import ConfigError, InputError
from flows.store import DatasetStore

Metrics = dict[str, float]
StepCallback = Callable[[str, Metrics], None]  # (phase: "sft" | stage name, metrics)

# The CLI sets this to drive a rich progress bar; the flows pass it on (flow bodies run in the caller's context).
step_listener: contextvars.ContextVar[StepCallback | None] = contextvars.ContextVar(
    "step_listener", default=None
)


# -- model, tokenizer and items -----------------------------------------------------------------------------


def build_model(model_cfg: ModelConfig, tokenizer: Any):
    """A freshly initialised model of the configured size for this tokenizer's vocabulary."""
    import torch

    from m1model import M1Config, M1ForCausalLM
    from m1model.config import hybrid_layer_types

    torch.manual_seed(model_cfg.seed)
    config = M1Config(
        vocab_size=len(tokenizer),
        hidden_size=model_cfg.hidden_size,
        intermediate_size=model_cfg.intermediate_size,
        num_hidden_layers=model_cfg.num_hidden_layers,
        num_attention_heads=model_cfg.num_attention_heads,
        num_key_value_heads=model_cfg.num_key_value_heads,
        head_dim=model_cfg.head_dim,
        num_local_experts=model_cfg.num_local_experts,
        num_experts_per_tok=model_cfg.num_experts_per_tok,
        layer_types=hybrid_layer_types(model_cfg.num_hidden_layers, model_cfg.softmax_every),
        fp32_lm_head=model_cfg.fp32_lm_head,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return M1ForCausalLM(config)


def load_policy(folder: str | Path):
    """(model, tokenizer) from an HF-format folder written by `save_policy` or `m1 model init`."""
    from m1model import M1ForCausalLM
    from m1model.tokenizer import load_tokenizer

    folder = Path(folder)
    if not (folder / "config.json").exists():
        raise InputError(f"{folder}: not a model folder (no config.json)")
    try:
        return M1ForCausalLM.from_pretrained(folder), load_tokenizer(folder)
    except (OSError, ValueError) as exc:  # a damaged or foreign checkpoint: say which and why
        raise InputError(f"{folder}: cannot load the model: {exc}") from None


def save_policy(model, tokenizer, folder: Path, extra: Mapping[str, Any] | None = None) -> Path:
    """Write model + tokenizer (+ extra JSON) to ``folder``, replacing any previous version atomically."""
    staged = folder.with_name(f".{folder.name}.new")
    shutil.rmtree(staged, ignore_errors=True)
    with atomic_dir(staged) as tmp:
        model.save_pretrained(tmp, tokenizer=tokenizer)
        if extra is not None:
            (tmp / "training.json").write_text(json.dumps(extra, indent=2, default=str))
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.rename(folder, old)
    os.rename(staged, folder)
    shutil.rmtree(old, ignore_errors=True)
    return folder


def _rows(items: pl.DataFrame | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return items.to_dicts() if isinstance(items, pl.DataFrame) else [dict(r) for r in items]


def encode_prompt(tokenizer, item: Mapping[str, Any]) -> list[int]:
    return list(tokenizer.encode(prompt_text(item), add_special_tokens=True))


def sft_examples(tokenizer, rows: Sequence[Mapping[str, Any]]) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer ids + EOS): the model learns to answer in the verifier's format, then stop."""
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    return [
        (encode_prompt(tokenizer, r), list(tokenizer.encode(answer_text(r), add_special_tokens=False)) + eos)
        for r in rows
    ]


# -- the library functions the pipeline calls ---------------------------------------------------------------


def use_threads(tc: TrainConfig) -> None:
    """Apply `train.torch_threads`: small models lose more to OpenMP threads spinning on a shared
    2-core machine than they gain from them (10x slower steps were measured under load)."""
    if tc.torch_threads:
        import torch

        torch.set_num_threads(tc.torch_threads)


def sft_config(tc: TrainConfig, tokenizer):
    from m1model.rl.sft import SFTConfig

    return SFTConfig(
        steps=tc.sft_steps,
        lr=tc.sft_lr,
        batch_size=tc.batch_size,
        grad_clip=tc.grad_clip,
        pad_token_id=tokenizer.pad_token_id or 0,
        seed=tc.seed,
    )


def rl_config(tc: TrainConfig, tokenizer, stage: Stage | None = None):
    """The trainer's settings: TrainConfig, with the stage's generation window when there is a stage."""
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
        ),
        updates_per_batch=tc.updates_per_batch,
        grad_clip=tc.grad_clip,
        max_new_tokens=start,
        max_new_tokens_limit=limit if step else None,
        window_step=step,
        temperature=tc.temperature,
        stop_token_ids=(tokenizer.eos_token_id,) if tokenizer.eos_token_id is not None else (),
        normalize_std=tc.normalize_std,
        dynamic_sampling=tc.dynamic_sampling,
        max_sampling_rounds=tc.max_sampling_rounds,
        overlong_cache=tc.overlong_cache,
        micro_batch_size=max(tc.batch_size, tc.group_size),
        pad_token_id=tokenizer.pad_token_id or 0,
        seed=tc.seed,
    )


def default_reward_fn(
    tokenizer,
    rows: Sequence[Mapping[str, Any]],
    verifier_names: Mapping[str, str] | None = None,
    plugin_dirs: Sequence[str] = (),
):
    """Rewards from the verifier registry: each item scored by its domain's verifier."""
    from verifiers.base import default_registry

    names = DEFAULT_VERIFIERS if verifier_names is None else verifier_names
    verifiers = resolve_verifiers((r["domain"] for r in rows), names, default_registry(plugin_dirs))
    return make_reward_fn(verifiers, lambda ids: tokenizer.decode(ids, skip_special_tokens=True))


@dataclass
class TrainResult:
    sft: list[Metrics] = field(default_factory=list)
    rl: list[Metrics] = field(default_factory=list)


def warm_start_and_rl(
    model,
    tokenizer,
    items: pl.DataFrame | Sequence[Mapping[str, Any]],
    train_cfg: TrainConfig,
    reward_fn=None,
    *,
    on_step: StepCallback | None = None,
) -> TrainResult:
    """The walking skeleton's training: ``sft_steps`` of SFT on the items' references, then ``rl_steps``
    RL steps of ``train_cfg.algorithm`` on the same items. Trains ``model`` in place.

    ``reward_fn(items, responses: list[list[int]]) -> list[float]``; default: the verifier registry.
    """
    from m1model import Engine
    from m1model.rl.rollout import PromptPool
    from m1model.rl.sft import sft_warm_start
    from m1model.rl.trainer import RLTrainer

    rows = _rows(items)
    if not rows:
        raise InputError("no training items")
    notify = on_step or (lambda phase, m: None)
    result = TrainResult()
    if train_cfg.sft_steps:
        result.sft = sft_warm_start(
            model,
            sft_examples(tokenizer, rows),
            sft_config(train_cfg, tokenizer),
            on_step=lambda m: notify("sft", m),
        )
    if train_cfg.rl_steps:
        reward_fn = reward_fn or default_reward_fn(tokenizer, rows)
        pool = PromptPool([encode_prompt(tokenizer, r) for r in rows], rows)
        trainer = RLTrainer(model, Engine(model), reward_fn, pool, rl_config(train_cfg, tokenizer))
        result.rl = trainer.train(train_cfg.rl_steps, on_step=lambda m: notify("rl", m))
    return result


def pass_rate(
    model, tokenizer, items, max_new_tokens: int, reward_fn=None, *, threshold: float = 1.0
) -> float:
    """Fraction of items whose greedy answer earns reward >= threshold (a correct answer: 1, + format bonus)."""
    from m1model import Engine, SamplingParams

    rows = _rows(items)
    if not rows:
        raise InputError("no evaluation items")
    reward_fn = reward_fn or default_reward_fn(tokenizer, rows)
    stop = (tokenizer.eos_token_id,) if tokenizer.eos_token_id is not None else ()
    params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, stop_token_ids=stop)
    completions = Engine(model).generate([encode_prompt(tokenizer, r) for r in rows], params)
    rewards = reward_fn(rows, [c.token_ids for c in completions])
    return sum(r >= threshold for r in rewards) / len(rows)


# -- stages ---------------------------------------------------------------------------------------------------


def stage_train_config(base: TrainConfig, stage: Stage, curriculum: Curriculum) -> TrainConfig:
    """TrainConfig with the stage's overrides applied and validated."""
    try:
        return TrainConfig.model_validate(base.model_dump() | stage.overrides)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ConfigError(
            f"curriculum {curriculum.name}, stage {stage.name}: overrides."
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
        ) from None


def build_base(
    config: PipelineConfig, rows: Sequence[Mapping[str, Any]], on_step: StepCallback | None = None
) -> Path:
    """train/base/: a tokenizer trained on the items, a fresh model, and the SFT warm start."""
    from m1model.rl.sft import sft_warm_start
    from m1model.tokenizer import train_tokenizer

    folder = train_root(config) / "base"
    if (folder / "config.json").exists():
        return folder
    texts = [prompt_text(r) + answer_text(r) for r in rows]
    tokenizer = train_tokenizer(texts, vocab_size=config.model.vocab_size)
    model = build_model(config.model, tokenizer)
    notify = on_step or (lambda phase, m: None)
    history = sft_warm_start(
        model,
        sft_examples(tokenizer, rows),
        sft_config(config.train, tokenizer),
        on_step=lambda m: notify("sft", m),
    )
    return save_policy(model, tokenizer, folder, extra={"sft": history})


def start_checkpoint(
    config: PipelineConfig, curriculum: Curriculum, index: int, rows, on_step: StepCallback | None = None
) -> Path:
    if index > 0:
        prev = curriculum.stages[index - 1].name
        final = stage_paths(config, prev).final
        if not (final / "config.json").exists():
            raise InputError(
                f"stage {curriculum.stages[index].name} starts from stage {prev}'s final model, "
                f"but {final} does not exist: run `m1 train stage {prev}` first"
            )
        return final
    if config.train.init_from:
        return Path(config.train.init_from)
    return build_base(config, rows, on_step)


@dataclass
class StageResult:
    stage: str
    start_from: str
    final: str
    history: list[Metrics]
    plot: str

    def summary(self) -> dict[str, Any]:
        last = self.history[-1] if self.history else {}
        return {
            "stage": self.stage,
            "start_from": self.start_from,
            "final": self.final,
            "steps": len(self.history),
            "reward_first": self.history[0]["reward_mean"] if self.history else None,
            "reward_last": last.get("reward_mean"),
            "plot": self.plot,
        }


def run_stage(
    config: PipelineConfig, stage_name: str, *, restart: bool = False, on_step: StepCallback | None = None
) -> StageResult:
    """Train one curriculum stage: resume from its own newest checkpoint (unless ``restart``), else start
    from the previous stage's final model; write its final model and report."""
    from m1model import Engine
    from m1model.rl.rollout import PromptPool
    from m1model.rl.trainer import RLTrainer

    curriculum = load_curriculum(config.train.curriculum)
    index = curriculum.index(stage_name)
    stage = curriculum.stages[index]
    tc = stage_train_config(config.train, stage, curriculum)
    items, weights = stage_items(DatasetStore(config.home), curriculum, stage, config.name)
    rows = items.to_dicts()
    start = start_checkpoint(config, curriculum, index, rows, on_step)
    model, tokenizer = load_policy(start)

    paths = stage_paths(config, stage.name)
    if restart:
        shutil.rmtree(paths.checkpoints, ignore_errors=True)
    reward_fn = default_reward_fn(tokenizer, rows, curriculum.verifiers, config.plugin_dirs)
    pool = PromptPool([encode_prompt(tokenizer, r) for r in rows], rows, weights)
    trainer = RLTrainer(
        model,
        Engine(model),
        reward_fn,
        pool,
        rl_config(tc, tokenizer, stage),
        checkpoint_dir=paths.checkpoints,
        checkpoint_every=tc.checkpoint_every,
    )
    trainer.resume()
    notify = on_step or (lambda phase, m: None)
    history = trainer.train(stage.steps, on_step=lambda m: notify(stage.name, m))
    if trainer.step and not (paths.checkpoints / f"step-{trainer.step:06d}").exists():
        trainer.save()
    save_policy(
        model,
        tokenizer,
        paths.final,
        extra={"stage": stage.name, "start_from": str(start), "history": history},
    )
    plot = (
        plot_curves(history, paths.root / "curves.png", f"{curriculum.name} / {stage.name}")
        if history
        else None
    )
    result = StageResult(stage.name, str(start), str(paths.final), history, str(plot or ""))
    atomic_write_text(paths.root / "stage.json", json.dumps(result.summary(), indent=2))
    return result


# -- Prefect flows --------------------------------------------------------------------------------------------


DEFAULT_CONFIG = PipelineConfig()  # the flows' parameter default (never mutated)


def _artifact_key(*parts: str) -> str:
    return "-".join("".join(ch if ch.isalnum() else "-" for ch in p.lower()) for p in parts)


def _prefect_progress(stage: str, total: int) -> StepCallback:
    """Report steps to a Prefect progress artifact and the run log, and to the CLI's listener if any."""
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    artifact = create_progress_artifact(0.0, description=f"training stage {stage}: RL steps done")
    logger = get_run_logger()
    listener = step_listener.get()

    def on_step(phase: str, m: Metrics) -> None:
        if phase != "sft":
            update_progress_artifact(artifact, progress=100.0 * m["step"] / max(total, 1))
            update = f"loss {m['loss']:.4f}" if "loss" in m else "no informative group, update skipped"
            logger.info(
                "%s step %d/%d: reward %.3f, length %.1f, %s",
                phase,
                int(m["step"]),
                total,
                m["reward_mean"],
                m["response_len_mean"],
                update,
            )
        if listener is not None:
            listener(phase, m)

    return on_step


@flow(name="train-stage", log_prints=True)
def train_stage(stage: str, config: PipelineConfig = DEFAULT_CONFIG, restart: bool = False) -> dict[str, Any]:
    """One curriculum stage as a flow run: resumable from its own checkpoints, rerunnable alone."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    use_threads(config.train)
    curriculum = load_curriculum(config.train.curriculum)
    steps = curriculum.stages[curriculum.index(stage)].steps
    result = run_stage(config, stage, restart=restart, on_step=_prefect_progress(stage, steps))
    key = _artifact_key(config.name, stage)
    create_table_artifact(
        metrics_table(result.history),
        key=f"{key}-metrics",
        description=f"per-step RL metrics of stage {stage}",
    )
    create_markdown_artifact(
        stage_markdown(
            stage,
            result.start_from,
            Path(result.final),
            result.history,
            Path(result.plot) if result.plot else None,
        ),
        key=f"{key}-report",
        description=f"training stage {stage}",
    )
    return result.summary()


@flow(name="train-curriculum", log_prints=True)
def train_curriculum(config: PipelineConfig = DEFAULT_CONFIG, restart: bool = False) -> list[dict[str, Any]]:
    """Every stage in order, each a subflow starting from the previous stage's final model."""
    curriculum = load_curriculum(config.train.curriculum)
    return [train_stage(s.name, config, restart=restart) for s in curriculum.stages]
