"""The training flows: the SFT warm start, one curriculum stage, the whole curriculum.

Each is a Prefect flow run named after the run (``{name}-{stage}``), visible in the UI with its
progress, metrics table, report (curves, mixture weights, held-out pass rates) and sampled responses.
The work itself is the stage library in flows/curriculum/ (`run_stage`, `build_base`, `plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.artifacts import artifact_key, embed_png
from flows.atomic import atomic_path
from flows.config import PipelineConfig
from flows.curriculum import policy_gate
from flows.curriculum.base import build_base
from flows.curriculum.layout import train_root
from flows.curriculum.mixture import require_dataset, run_data
from flows.curriculum.plan import active_curriculum, base_refs, base_state, stage_table
from flows.curriculum.report import metrics_table, plot_sft, stage_markdown
from flows.curriculum.stage import Metrics, StepCallback, run_stage, validation_rows
from flows.curriculum.step_log import SampleLog
from flows.datasets import PRODUCERS, kind_of, producer, resolve
from flows.errors import ConfigError
from flows.model_settings import use_threads
from flows.progress import ProgressFn, prefect_progress, step_listener
from flows.store import DatasetStore
from m1model.policy import recorded

DEFAULT_CONFIG = PipelineConfig()  # the flows' parameter default (never mutated)


def _prefect_progress(phase_totals: dict[str, int]) -> StepCallback:
    """Report steps to a Prefect progress artifact per phase and the run log, and to the CLI's listener."""
    artifacts: dict[str, ProgressFn] = {}
    logger = get_run_logger()
    listener = step_listener.get()

    def on_step(phase: str, m: Metrics) -> None:
        total = phase_totals.get(phase, 0)
        if phase not in artifacts:
            what = "SFT warm start steps" if phase == "sft" else f"training stage {phase}: RL steps"
            artifacts[phase] = prefect_progress(f"{what} done")
        artifacts[phase](m["step"], total)
        if phase == "sft":
            if int(m["step"]) % 50 == 0 or int(m["step"]) == total:
                logger.info("sft step %d/%d: loss %.4f", int(m["step"]), total, m["loss"])
        else:
            update = f"loss {m['loss']:.4f}" if "loss" in m else "no informative group, update skipped"
            logger.info(
                "%s step %d/%d: reward %.3f, length %.1f, window %d, rollout %.0f tok/s, %s",
                phase,
                int(m["step"]),
                total,
                m["reward_mean"],
                m["response_len_mean"],
                int(m["max_new_tokens"]),
                m.get("rollout_tokens_per_s", 0.0),
                update,
            )
        if listener is not None:
            listener(phase, m)

    return on_step


def build_missing_task_data(config: PipelineConfig, curriculum) -> list[str]:
    """The generated datasets (logic, code, SWE, general) this curriculum reads that the store lacks,
    built by their own flows as `m1 run` builds them, so that `m1 curate run` then `m1 train
    curriculum` works on a fresh store. Curated data is the user's and is never made up here (a
    curriculum without it drops it: `active_curriculum`)."""
    store, missing = DatasetStore(config.home), {}
    for entry in curriculum.datasets:
        name = resolve(entry, config.name)
        if kind_of(entry) in PRODUCERS and store.latest(name) is None:
            missing[name] = kind_of(entry)
        else:  # a user's own store dataset the curriculum names: fail before minutes of building the rest
            require_dataset(store, curriculum, name)
    for name, kind in missing.items():
        get_run_logger().info("%s is not in the store yet: building it (%s)", name, PRODUCERS[kind])
        producer(kind)(config)
    return list(missing)


def training_curriculum(config: PipelineConfig, gate_on_policy: bool = True):
    """The curriculum a training flow runs, after building the generated datasets it lacks (which may
    switch stages off: a judge that does not beat the trivial judges) and, with ``gate_on_policy``,
    measuring the judge on the starting checkpoint's answers (its second gate, flows/curriculum/
    policy_gate.py: the warm start is built or reused for it)."""
    curriculum, notes = active_curriculum(config)
    if build_missing_task_data(config, curriculum):
        curriculum, notes = active_curriculum(config)
    if gate_on_policy and (verifier := policy_gate.unmeasured(config, curriculum)):
        warm_start(config)  # the checkpoint to measure (reused when built)
        # None: a `train.init_from` that is no checkpoint, which fails in its stage with that stage's message
        if (inputs := policy_gate.measure_inputs(config, verifier)) is not None:
            _measure_policy_gate(config, verifier, inputs)
            curriculum, notes = active_curriculum(config)
    return curriculum, notes


def _measure_policy_gate(config: PipelineConfig, verifier: str, inputs: dict[str, Any]) -> None:
    logger = get_run_logger()
    logger.info(
        "judge: measuring its order of %s's answers to %d general prompts (the second gate)",
        policy_gate.start_policy(config),
        config.genrm.policy_gate_prompts,
    )
    order = policy_gate.measure(config, verifier, inputs)
    create_table_artifact(
        order.table(),
        key=artifact_key(config.name, "genrm-on-policy"),
        description="the judge on the starting checkpoint's own answers, beside the rule grade",
    )
    why = order.gate(config.genrm.policy_gate_margin)
    logger.info(
        "judge on the policy's answers: %s",
        f"not fit to train on: {why}" if why else f"fit to train on: {order.describe()}",
    )


