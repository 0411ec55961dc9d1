"""The whole DAG, `m1 run`: the real flows, each called as a subflow (its own run in the Prefect UI):

    curate -> logic tasks -> code tasks -> SWE tasks -> general tasks' data -> SFT warm start -> judge
    (the judge trains in a child process from the start, beside the first five: flows/genrm/ahead.py)
           -> pass-rate filter -> evaluate (before) -> the judge on the warm start's own answers (its
           second gate) -> every curriculum stage -> evaluate (after) -> report

No step exists twice: the subflows are the ones `m1 curate run`, `m1 tasks ...`, `m1 train curriculum`
and the deployments run. A producer switched off in config (e.g. `swe.enabled = false`) is absent from
the DAG, and the curriculum drops what only it would have supplied; the report says so.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows.artifacts import artifact_key
from flows.atomic import atomic_write_text
from flows.config import PipelineConfig
from flows.curate.flow import curate_flow, pass_rate_flow
from flows.curate.flow import preflight as curate_preflight
from flows.curriculum import load_curriculum, policy_gate
from flows.curriculum.plan import active_curriculum, general_gate
from flows.datasets import CODE, CURATED, GENERAL, PRODUCERS, SYNLOGIC, dataset_name, produced, producer
from flows.evaluate import evaluate
from flows.genrm.ahead import judge_ahead
from flows.genrm.files import user_judge
from flows.genrm.flow import general_built_because, general_items_line, general_reusable, write_general
from flows.genrm.serve import run_judge
from flows.prerequisites import check as check_machine
from flows.prerequisites import needed
from flows.report import RunReport, change_sentence
from flows.runner import shared_cluster
from flows.store import DatasetStore
from flows.train import train_curriculum, warm_start
from m1model.rl.evaluation import PassRate

PLANTED_BY_STEP = {
    "exact-dedup": "exact",
    "minhash-dedup": "near",
    "decontaminate": "leak",
    "answer-check": "unparseable",
}


def preflight(config: PipelineConfig) -> None:
    """Check the machine and read every input once, so that a missing tool, a bad file or a bad setting
    fails fast, with one clear line, before anything is written."""

    # sources, mappings, benchmarks and the SFT set; the pass-rate policy defaults to the run's SFT model
    curate_preflight(config, pass_rate=False)
    active_curriculum(config, builds_curated=True)
    check_machine(needed(config))  # every producer's tools at once, with the one command that installs them
    for kind in PRODUCERS:
        if produced(config, kind) and (
            check := getattr(importlib.import_module(PRODUCERS[kind].split(":")[0]), "preflight", None)
        ):
            check(config)  # e.g. unknown logic tasks, no usable calibration band, no sandbox


def planted_counts(quarantine: pl.DataFrame | None, steps: list[dict]) -> dict[str, int]:
    """Rows the bundled generator planted for each filter (what that filter must remove)."""
    if quarantine is None:
        return {}
    kinds = quarantine["metadata"].map_elements(
        lambda m: json.loads(m).get("planted"), return_dtype=pl.String
    )
    counts = kinds.value_counts()
    by_kind = dict(zip(counts[counts.columns[0]].to_list(), counts["count"].to_list(), strict=True))
    present = {s["step"] for s in steps}
    return {step: by_kind.get(kind, 0) for step, kind in PLANTED_BY_STEP.items() if step in present}


def _paired(report: RunReport) -> list[str]:
    """Evaluation sets measured before and after on the same items, ``all`` first."""
    common = [k for k in report.before if k in report.after and report.before[k].n == report.after[k].n]
    return sorted(common, key=lambda k: (k != "all", k))


@flow(name="m1-pipeline", flow_run_name="{config.name}", log_prints=True)
def pipeline(config: PipelineConfig = PipelineConfig()) -> dict:  # noqa: B008 - the UI form default
    """Run the whole DAG on one machine; returns the run report as a dict. Every subflow reuses what
    was built from the same inputs (flows/lineage.py), so an unchanged rerun builds and trains nothing."""

    logger = get_run_logger()
    store = DatasetStore(config.home)
    report = RunReport(name=config.name)

    def produce(kind: str, cfg: PipelineConfig, reused: bool = True) -> dict:
        """A producer's flow, its dataset row and its report section (``reused``: False when the
        pipeline wrote its dataset just now, ahead of the flow); the flow's result."""
        flow_fn = producer(kind)
        out = flow_fn(cfg)
        report.add_dataset(
            flow_fn.name, out["manifest"], out.get("built_because", ""), out.get("reused") and reused
        )
        if section := out.get("report"):
            report.sections.append(section)
        return out

    # the judge trains beside curation, the producers and the SFT warm start, on the core they leave idle
    # (flows/genrm/ahead.py); the general-task flow, which waits for it, runs after the warm start
    with judge_ahead(config):
        with shared_cluster(config.runner) as runner:  # one Dask cluster for the data
            data_config = config.model_copy(update={"runner": runner})
            curated = curate_flow(data_config, pass_rate=False)
            report.curation = curated["manifest"]
            report.add_dataset("m1-curate", curated["manifest"], curated["built_because"], curated["reused"])
            if not (config.curate.sources or config.data.input_path):
                report.planted = planted_counts(
                    store.quarantine(dataset_name(config.name, CURATED)), report.curation["steps"]
                )
            for kind in PRODUCERS:
                if not produced(config, kind):
                    report.notes.append(f"{kind}: switched off ({PRODUCERS[kind]} not run)")
                elif kind != GENERAL:
                    produce(kind, data_config)
        if general := produced(config, GENERAL):
            general_existed = general_reusable(config)
            ref = write_general(config)  # the warm start trains on it; the judge is needed from the stages on
            if not general_existed:  # the general-task flow then finds it and reuses it
                logger.info(general_items_line(ref, False, general_built_because(config, ref)))
        base = warm_start(config)
        report.base = base
        judge_trained = None  # no judge of the run's own: switched off, or the user's at M1_GENRM_URL
        if general:
            out = produce(GENERAL, config, reused=general_existed)
            judge_trained = None if user_judge(config) else out["trained"]

    datasets = [
        d for d in (dataset_name(config.name, k) for k in (CURATED, SYNLOGIC, CODE)) if store.latest(d)
    ]
    if config.curate.pass_rate.enabled:
        with shared_cluster(config.runner) as runner:
            filtered = pass_rate_flow(
                config.model_copy(update={"runner": runner}), datasets, default_policy=base["base"]
            )
        for name, manifest in filtered["manifests"].items():
            why = (store.built_from(name, "m1-pass-rate") or {}).get("reason", "")
            report.add_dataset("m1-pass-rate", manifest, why)
    else:
        report.notes.append("pass-rate filtering: off (curate.pass_rate.enabled = false)")

    with run_judge(config):  # one judge server, started when an evaluation or a stage first needs it
        before = evaluate(config, base["base"], "before")
        report.stages = train_curriculum(config)  # the judge's second gate is measured first
        final = report.stages[-1]["final"] if report.stages else base["base"]
        after = evaluate(config, final, "after")
    # the judge is unfit as the curriculum uses it (either gate): the general stage is off
    if produced(config, GENERAL) and (gate := general_gate(config)):
        report.notes.append(
            f"general tasks not trained on: the judge fails its gate ({gate}); the `general` stage is switched off"
        )
    elif produced(config, GENERAL) and (
        shown := policy_gate.passed(config, load_curriculum(config.train.curriculum))
    ):
        report.notes.append(f"general tasks trained on the judge, past both gates; the second: {shown}")
    report.before = {k: PassRate.from_dict(v) for k, v in before["counts"].items()}
    report.after = {k: PassRate.from_dict(v) for k, v in after["counts"].items()}
    report.add_table(
        "SWE repair rollouts",
        after["swe"],
        "The final policy's greedy answers to a few SWE repair tasks, scored by the repair reward in the "
        "tasks' containers, each beside its gold patch scored the same way.",
    )

    markdown = report.to_markdown()
    atomic_write_text(store.root / "runs" / config.name / "report.md", markdown)
    create_markdown_artifact(
        markdown, key=artifact_key("run-report", config.name), description="m1 run report"
    )
    logger.info("report: %s", Path(store.root / "runs" / config.name / "report.md"))
    return {
        "report": str(store.root / "runs" / config.name / "report.md"),
        "subflows": report.subflows,
        "stages": report.stages,
        "judge_trained": judge_trained,
        "before": before["rates"],
        "after": after["rates"],
        "heldout": [change_sentence(n, report.before[n], report.after[n]) for n in _paired(report)],
        "notes": report.notes,
        "source_columns": report.curation["params"].get("source_columns", []),
        "final": final,
    }
