"""The evaluation flow: a checkpoint's greedy pass rate on the held-out split of every dataset the
curriculum reads (per domain) and on benchmark files with reference answers.

An evaluation is a thing of the run like a dataset or a stage (flows/lineage.py): its inputs are the
checkpoint's identity, the evaluation settings, the dataset versions, the benchmark files by content, the
verifiers and, when a judged domain is scored, the judge. Its result is kept under
``runs/<run>/eval/<label>.json`` with them, and a rerun on the same inputs returns it without loading
the model.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact

from flows.artifacts import artifact_key
from flows.atomic import atomic_write_text
from flows.config import PipelineConfig
from flows.curriculum.evaluation import benchmark_sets, eval_sets, evaluate_sets, pooled, rates
from flows.curriculum.fingerprint import judge_identity, judged, judged_config, versions
from flows.curriculum.mixture import run_data
from flows.curriculum.plan import active_curriculum
from flows.curriculum.prompts import encode_prompt, stop_ids
from flows.curriculum.rewards import domain_reward_fn, verifier_options
from flows.datasets import SWE, dataset_name, produced
from flows.errors import InputError
from flows.genrm.serve import judge_for
from flows.lineage import RELEASE, config_inputs, file_digest, fingerprint
from flows.model_settings import use_threads
from flows.store import DatasetStore
from m1model.policy import CheckpointError, checkpoint_id, load_policy
from m1model.rl.evaluation import PassRate, greedy_completions
from verifiers.base import default_registry, verify_safely


def evaluation_inputs(config: PipelineConfig, checkpoint: str, curriculum, refs, domains) -> dict[str, Any]:
    """What an evaluation's result is a function of (see the module docstring)."""
    cache = DatasetStore(config.home).root / "cache"
    is_judged = judged(names := curriculum.verifier_names(evaluation=True), domains)
    return {
        "checkpoint": checkpoint_id(checkpoint),
        "config": judged_config(config_inputs("evaluation", config), is_judged),
        "datasets": versions(refs),
        "files": {b.path: file_digest(b.path, cache) for b in config.data.benchmarks},
        "verifiers": names,
        "judge": judge_identity(config) if is_judged else None,
        "release": RELEASE,
    }


@flow(name="m1-evaluate", flow_run_name="{config.name}-eval-{label}", log_prints=True)
def evaluate(config: PipelineConfig, checkpoint: str, label: str = "model") -> dict[str, Any]:
    """Pass rate per held-out set (``val/<domain>``, ``val/benchmark:<name>``) and over all (``val/all``);
    the recorded result when this checkpoint was evaluated on the same inputs before."""

    use_threads(config.train)
    curriculum, _ = active_curriculum(config)
    data = run_data(config, curriculum)
    sets = eval_sets(data.heldout, config.eval) | benchmark_sets(config.data, config.eval.n_items)
    domains = {r["domain"] for rows in sets.values() for r in rows}
    inputs = evaluation_inputs(config, checkpoint, curriculum, data.refs, domains)
    record_file = DatasetStore(config.home).root / "runs" / config.name / "eval" / f"{label}.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    if record.get("fingerprint") == fingerprint(inputs):
        get_run_logger().info("%s: evaluated on the same inputs before: reused", label)
        result = record["result"]
    else:
        result = _evaluate(config, checkpoint, label, curriculum, sets, domains)
        record = {"fingerprint": fingerprint(inputs), "inputs": inputs, "result": result}
        atomic_write_text(record_file, json.dumps(record, indent=1, sort_keys=True, default=str))
    _publish(config, label, result)
    return result


def _evaluate(config, checkpoint: str, label: str, curriculum, sets, domains) -> dict[str, Any]:
    try:
        model, tokenizer = load_policy(checkpoint)
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    names = {curriculum.verifier_names(evaluation=True).get(d, "") for d in domains}
    with judge_for(config, names) as judge_options:  # the run's judge, served while it scores (if it does)
        reward_fn = domain_reward_fn(tokenizer, domains, curriculum, config, judge_options, evaluation=True)
        results = evaluate_sets(model, tokenizer, sets, config.eval.max_new_tokens, reward_fn)
    if (everything := pooled(results)) is not None:
        results = {**results, "all": everything}
    get_run_logger().info("%s: held-out %s over %d sets", label, results.get("all", "-"), len(sets))
    swe = swe_rollouts(config, model, tokenizer) if produced(config, SWE) else []
    return {
        "checkpoint": checkpoint,
        "label": label,
        "rates": rates({k: v for k, v in results.items() if k != "all"}),
        "counts": {name: r.to_dict() for name, r in results.items()},  # per item, for paired comparisons
        "items": {k: len(v) for k, v in sets.items()},
        "swe": swe,
    }


def _publish(config: PipelineConfig, label: str, result: dict[str, Any]) -> None:
    """The evaluation's table artifacts (pass rates; SWE rollouts when there are some)."""
    counts = {name: PassRate.from_dict(c) for name, c in result["counts"].items()}
    rows = [
        {"set": name, "solved": f"{r.k}/{r.n}", "pass rate": r.rate, "95% interval": _interval(r)}
        for name, r in counts.items()
    ]
    create_table_artifact(
        rows, key=artifact_key(config.name, "eval", label), description=f"held-out pass rates: {label}"
    )
    if result["swe"]:
        create_table_artifact(
            result["swe"],
            key=artifact_key(config.name, "swe-rollouts", label),
            description="SWE repair rollouts",
        )


def _interval(r) -> str:
    lo, hi = r.interval()
    return f"{lo:.1%}-{hi:.1%}"


def swe_rollouts(config: PipelineConfig, model, tokenizer) -> list[dict[str, Any]]:
    """A few SWE repair tasks answered by the policy (greedy) and scored by the repair reward in their
    containers, each beside its gold patch scored the same way (the control: it must score 1)."""

    store, name = DatasetStore(config.home), dataset_name(config.name, SWE)
    if not config.swe.eval_rollouts or store.latest(name) is None:
        return []
    rows = (
        store.read(name)
        .filter(pl.col("task") == "repair")
        .sort("id")
        .head(config.swe.eval_rollouts)
        .to_dicts()
    )
    answers = greedy_completions(
        model,
        [encode_prompt(tokenizer, r) for r in rows],
        max_new_tokens=config.eval.max_new_tokens,
        stop_token_ids=stop_ids(tokenizer),
    )
    texts = [tokenizer.decode(a.token_ids, skip_special_tokens=True) for a in answers]
    verifier = default_registry(config.plugin_dirs).get("swe", **verifier_options(config)["swe"])
    policy = verify_safely(verifier, [{**r, "response": t} for r, t in zip(rows, texts, strict=True)])
    gold = verify_safely(verifier, [{**r, "response": r["reference"]} for r in rows])
    return [
        {
            "task": r["id"],
            "policy reward": p.reward,
            "policy detail": p.details.get("error") or p.details.get("reason") or "",
            "gold reward": g.reward,
        }
        for r, p, g in zip(rows, policy, gold, strict=True)
    ]
