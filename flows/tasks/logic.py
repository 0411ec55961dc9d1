"""Logic tasks as data: `{run}-synlogic` from the SynLogic-style generators in verifiers/logic.

plan -> generate -> schema -> gold check -> exact dedup -> store

The plan takes the configured tasks (`logic.tasks`; null: every registered task) and gives each its
difficulty band: the one `m1 logic calibrate` stored (`flows.logic_calibration.load_bands`, the paper's
section 4.1 bounds for the policy it measured) when there is a calibration and `logic.calibrated` is on,
else `logic.default_band` (1..2 unless configured) clipped to the task's levels. A task without a band
(not calibrated, or never solved by the policy) is skipped and the reason logged and recorded. Items
are split evenly over the tasks, and within a task round-robin over the levels low .. high +
`logic.headroom` (clipped to the task's top level), so a curriculum stage that raises `min_difficulty`
still finds items. Each item's metadata records its `difficulty` and `band`.

Every item's gold answer, rendered as the SFT target, must score 1 with the `logic` verifier (else the
item is quarantined: a generator bug). Duplicates are exact ones within the set (same text after
normalisation); duplicates of the run's other datasets are removed where the curriculum reads them all
together (flows/curriculum/overlap.py), so this dataset is the same whichever producer ran first. Steps
run as cached Prefect tasks on the configured runner (flows/runner.py); the generate step's cache key
includes a hash of the generators' source. Nothing runs when the dataset was last built from the same
inputs (flows/lineage.py: the `logic` settings and the stored calibration).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger

import verifiers.logic
from flows.config import LogicTasksConfig, PipelineConfig
from flows.curate.result import StepResult
from flows.curate.step_tasks import mapped, once, over
from flows.datasets import SYNLOGIC, dataset_name
from flows.errors import ConfigError, InputError
from flows.lineage import RELEASE, config_inputs, file_digest, reuse_or_build
from flows.logic_calibration import bands_file, load_bands
from flows.runner import ROW, Tasks, on_runner
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore, StepCount
from flows.tasks.publish import Steps, publish, source_hash, write
from flows.tasks.steps import Schema, answer_check, chunks, deduplicate
from verifiers.logic import TASKS, get_task
from verifiers.logic.verifier import LogicVerifier

STEPS = 4
PREREQUISITES = ()  # nothing from the machine (flows/prerequisites.py): generators and checkers are Python


@dataclass(frozen=True)
class Spec:
    task: str
    difficulty: int
    seed: int
    index: int
    band: tuple[int, int]
    row: int  # position in the dataset: shards merge back into this order


@dataclass
class Plan:
    specs: list[Spec]
    bands: dict[str, dict]  # task -> {"low", "high", "levels", "source"}
    skipped: dict[str, str]  # task -> why it has no items


def stored_bands(home: Path, cfg: LogicTasksConfig):
    """The calibration's bands, or None when there is none (or it is switched off)."""
    if not cfg.calibrated or not bands_file(home).is_file():
        return None
    return load_bands(home)


def plan(cfg: LogicTasksConfig, home: Path) -> Plan:
    """Tasks, bands and instance seeds; raises a one-line error for unknown tasks or when no task has
    a band. Pure apart from reading the stored calibration."""

    names = list(dict.fromkeys(cfg.tasks)) if cfg.tasks is not None else sorted(TASKS)
    if not names:
        raise ConfigError("logic.tasks is empty: name tasks, or set logic.enabled = false")
    tasks = {}
    for name in names:
        try:
            tasks[name] = get_task(name)
        except (KeyError, ImportError) as exc:
            raise ConfigError(f"logic.tasks: {exc.args[0] if exc.args else exc}") from None
    calibrated = stored_bands(home, cfg)
    bands: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    for name, t in tasks.items():
        top = t.difficulties[-1]
        if calibrated is None:
            low, high, source = max(cfg.default_band[0], t.difficulties[0]), cfg.default_band[1], "default"
            if low > top:
                skipped[name] = f"default band {cfg.default_band[0]}..{cfg.default_band[1]} above its levels"
                continue
            high = min(high, top)
        elif name not in calibrated:
            skipped[name] = "not in the stored calibration (run `m1 logic calibrate` with this task)"
            continue
        elif calibrated[name].low is None:
            skipped[name] = f"no band: {calibrated[name].reason}"
            continue
        else:
            low, high, source = calibrated[name].low, calibrated[name].high, "calibration"
        levels = [d for d in t.difficulties if low <= d <= min(high + cfg.headroom, top)]
        bands[name] = {"low": low, "high": high, "levels": levels, "source": source}
    if not bands:
        why = "; ".join(f"{n}: {r}" for n, r in skipped.items())
        raise InputError(
            f"no logic task has a band ({why}): recalibrate, or set logic.calibrated=false to use "
            "logic.default_band"
        )
    specs = []
    per_task, extra = divmod(cfg.n_items, len(bands))
    for i, (name, band) in enumerate(bands.items()):
        for k in range(per_task + (i < extra)):
            level = band["levels"][k % len(band["levels"])]
            seed = cfg.seed * 1_000_000 + k
            specs.append(Spec(name, level, seed, k, (band["low"], band["high"]), len(specs)))
    return Plan(specs, bands, skipped)


