"""The evaluation flow: a checkpoint's greedy pass rate on the held-out split of every dataset the
curriculum reads (per domain) and on benchmark files with reference answers."""

from __future__ import annotations

from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact

from flows.artifacts import artifact_key
from flows.config import PipelineConfig
from flows.curriculum.evaluation import benchmark_sets, eval_sets, evaluate_sets, pooled, rates
from flows.curriculum.mixture import load_data
from flows.curriculum.plan import active_curriculum
from flows.curriculum.prompts import encode_prompt, stop_ids
from flows.curriculum.rewards import domain_reward_fn, verifier_options
from flows.datasets import SWE, dataset_name, produced
from flows.errors import InputError
from flows.genrm.serve import judge_for
from flows.model_settings import use_threads
from flows.store import DatasetStore
from m1model.policy import CheckpointError, load_policy
from m1model.rl.evaluation import greedy_completions
from verifiers.base import default_registry, verify_safely


@flow(name="m1-evaluate", flow_run_name="{config.name}-eval-{label}", log_prints=True)
def evaluate(config: PipelineConfig, checkpoint: str, label: str = "model") -> dict[str, Any]:
    """Pass rate per held-out set (``val/<domain>``, ``val/benchmark:<name>``) and over all (``val/all``)."""

    use_threads(config.train)
    curriculum, _ = active_curriculum(config)
    data = load_data(DatasetStore(config.home), curriculum, config.name, config.eval.fraction)
    sets = eval_sets(data.heldout, config.eval) | benchmark_sets(config.data, config.eval.n_items)
    try:
        model, tokenizer = load_policy(checkpoint)
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    domains = {r["domain"] for rows in sets.values() for r in rows}
    names = {curriculum.verifier_names(evaluation=True).get(d, "") for d in domains}
    with judge_for(config, names) as judge_options:  # the run's judge, served while it scores (if it does)
        reward_fn = domain_reward_fn(tokenizer, domains, curriculum, config, judge_options, evaluation=True)
        results = evaluate_sets(model, tokenizer, sets, config.eval.max_new_tokens, reward_fn)
    if (everything := pooled(results)) is not None:
        results = {**results, "all": everything}
    rows = [
        {"set": name, "solved": f"{r.k}/{r.n}", "pass rate": r.rate, "95% interval": _interval(r)}
        for name, r in results.items()
    ]
    create_table_artifact(
        rows, key=artifact_key(config.name, "eval", label), description=f"held-out pass rates: {label}"
    )
    get_run_logger().info("%s: held-out %s over %d sets", label, results.get("all", "-"), len(sets))
    swe = swe_rollouts(config, model, tokenizer) if produced(config, SWE) else []
    if swe:
        create_table_artifact(
            swe, key=artifact_key(config.name, "swe-rollouts", label), description="SWE repair rollouts"
        )
    return {
        "checkpoint": checkpoint,
        "label": label,
        "rates": rates({k: v for k, v in results.items() if k != "all"}),
        "counts": {name: r.to_dict() for name, r in results.items()},  # per item, for paired comparisons
        "items": {k: len(v) for k, v in sets.items()},
        "swe": swe,
    }


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
