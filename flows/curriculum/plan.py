"""Which stages to run and what each is built from: the configured curriculum less what the run switches
off, each stage's expected fingerprint and its state against what is on disk (done, stale, pending), and
the checkpoint a stage starts from (the base, ``train.init_from``, or the previous stage's final model).
`m1 train list-stages`, the UI and `run_stage` read the same plan.

Not a flow: what the training flows decide to run, shared with `m1 train list-stages`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from flows.config import PipelineConfig
from flows.curriculum import Curriculum, load_curriculum
from flows.curriculum.base import build_base
from flows.curriculum.fingerprint import base_fingerprint, stage_fingerprint
from flows.curriculum.layout import stage_paths
from flows.curriculum.mixture import CurriculumData, load_data
from flows.curriculum.settings import stage_train_config
from flows.datasets import GENERAL, produced
from flows.errors import InputError
from flows.store import DatasetStore
from m1model.policy import checkpoint_id, recorded

log = logging.getLogger("m1.train")


def active_curriculum(config: PipelineConfig) -> tuple[Curriculum, list[str]]:
    """The configured curriculum without what this config switches off (see `Curriculum.active`), and
    without training on the general tasks when the run's judge does not beat the trivial judges on the
    balanced measures (`flows.genrm.flow.judge_gate`: its reward would be noise or bias): the stages that
    need them are off and the notes say why with the numbers, while their dataset stays (the base's warm
    start reads it whatever the gate says, so the gate never rebuilds the base, and held-out general items
    are still scored before and after)."""
    # heavy: prefect, scipy, numpy
    from flows.genrm.flow import judge_gate

    gate = judge_gate(config) if produced(config, GENERAL) else None
    curriculum, notes = load_curriculum(config.train.curriculum).active(
        lambda kind: produced(config, kind), lambda kind: not (kind == GENERAL and gate)
    )
    if gate:
        notes.insert(
            0, f"general tasks: not trained on, the run's judge does not beat the trivial judges ({gate})"
        )
    return curriculum, notes


# -- what each stage should be built from ---------------------------------------------------------------


def base_refs(store: DatasetStore, refs: Sequence[str]) -> list[str]:
    """The dataset versions the base trains on: a version a pass-rate filter derived from an earlier one
    counts as that one, since the filter used the base itself (otherwise the base would go stale by
    being used)."""
    out = []
    for ref in refs:
        name, version = ref.rsplit("@v", 1)
        out.append(store.manifest(name, int(version)).params.get("filtered_from", ref))
    return out


@dataclass
class StagePlan:
    name: str
    fingerprint: str  # what the stage should be built from now
    start: str  # where it starts: "base", a checkpoint folder, or the previous stage's name
    state: Literal["done", "stale", "pending"]
    recorded: str | None = None  # what its final model was built from, if it exists
    previous: str | None = None  # the previous stage's expected fingerprint (None for the first)


def plan(
    config: PipelineConfig, curriculum: Curriculum, refs: list[str], store: DatasetStore
) -> list[StagePlan]:
    """Every stage's expected fingerprint, from the config and the current dataset versions alone, and
    whether its final model matches it: done, stale (built from something else, or after an earlier
    stage that is not done) or pending."""
    if config.train.init_from:
        start_id, start = checkpoint_id(Path(config.train.init_from)), config.train.init_from
    else:
        start_id, start = base_fingerprint(config, base_refs(store, refs)), "base"
    out: list[StagePlan] = []
    previous, behind = None, False  # behind: an earlier stage is not done, so this one must rerun too
    for stage in curriculum.stages:
        tc = stage_train_config(config.train, stage, curriculum)
        fp = stage_fingerprint(
            stage.model_dump(), tc, curriculum.verifiers, config.plugin_dirs, refs, start_id
        )
        final = stage_paths(config, stage.name).final
        rec = recorded(final).get("fingerprint") if (final / "config.json").exists() else None
        state = "pending" if rec is None else ("done" if rec == fp and not behind else "stale")
        behind = behind or state != "done"
        out.append(StagePlan(stage.name, fp, start, state, rec, previous))
        start_id, start, previous = fp, stage.name, fp
    return out


def stage_table(config: PipelineConfig) -> list[dict[str, Any]]:
    """Each stage of the configured curriculum: mixture, window, steps, start, and state (done, stale,
    pending) against the current config and dataset versions. Used by `list-stages` and the UI."""
    curriculum, _ = active_curriculum(config)
    store = DatasetStore(config.home)
    try:
        refs = load_data(store, curriculum, config.name, config.eval.fraction).refs
        states = {p.name: p for p in plan(config, curriculum, refs, store)}
    except InputError:  # datasets not built yet: nothing can be done or stale
        states = {}
    rows = []
    for i, s in enumerate(curriculum.stages):
        p = states.get(s.name)
        rows.append(
            {
                "stage": s.name,
                "mixture": s.mixture,
                "window": [s.start_new_tokens, s.max_new_tokens],
                "window_step": s.window_step,
                "steps": s.steps,
                "overrides": s.overrides,
                "start": curriculum.stages[i - 1].name if i else (config.train.init_from or "base"),
                "done": p is not None and p.state == "done",
                "state": p.state if p else "pending (datasets missing)",
            }
        )
    return rows


def start_checkpoint(
    config: PipelineConfig,
    data: CurriculumData,
    entry: StagePlan,
    store: DatasetStore,
    on_step=None,
    logger=log,
) -> Path:
    if entry.start == "base":
        folder, built = build_base(config, data, base_refs(store, data.refs), on_step)
        if built:
            logger.info("built the base model (tokenizer, fresh model, SFT warm start) in %s", folder)
        return folder
    if entry.start == config.train.init_from:
        return Path(entry.start)
    final = stage_paths(config, entry.start).final
    if not (final / "config.json").exists():
        raise InputError(
            f"stage {entry.name} starts from stage {entry.start}'s final model, but {final} does not exist: "
            f"run `m1 train stage {entry.start}` first"
        )
    if recorded(final).get("fingerprint") != entry.previous:
        raise InputError(
            f"stage {entry.name} starts from stage {entry.start}, which is stale (its settings, data or start "
            f"changed since it ran): run `m1 train stage {entry.start}` first"
        )
    return final