def _item(spec: Spec) -> dict:

    item = get_task(spec.task).generate(spec.difficulty, spec.seed).to_item(spec.index)
    meta = json.loads(item["metadata"])
    item["metadata"] = json.dumps({**meta, "band": list(spec.band)}, sort_keys=True)
    return item


@dataclass(frozen=True)
class Generate:
    """Instances for a chunk of the plan. `generators` is a hash of the generators' source, so a changed
    generator misses the cache."""

    name = "generate-logic"
    removes = "instances whose generator failed"
    retry = False
    generators: str

    def run(self, rows: list[Spec]) -> StepResult:
        items, failed = [], []
        for spec in rows:
            try:
                items.append({**_item(spec), ROW: spec.row})
            except Exception as exc:  # noqa: BLE001 - a broken generator quarantines its instance, not the run
                failed.append(
                    {
                        "id": f"{spec.task}-d{spec.difficulty}-s{spec.seed}-{spec.index}",
                        "source": "synlogic",
                        "domain": "logic",
                        "task": spec.task,
                        "prompt": "",
                        "reference": "",
                        "metadata": "{}",
                        ROW: spec.row,
                        "reason": f"generator failed: {type(exc).__name__}: {exc}",
                    }
                )
        schema = {**ITEM_COLUMNS, ROW: pl.Int64}
        kept = pl.DataFrame(items, schema=schema)
        removed = pl.DataFrame(failed, schema={**schema, "reason": pl.String})
        return StepResult(kept, removed, StepCount("generate", len(rows), kept.height, "instances generated"))


@dataclass(frozen=True)
class GoldCheck:
    """Each item's gold answer, as the SFT warm start renders it, must score 1 with `logic`."""

    name = "gold-check"
    removes = "items whose gold answer the logic verifier does not score 1"
    retry = False

    def run(self, rows: pl.DataFrame) -> StepResult:

        summary = "the gold answer scores 1 with the logic verifier"
        return answer_check(rows, LogicVerifier(), "gold-check", summary)


def preflight(config: PipelineConfig) -> Plan:
    """Check the logic section before anything runs (the CLI and the DAG call this first)."""
    return plan(config.logic, DatasetStore(config.home).root)


def inputs(config: PipelineConfig) -> dict:
    """What `{run}-synlogic` is built from (flows/lineage.py): the logic settings and, when they use
    it, the stored calibration by content."""
    store = DatasetStore(config.home)
    calibration = bands_file(store.root)
    used = config.logic.calibrated and calibration.is_file()
    files = {"logic calibration": file_digest(calibration)} if used else {}
    return {"config": config_inputs(SYNLOGIC, config), "files": files, "release": RELEASE}


@flow(name="m1-logic-tasks", flow_run_name="{config.name}-logic-tasks", log_prints=True)
def logic_tasks(config: PipelineConfig = PipelineConfig()) -> dict:  # noqa: B008 - the UI form default
    """Write `{run}-synlogic` (see the module docstring); returns the manifest (as a dict), the rows
    per task and difficulty, notes on the bands used and tasks skipped, why it was built, and every task
    run's state (none when its inputs are unchanged and it is reused)."""
    preflight(config)
    store = DatasetStore(config.home)
    build = lambda: on_runner(logic_steps, config.runner, store.root)(config)  # noqa: E731
    name = dataset_name(config.name, SYNLOGIC)
    return reuse_or_build(store, name, logic_tasks.name, inputs(config), build, get_run_logger())


@flow(name="m1-logic-tasks-steps", flow_run_name="{config.name}-logic-tasks-steps", log_prints=True)
def logic_steps(config: PipelineConfig) -> dict:

    store = DatasetStore(config.home)
    p = plan(config.logic, store.root)
    steps = Steps(config.name, "logic tasks", STEPS)
    notes = [
        f"{t}: band {b['low']}..{b['high']} ({b['source']}), levels {b['levels']}" for t, b in p.bands.items()
    ]
    notes += [f"{t}: skipped, {why}" for t, why in p.skipped.items()]
    for note in notes:
        steps.logger.info(note)
    tasks, n = Tasks(), config.runner.shards
    df = steps.record(over(tasks, Generate(source_hash(verifiers.logic)), chunks(p.specs, n)))
    df = steps.record(once(tasks, Schema("logic items"), df))
    df = steps.record(mapped(tasks, GoldCheck(), df, n))
    df = deduplicate(tasks, steps, config, df)
    params = {"logic": config.logic.model_dump(mode="json"), "bands": p.bands, "skipped": p.skipped}
    manifest = write(store, dataset_name(config.name, SYNLOGIC), df, steps, params=params)
    steps.logger.info("%d of %d tasks resumed from cache", tasks.cached, len(tasks.states))
    return publish(manifest, df, steps, notes) | {"tasks": tasks.states}