@flow(name="sft-warm-start", flow_run_name="{config.name}-sft", log_prints=True)
def warm_start(config: PipelineConfig = DEFAULT_CONFIG) -> dict[str, Any]:
    """The first stage's start: a tokenizer and fresh model trained with SFT on the curriculum's training
    items (reused while its settings and data are unchanged), or `train.init_from` when set."""
    if config.train.init_from:
        return {"base": config.train.init_from, "built": False, "sft": []}
    use_threads(config.train)
    logger = get_run_logger()
    curriculum, _ = training_curriculum(config, gate_on_policy=False)  # the gate measures this model
    store = DatasetStore(config.home)
    data = run_data(config, curriculum, store)
    overlaps = save_overlaps(config, data)
    if data.overlaps is not None and data.overlaps.height:
        logger.info(
            "%d items left out as duplicates of an earlier dataset's: %s", data.overlaps.height, overlaps
        )
    _, state, why = base_state(config, data.refs, store)
    if state != "done":
        logger.info("base model: building (%s)", why)
    on_step = _prefect_progress({"sft": config.train.sft_steps})
    folder, built = build_base(config, data, base_refs(store, data.refs), on_step)
    logger.info("base model %s: %s", "built" if built else "unchanged, reused", folder)
    history = recorded(folder).get("sft", [])
    if history:
        plot = folder.parent / "sft.png"
        if built or not plot.is_file():
            plot_sft(history, plot, f"{config.name}: SFT warm start")
        create_markdown_artifact(
            f"# SFT warm start `{folder}`\n\n{len(history)} steps on {data.train.height} training items, loss "
            f"{history[0]['loss']:.3f} -> {history[-1]['loss']:.3f}{'' if built else ' (reused: unchanged)'}"
            f"\n\n{embed_png(plot, 'sft loss')}\n",
            key=artifact_key(config.name, "sft"),
            description="SFT warm start",
        )
    return {
        "base": str(folder),
        "built": built,
        "sft": history,
        "built_because": recorded(folder).get("reason", ""),
        "overlaps": {"file": str(overlaps), "rows": 0 if data.overlaps is None else data.overlaps.height},
    }


def save_overlaps(config: PipelineConfig, data) -> Path:
    """The items left out as duplicates of an earlier dataset's (flows/curriculum/overlap.py), with
    their reasons, in ``runs/<run>/train/overlaps.parquet`` (rewritten only when they change)."""
    path = train_root(config) / "overlaps.parquet"
    frame = data.overlaps if data.overlaps is not None else pl.DataFrame()
    if path.is_file() and pl.read_parquet(path).equals(frame):
        return path
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp)
    return path


@flow(name="train-stage", flow_run_name="{config.name}-{stage}", log_prints=True)
def train_stage(stage: str, config: PipelineConfig = DEFAULT_CONFIG, restart: bool = False) -> dict[str, Any]:
    """One curriculum stage as a flow run: resumed from its own checkpoints while nothing it depends on
    changed, rerun from its start otherwise; rerunnable alone from the UI."""
    use_threads(config.train)
    curriculum, notes = training_curriculum(config)
    if stage in curriculum.switched_off:  # the user named it: say why it cannot run
        raise ConfigError(
            f"stage {stage!r} of curriculum {curriculum.name!r} is switched off: {'; '.join(notes)}"
        )
    steps = curriculum.stages[curriculum.index(stage)].steps
    progress = _prefect_progress({"sft": config.train.sft_steps, stage: steps})
    result = run_stage(
        config, stage, restart=restart, on_step=progress, curriculum=curriculum, logger=get_run_logger()
    )
    summary = result.summary()
    key = artifact_key(config.name, stage)
    create_table_artifact(
        metrics_table(result.history),
        key=f"{key}-metrics",
        description=f"per-step RL metrics of stage {stage}",
    )
    create_markdown_artifact(
        stage_markdown(summary, result.history), key=f"{key}-report", description=f"training stage {stage}"
    )
    if rows := validation_rows(summary):
        create_table_artifact(
            rows, key=f"{key}-validation", description=f"held-out pass rates, stage {stage}"
        )
    if result.samples:
        samples = SampleLog.read(result.samples)[-50:]
        create_table_artifact(
            samples, key=f"{key}-samples", description=f"sampled responses of stage {stage}"
        )
    publish_status(config)
    return summary


@flow(name="train-curriculum", flow_run_name="{config.name}-curriculum", log_prints=True)
def train_curriculum(config: PipelineConfig = DEFAULT_CONFIG, restart: bool = False) -> list[dict[str, Any]]:
    """Every stage in order, each a subflow starting from the previous stage's final model; a stage this
    config or the store switches off (a producer off, a dataset no one built, a judge that loses to a
    constant) is skipped with a line that says why."""
    curriculum, notes = training_curriculum(config)
    for note in notes:
        get_run_logger().info(note)
    return [train_stage(s.name, config, restart=restart) for s in curriculum.stages]


def publish_status(config: PipelineConfig) -> None:
    """The curriculum's state as a table artifact, so the UI shows which stages are stale and why."""
    rows = [{k: r[k] for k in ("stage", "steps", "start", "state", "reason")} for r in stage_table(config)]
    create_table_artifact(
        rows, key=artifact_key(config.name, "curriculum-status"), description="curriculum stages"
    )
