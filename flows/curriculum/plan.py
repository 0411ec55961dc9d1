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
from flows.curriculum.base import base_folder, build_base
from flows.curriculum.fingerprint import JUDGED, base_inputs, stage_inputs
from flows.curriculum.layout import stage_paths
from flows.curriculum.mixture import CurriculumData, run_data
from flows.curriculum.settings import stage_train_config
from flows.datasets import GENERAL, KINDS, PRODUCERS, dataset_name, kind_of, produced
from flows.errors import ConfigError, InputError
from flows.lineage import fingerprint, reason
from flows.store import DatasetStore
from m1model.policy import checkpoint_id, recorded

log = logging.getLogger("m1.train")


def active_curriculum(config: PipelineConfig, builds_curated: bool = False) -> tuple[Curriculum, list[str]]:
    """The configured curriculum without what this config switches off (see `Curriculum.active`), and
    without training on the general tasks when the run's judge fails its gate (`general_gate`: it does not
    beat the trivial judges on the balanced measures, or does not order the starting checkpoint's own
    answers as their rule grade does: its reward would be noise or bias): the stages that
    need them are off and the notes say why with the numbers, while their dataset stays (the base's warm
    start reads it whatever the gate says, so the gate never rebuilds the base, and held-out general items
    are still scored before and after).

    A curated dataset the store lacks is dropped as well (its domains leave the mixtures, a stage left
    with nothing is skipped), with a note saying so: the training commands build the generated datasets
    they lack but never curate the user's data. ``builds_curated`` is for `m1 run`, which curates first."""
    configured = load_curriculum(config.train.curriculum)
    gate = general_gate(config, configured)
    store = DatasetStore(config.home)

    def missing(kind: str) -> bool:
        return (
            not builds_curated
            and kind in KINDS
            and kind not in PRODUCERS
            and store.latest(dataset_name(config.name, kind)) is None
        )

    def why(kind: str) -> str:
        if missing(kind):
            return (
                f"not in the store ({dataset_name(config.name, kind)}: `m1 curate run` or `m1 run` builds it)"
            )
        return "its flow is switched off"

    def trained(kind: str) -> bool:
        return not (kind == GENERAL and gate)

    try:
        curriculum, notes = configured.active(
            lambda kind: produced(config, kind) and not missing(kind), why, trained
        )
    except ConfigError:
        if not any(missing(kind_of(d) or "") for d in configured.datasets):
            raise
        # every stage needs data no one built: keep it, so that reading it says which and how to build it
        curriculum, notes = configured.active(lambda kind: produced(config, kind), why, trained)
    if gate:
        notes.insert(0, f"general tasks: not trained on, the run's judge fails its gate ({gate})")
    return curriculum, notes


def general_gate(config: PipelineConfig, curriculum: Curriculum | None = None) -> str | None:
    """Why the general domain is not trained on, or None: the judge fails its balanced measures
    (`flows.genrm.flow.judge_gate`, for the verifier the curriculum scores it with), or its order of the
    starting checkpoint's own answers once that is measured (flows/curriculum/policy_gate.py)."""
    # heavy: prefect, scipy, numpy
    from flows.curriculum.policy_gate import policy_gate
    from flows.genrm.flow import judge_gate

    if not produced(config, GENERAL):
        return None
    curriculum = curriculum or load_curriculum(config.train.curriculum)
    verifier = curriculum.verifier_names().get(GENERAL, "genrm")
    if not verifier.startswith(JUDGED):  # scored by a rule: no judge to gate
        return None
    return judge_gate(config, verifier) or policy_gate(config, curriculum)


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
    inputs: dict[str, Any] | None = None  # what it should be built from (flows/lineage.py)
    reason: str = ""  # why it is stale or pending, "" when done


def _why(rec: dict[str, Any], inputs: dict[str, Any]) -> str:
    """What changed since the recorded build (a record from before inputs were kept says only that)."""
    if "inputs" not in rec:
        return "built before its inputs were recorded"
    return reason(rec["inputs"], inputs)


def base_state(config: PipelineConfig, refs: list[str], store: DatasetStore) -> tuple[str, str, str]:
    """The base's (expected fingerprint, state, reason): "done" when its record matches."""
    inputs = base_inputs(config, base_refs(store, refs))
    fp = fingerprint(inputs)
    folder = base_folder(config)
    rec = recorded(folder) if (folder / "config.json").exists() else {}
    if rec.get("fingerprint") == fp:
        return fp, "done", ""
    return fp, ("stale" if rec else "pending"), (_why(rec, inputs) if rec else "not built yet")


def plan(
    config: PipelineConfig, curriculum: Curriculum, refs: list[str], store: DatasetStore
) -> list[StagePlan]:
    """Every stage's expected fingerprint, from the config and the current dataset versions alone, and
    whether its final model matches it: done, stale (built from something else, or after an earlier
    stage that is not done) or pending; with the reason for each that is not done."""
    if config.train.init_from:
        start_id, start, note = checkpoint_id(Path(config.train.init_from)), config.train.init_from, ""
    else:
        start_id, state, why = base_state(config, refs, store)
        start, note = "base", ("" if state == "done" else f"the base model is rebuilt ({why})")
    out: list[StagePlan] = []
    previous, behind = None, ""  # behind: the earlier stage that is not done (so this one reruns too)
    for stage in curriculum.stages:
        tc = stage_train_config(config.train, stage, curriculum)
        inputs = stage_inputs(config, stage.model_dump(mode="json"), tc, curriculum.verifiers, refs, start_id)
        fp = fingerprint(inputs)
        final = stage_paths(config, stage.name).final
        rec = recorded(final) if (final / "config.json").exists() else {}
        if not rec:
            state, why = "pending", "not built yet"
        elif rec.get("fingerprint") != fp:
            state, why = "stale", _why(rec, inputs)
            if note:  # say where the new start comes from
                why = why.replace("start checkpoint replaced", f"start checkpoint replaced: {note}")
        elif behind:
            state, why = "stale", f"an earlier stage ({behind}) is rerun first"
        else:
            state, why = "done", ""
        out.append(StagePlan(stage.name, fp, start, state, rec.get("fingerprint"), previous, inputs, why))
        start_id, start, previous = fp, stage.name, fp
        if state != "done":
            behind = behind or stage.name
            note = f"stage {stage.name} is rerun"
        else:
            note = ""
    return out


def stage_table(config: PipelineConfig) -> list[dict[str, Any]]:
    """Each stage of the configured curriculum: mixture, window, steps, start, and state (done, stale,
    pending) against the current config and dataset versions, with the reason for a stage that is not
    done. Used by `list-stages`, the run's plan and the UI."""
    curriculum, _ = active_curriculum(config)
    store = DatasetStore(config.home)
    missing = ""
    try:
        refs = run_data(config, curriculum, store).refs
        states = {p.name: p for p in plan(config, curriculum, refs, store)}
    except InputError as exc:  # datasets not built yet: nothing can be done or stale
        states, missing = {}, str(exc)
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
                "state": p.state if p else "pending",
                "reason": p.reason if p else f"datasets missing: {missing}",
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
