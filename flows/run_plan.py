"""`m1 run --plan`: what `m1 run` would build, train and evaluate, and why, read from the config and the
store alone (flows/lineage.py); nothing runs, nothing is written, no Prefect server starts.

Each thing is reused (built from the same inputs), built (with what changed), or, downstream of
something that is rebuilt first, "maybe": a dataset rebuilt from changed inputs may come out the same
(then the store keeps its version and nothing after it reruns), which only building it tells.

Not a flow: the plan the CLI prints before (or instead of) running the DAG.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from flows.config import PipelineConfig
from flows.curate.flow import curate_flow, curation_inputs
from flows.curriculum.base import base_folder
from flows.curriculum.evaluation import benchmark_sets, eval_sets
from flows.curriculum.layout import stage_paths
from flows.curriculum.mixture import run_data
from flows.curriculum.plan import active_curriculum, base_state, plan
from flows.datasets import CURATED, GENERAL, PRODUCERS, dataset_name, produced, producer
from flows.errors import InputError
from flows.evaluate import evaluation_inputs
from flows.genrm.files import member_hashes
from flows.genrm.judge_cache import judge_is_current
from flows.lineage import fingerprint
from flows.store import DatasetStore


@dataclass
class Step:
    thing: str
    action: str  # reuse, build, train, evaluate, maybe
    why: str


def _dataset(store: DatasetStore, name: str, writer: str, inputs: dict) -> Step:
    if (record := store.reusable(name, writer, inputs)) is not None:
        return Step(
            f"{name}@v{record['version']}", "reuse", f"same inputs (built because: {record['reason']})"
        )
    return Step(name, "build", store.why_rebuilt(name, writer, inputs))


def _judge(config: PipelineConfig) -> Step:
    if judge_is_current(config):
        return Step("judge", "reuse", "same settings and judging code")
    hashes = member_hashes(config)
    if all(h is None for h in hashes):
        return Step("judge", "train", "not trained yet")
    if None in hashes:
        return Step(
            "judge", "train", f"{hashes.count(None)} of the ensemble's {len(hashes)} judges not trained yet"
        )
    return Step("judge", "train", "its settings or judging code changed")


def _evaluation(config, label: str, checkpoint: Path, curriculum, data) -> Step:
    record_file = DatasetStore(config.home).root / "runs" / config.name / "eval" / f"{label}.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    sets = eval_sets(data.heldout, config.eval) | benchmark_sets(config.data, config.eval.n_items)
    domains = {r["domain"] for rows in sets.values() for r in rows}
    inputs = evaluation_inputs(config, str(checkpoint), curriculum, data.refs, domains)
    if record.get("fingerprint") == fingerprint(inputs):
        return Step(f"evaluation {label}", "reuse", "same checkpoint, data and settings")
    return Step(
        f"evaluation {label}", "evaluate", "not evaluated yet" if not record else "its inputs changed"
    )


def run_plan(config: PipelineConfig) -> list[Step]:
    """Every thing `m1 run` would touch, in DAG order, with its action and why."""
    store = DatasetStore(config.home)
    steps = [
        _dataset(store, dataset_name(config.name, CURATED), curate_flow.name, curation_inputs(config, False))
    ]
    for kind in PRODUCERS:
        if not produced(config, kind):
            steps.append(Step(dataset_name(config.name, kind), "skip", "its producer is switched off"))
            continue
        module = importlib.import_module(PRODUCERS[kind].split(":")[0])
        steps.append(
            _dataset(store, dataset_name(config.name, kind), producer(kind).name, module.inputs(config))
        )
        if kind == GENERAL:
            steps.append(_judge(config))
    first = [s.thing.split("@")[0] for s in steps if s.action in ("build", "train")]
    if first:  # what comes after waits on them: only building them tells whether they change
        after = (
            f"after {', '.join(first)} {'is' if len(first) == 1 else 'are'} rebuilt: reruns if they change"
        )
        return steps + [Step(t, "maybe", after) for t in ("base model", "stages", "evaluations")]
    curriculum, notes = active_curriculum(config, builds_curated=True)
    try:
        data = run_data(config, curriculum, store)
    except InputError as exc:
        return steps + [Step("base model", "build", str(exc))]
    _, state, why = base_state(config, data.refs, store)
    steps.append(Step("base model", "reuse" if state == "done" else "train", why or "same inputs"))
    stages = plan(config, curriculum, data.refs, store)
    if state == "done":
        steps.append(_evaluation(config, "before", base_folder(config), curriculum, data))
    else:
        steps.append(Step("evaluation before", "evaluate", "the base model is rebuilt"))
    for entry in stages:
        action = "reuse" if entry.state == "done" else "train"
        steps.append(Step(f"stage {entry.name}", action, entry.reason or "same inputs"))
    for name in curriculum.switched_off:
        why = next((n.split(": ", 1)[1] for n in notes if n.startswith(f"stage {name}:")), "switched off")
        steps.append(Step(f"stage {name}", "skip", why))
    if all(e.state == "done" for e in stages):
        final = stage_paths(config, stages[-1].name).final
        steps.append(_evaluation(config, "after", final, curriculum, data))
    else:
        steps.append(Step("evaluation after", "evaluate", "a stage is retrained"))
    return steps
