"""Running one curriculum stage, the library behind the `train-stage` flow and `m1 train stage`.

A stage reads its curriculum's datasets from the store (the held-out split set aside), weight-samples
its task mixture, scores responses with each domain's verifier, and trains from its start checkpoint:
the previous stage's final model, or for the first stage the base (`flows.curriculum.base`). Outputs
live under ``$M1_HOME/runs/<run>/train/<stage>/``:

    checkpoints/step-NNNNNN/   resumable trainer state (model, AdamW, step, RNG, hook states)
    checkpoints/FINGERPRINT    what those checkpoints were trained from; a change discards them
    final/                     the stage's model + tokenizer (HF format) + training.json
    stage.json, samples.jsonl  summary, and sampled responses with their rewards per step
    curves.png, weights.png    reward/loss/length/clip curves; mixture weights and per-key pass rates

A stage is resumed from its newest checkpoint when nothing it depends on changed; otherwise (a new
setting, new dataset versions, a replaced start checkpoint) it starts over, and `plan` reports every
later stage as stale until it is rerun.

With ``train.nproc > 1`` `run_stage` launches torchrun (`flows.curriculum.launch`) and each rank (`.worker`) runs
`run_stage` again inside the process group: every rank trains, rank 0 alone writes (checkpoints, final
model, stage.json, samples, plots) and validates, and every rank resumes from what rank 0 wrote.

Not a flow itself: the stage flow (flows/train.py) and the torchrun workers both run it.
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.atomic import atomic_write_text
from flows.config import PipelineConfig, TrainConfig
from flows.curriculum import Curriculum, Stage
from flows.curriculum.evaluation import benchmark_sets, eval_sets, overfitting, validate
from flows.curriculum.fingerprint import judged
from flows.curriculum.launch import launch
from flows.curriculum.layout import StagePaths, stage_paths
from flows.curriculum.mixture import difficulties, dynamic_mixture, run_data, stage_items
from flows.curriculum.plan import active_curriculum, plan, start_checkpoint
from flows.curriculum.prompts import encode_prompt
from flows.curriculum.report import length_bias_notes, plot_curves, plot_length_bias, plot_weights
from flows.curriculum.rewards import domain_reward_fn
from flows.curriculum.settings import length_bias_settings, rl_config, stage_train_config
from flows.curriculum.step_log import SampleLog, tensorboard_writer, write_scalars
from flows.errors import ConfigError, InputError
from flows.genrm.labels import rule_success
from flows.genrm.serve import judge_for, share_judge
from flows.store import DatasetStore
from m1model import Engine
from m1model.policy import CheckpointError, load_policy, recorded, save_policy
from m1model.rl import distributed
from m1model.rl.distributed import replica_engine
from m1model.rl.length_bias import LengthBias, LengthSeeking
from m1model.rl.rollout import PromptPool
from m1model.rl.trainer import RLTrainer
from m1model.vllm_backend import VLLMEngine

Metrics = dict[str, float]
StepCallback = Callable[[str, Metrics], None]  # (phase: "sft" | stage name, metrics)
log = logging.getLogger("m1.train")


# -- running a stage -------------------------------------------------------------------------------------


@dataclass
class StageResult:
    stage: str
    start_from: str
    final: str
    history: list[Metrics]
    plots: list[str] = field(default_factory=list)
    validation: dict[str, dict[str, float]] = field(default_factory=dict)  # {"start": {...}, "end": {...}}
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    samples: str = ""
    reason: str = ""  # why its final model was (re)built: "first build", what changed, "--restart"
    reused: bool = False  # this run reused it as it was (done, built from the same inputs)

    @classmethod
    def read(cls, paths: StagePaths) -> StageResult | None:
        """The result a finished stage recorded (stage.json and its final model's record), or None."""
        summary = paths.root / "stage.json"
        if not summary.is_file() or not (paths.final / "config.json").is_file():
            return None
        s = json.loads(summary.read_text())
        return cls(
            s["stage"],
            s["start_from"],
            s["final"],
            recorded(paths.final).get("history", []),
            s.get("plots", []),
            s.get("validation", {}),
            s.get("warnings", []),
            s.get("notes", []),
            s.get("samples", ""),
            recorded(paths.final).get("reason", ""),
            reused=True,
        )

    def summary(self) -> dict[str, Any]:
        last = self.history[-1] if self.history else {}
        val = {k: v.get("val/all") for k, v in self.validation.items()}
        return {
            "stage": self.stage,
            "start_from": self.start_from,
            "final": self.final,
            "steps": len(self.history),
            "reward_first": self.history[0]["reward_mean"] if self.history else None,
            "reward_last": last.get("reward_mean"),
            "val_start": val.get("start"),
            "val_end": val.get("end"),
            "validation": self.validation,
            "warnings": self.warnings,
            "notes": self.notes,
            "plots": self.plots,
            "samples": self.samples,
            "reason": self.reason,
            "reused": self.reused,
        }


def run_stage(
    config: PipelineConfig,
    stage_name: str,
    *,
    restart: bool = False,
    on_step: StepCallback | None = None,
    curriculum: Curriculum | None = None,
    logger: logging.Logger | logging.LoggerAdapter = log,
) -> StageResult:
    """Train one stage: resume from its own newest checkpoint when nothing it depends on changed (and
    not ``restart``), else start over from its start checkpoint; write its final model and report."""

    ctx = distributed.current()
    notes: list[str] = []
    if curriculum is None:
        curriculum, notes = active_curriculum(config)
    index = curriculum.index(stage_name)
    stage = curriculum.stages[index]
    store = DatasetStore(config.home)
    data = run_data(config, curriculum, store)
    entry = plan(config, curriculum, data.refs, store)[index]
    paths = stage_paths(config, stage.name)
    if not (restart or ctx.enabled) and entry.state == "done" and (done := StageResult.read(paths)):
        logger.info(
            "stage %s: done, built from the same inputs: reused (`--restart` trains it again)", stage.name
        )
        return done
    if config.train.nproc > 1 and not ctx.enabled:  # this process launches the ranks and waits
        if judged(curriculum.verifiers, {key.split("/")[0] for key in stage.mixture}):
            share_judge()  # the ranks find the run's judge through the environment
        result = launch("stage", config, stage=stage_name, restart=restart, on_step=on_step, logger=logger)
        return StageResult(**result)
    tc = stage_train_config(config.train, stage, curriculum)
    items_df, weights, item_notes = stage_items(data, stage)
    notes += item_notes
    for note in notes:
        logger.info(note)
    start = start_checkpoint(config, data, entry, store, on_step, logger)
    try:
        model, tokenizer = load_policy(start, device=ctx.device)
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    if ctx.is_main:
        _reset_if_changed(paths, entry, restart, logger)
    ctx.barrier()  # no rank looks for checkpoints before rank 0 has discarded stale ones
    sets = eval_sets(data.heldout, config.eval, domains=sorted(set(items_df["domain"])))
    sets |= benchmark_sets(config.data, config.eval.n_items)
    domains = set(items_df["domain"]) | {r["domain"] for rows in sets.values() for r in rows}
    names = {
        n
        for evaluation in (False, True)
        for d in domains
        if (n := curriculum.verifier_names(evaluation).get(d))
    }

    with judge_for(config, names) as judge_options:  # a served judge while judged domains train
        run = StageRun(
            config, curriculum, stage, tc, paths, model, tokenizer, judge_options, sets, start, ctx, logger
        )
        trainer = run.trainer(items_df, weights)
        val_start = run.validation_at_start()
        history = run.train(trainer, on_step)
        val_end = run.validate()
        policy = run.whole_policy()
    if not ctx.is_main:  # rank 0 writes the stage's outputs and reports
        return StageResult(stage.name, str(start), str(paths.final), history)
    overfit = overfitting(
        history, val_start.get("val/all"), val_end.get("val/all"), config.eval.overfit_tolerance
    )
    warnings = [w for w in (overfit, run.stopped) if w]
    notes += length_bias_notes(history, tc.length_bias.domains if run.length_bias else ())
    for warning in warnings:
        logger.warning("stage %s: %s", stage.name, warning)
    validation = {"start": val_start, "end": val_end}
    why = "--restart" if restart else ("first build" if entry.state == "pending" else entry.reason)
    save_policy(
        policy,
        tokenizer,
        paths.final,
        extra={
            "stage": stage.name,
            "fingerprint": entry.fingerprint,
            "inputs": entry.inputs,
            "reason": why,
            "start_from": str(start),
            "data": data.refs,
            "history": history,
            "validation": validation,
        },
    )
    result = StageResult(
        stage.name,
        str(start),
        str(paths.final),
        history,
        run.plots(history),
        validation,
        warnings,
        notes,
        str(paths.root / "samples.jsonl") if tc.samples_per_step else "",
        why,
    )
    atomic_write_text(paths.root / "stage.json", json.dumps(result.summary(), indent=2, default=str))
    return result


@dataclass
class StageRun:
    """The pieces of one stage's training, assembled: reward, hooks, trainer, validation, plots. Under
    torchrun each rank builds one; rank 0 alone validates and writes."""

    config: PipelineConfig
    curriculum: Curriculum
    stage: Stage
    tc: TrainConfig
    paths: StagePaths
    model: Any
    tokenizer: Any
    judge_options: dict[str, dict[str, Any]]
    sets: dict[str, list[dict]]  # the held-out evaluation sets
    start: Path
    ctx: Any  # m1model.rl.distributed context (one process: a trivial one)
    logger: Any = log
    stopped: str | None = None  # why the stage ended early (the length-bias alarm, on_alarm = stop)
    length_bias: Any = None
    trainer_: Any = None
    whole_copy: Any = None  # under FSDP: a whole replica on rank 0 for validation and the final model

    def reward_fn(self, domains, evaluation: bool = False):
        return domain_reward_fn(
            self.tokenizer, domains, self.curriculum, self.config, self.judge_options, evaluation
        )

    def whole_policy(self):
        """The policy with whole weights, on rank 0 (a collective under FSDP: every rank calls it)."""
        if self.whole_copy is None and not (self.ctx.enabled and self.tc.parallel == "fsdp"):
            return self.model
        weights = self.trainer_.parallel.full_state_dict()
        if self.whole_copy is not None:
            self.whole_copy.load_state_dict(weights)
        return self.whole_copy

    def validate(self) -> Metrics:
        if not self.sets:
            return {}
        policy = self.whole_policy()
        if not self.ctx.is_main:  # rank 0 validates; the others wait for it at their next collective
            return {}
        domains = {r["domain"] for rows in self.sets.values() for r in rows}
        max_tokens = self.config.eval.max_new_tokens
        return validate(
            policy, self.tokenizer, self.sets, max_tokens, self.reward_fn(domains, evaluation=True)
        )

    def validation_at_start(self) -> Metrics:
        """Measured once per stage run: a resumed stage keeps what its first start measured."""
        path = self.paths.checkpoints / "validation-start.json"
        if self.ctx.gather(path.exists())[0]:  # rank 0's view decides for all
            return json.loads(path.read_text()) if self.ctx.is_main else {}
        values = self.validate()
        if self.ctx.is_main:
            atomic_write_text(path, json.dumps(values))
        return values

    def periodic_validation(self, _trainer, metrics: Metrics) -> Metrics:
        every = self.config.eval.every
        return self.validate() if every and int(metrics["step"]) % every == 0 else {}

    def trainer(self, items_df, weights):
        rows = items_df.to_dicts()
        reward_fn = self.reward_fn({r["domain"] for r in rows})
        hooks: list = [dynamic_mixture(self.stage, rows, difficulties(items_df))]
        lb = self.tc.length_bias
        if lb.enabled and set(lb.domains) & {r["domain"] for r in rows}:
            self.length_bias = LengthBias(
                length_bias_settings(lb),
                decode=lambda ids: self.tokenizer.decode(ids, skip_special_tokens=True),
                encode=lambda text: self.tokenizer.encode(text, add_special_tokens=False),
                success=rule_success,
            )
            reward_fn = self.length_bias.wrap(reward_fn)
            hooks.append(self.length_bias.hook)
        pool = PromptPool([encode_prompt(self.tokenizer, r) for r in rows], rows, weights)
        if self.ctx.enabled and self.tc.parallel == "fsdp" and self.ctx.is_main:
            self.whole_copy = copy.deepcopy(self.model)  # FSDP shards `model` in the trainer
        window = max(map(len, pool.prompts)) + self.stage.max_new_tokens
        trainer = self.trainer_ = RLTrainer(
            self.model,
            rollout_engine(self.tc, self.model, self.start, self.ctx, window),
            reward_fn,
            pool,
            rl_config(self.tc, self.tokenizer, self.stage),
            checkpoint_dir=self.paths.checkpoints,
            checkpoint_every=self.tc.checkpoint_every,
            keep_last=self.tc.keep_checkpoints,
            step_hooks=hooks,
            after_step=[self.periodic_validation],
            dist=self.ctx,
            strategy=self.tc.parallel,
        )
        if trainer.resume():
            self.logger.info("stage %s: resuming from step %d", self.stage.name, trainer.step)
        if self.tc.samples_per_step and self.ctx.is_main:
            log_file = self.paths.root / "samples.jsonl"
            trainer.step_hooks.append(
                SampleLog(log_file, self.tokenizer, self.tc.samples_per_step, trainer.step)
            )
        return trainer

    def train(self, trainer, on_step: StepCallback | None) -> list[Metrics]:
        """The stage's RL steps (to its budget, or until the length-bias alarm stops it), then a
        checkpoint of the last step."""
        main = self.ctx.is_main
        writer = (
            tensorboard_writer(tb_dir(self.config, self.stage.name)) if self.tc.tensorboard and main else None
        )
        notify = on_step or (lambda phase, m: None)

        def step_done(m: Metrics) -> None:
            if writer is not None:
                write_scalars(writer, m)
            notify(self.stage.name, m)

        try:
            trainer.train(self.stage.steps, on_step=step_done)
        except LengthSeeking as exc:
            self.stopped = str(exc)
        finally:
            if writer is not None:
                writer.close()
        last = self.paths.checkpoints / f"step-{trainer.step:06d}"
        if trainer.step and not self.ctx.gather(last.exists())[0]:
            trainer.save()
        return trainer.history

    def plots(self, history: list[Metrics]) -> list[str]:
        if not history:
            return []
        title, root = f"{self.curriculum.name} / {self.stage.name}", self.paths.root
        plots = [
            plot_curves(history, root / "curves.png", title),
            plot_weights(history, root / "weights.png", title),
        ]
        if any(k.startswith("length_bias/") for k in history[-1]):
            plots.append(plot_length_bias(history, root / "length_bias.png", title))
        return [str(p) for p in plots]


def rollout_engine(tc: TrainConfig, model, start: Path, ctx, max_model_len: int):
    """What samples the rollouts: the bundled engine on the training model itself; under FSDP on a
    whole replica the trainer refreshes after each update; or vLLM (``train.rollout = "vllm"``) started
    from the stage's start checkpoint, into which the trainer pushes each update."""
    if tc.rollout == "vllm":
        try:
            return VLLMEngine(
                start,
                gpu_memory_utilization=tc.vllm_gpu_memory,
                max_model_len=max_model_len,
                seed=tc.seed + ctx.rank,
            )
        except ImportError:
            raise ConfigError("train.rollout = 'vllm' needs vLLM: pip install 'm1-pipeline[gpu]'") from None
        except ValueError as exc:
            raise ConfigError(f"train.rollout = 'vllm': {exc}") from None
    kv = {"kv_cache_tokens": max(1 << 16, max_model_len)}  # the stage's longest prompt + window fits
    if ctx.enabled and tc.parallel == "fsdp":
        return replica_engine(model, **kv)
    return Engine(model, **kv)


def tb_dir(config: PipelineConfig, stage: str) -> Path:
    return stage_paths(config, stage).root.parent.parent / "tensorboard" / stage


def _reset_if_changed(paths, entry, restart: bool, logger=log) -> None:
    """Keep the stage's checkpoints only if they were trained from exactly what it is built from now."""
    marker, fingerprint = paths.checkpoints / "FINGERPRINT", entry.fingerprint
    old = marker.read_text().strip() if marker.exists() else None
    if restart or (old is not None and old != fingerprint):
        why = "--restart" if restart else (entry.reason or "its settings, data or start checkpoint changed")
        if paths.checkpoints.exists():
            logger.info("stage %s: discarding its checkpoints (%s)", paths.root.name, why)
        for folder in (paths.checkpoints, paths.final):  # renamed away first: a kill leaves no half
            gone = folder.with_name(f".{folder.name}.discarded")
            shutil.rmtree(gone, ignore_errors=True)
            if folder.exists():
                folder.rename(gone)
            shutil.rmtree(gone, ignore_errors=True)
    atomic_write_text(marker, fingerprint + "\n")


def validation_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per evaluation set: pass rate at the stage's start and end."""
    val = result.get("validation") or {}
    start, end = val.get("start", {}), val.get("end", {})
    return [
        {"set": key.removeprefix("val/"), "start": start.get(key), "end": end.get(key)}
        for key in sorted(set(start) | set(end))
    ]
