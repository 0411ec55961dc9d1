"""Held-out evaluation: greedy pass rates per domain on items training never sees, plus benchmark files
with reference answers; and the overfitting check that compares training reward with validation.

Every number goes through `pass_rate`, which encodes prompts exactly as training does
(`flows.curriculum.prompts.encode_prompt`) and measures them with m1model's one greedy evaluation
(`m1model.rl.evaluation.greedy_pass_rate`). `m1 run`'s before/after evaluation, each stage's validation
and `m1 experiment algorithms` all call it. `sampled_rate` is mean@k over answers sampled as training
samples them (`m1model.rl.evaluation.sampled_pass_rate`), which the experiments report beside it.

Not a flow: what the evaluation flow (flows/evaluate.py) and each stage's validation run, kept with the
curriculum whose items and prompts it uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from flows.config import DataConfig, EvalConfig
from flows.curate.ingest import read_benchmark
from flows.curriculum.prompts import encode_prompt, stop_ids
from flows.errors import InputError
from m1model.rl.evaluation import PassRate, SampledPassRate, greedy_pass_rate, sampled_pass_rate

BENCHMARK = "benchmark:"  # prefix of a benchmark file's set name: kept out of `all`, which is held-out items


def pass_rate(
    model, tokenizer, rows: Sequence[Mapping[str, Any]], max_new_tokens: int, reward_fn
) -> PassRate:
    """Which items the greedy answer solves (reward 1 under ``reward_fn(items, token_ids)``)."""
    if not rows:
        raise InputError("no evaluation items")
    prompts = [encode_prompt(tokenizer, r) for r in rows]
    return greedy_pass_rate(
        model, prompts, rows, reward_fn, max_new_tokens=max_new_tokens, stop_token_ids=stop_ids(tokenizer)
    )


def sampled_rate(
    model,
    tokenizer,
    rows: Sequence[Mapping[str, Any]],
    max_new_tokens: int,
    reward_fn,
    *,
    samples: int,
    temperature: float = 1.0,
) -> SampledPassRate:
    """mean@k: how many of ``samples`` answers per item, sampled at the temperature training samples at
    (``train.temperature``), solve it; prompts and stop tokens as `pass_rate`'s."""
    if not rows:
        raise InputError("no evaluation items")
    prompts = [encode_prompt(tokenizer, r) for r in rows]
    return sampled_pass_rate(
        model,
        prompts,
        rows,
        reward_fn,
        samples=samples,
        max_new_tokens=max_new_tokens,
        stop_token_ids=stop_ids(tokenizer),
        temperature=temperature,
    )


def eval_sets(
    heldout: pl.DataFrame, cfg: EvalConfig, domains: Sequence[str] | None = None
) -> dict[str, list[dict]]:
    """Held-out items per domain (at most ``cfg.n_items`` each, in a fixed order), optionally only the
    given domains."""
    out = {}
    for domain in sorted(set(heldout["domain"].to_list())):
        if domains is not None and domain not in domains:
            continue
        rows = heldout.filter(pl.col("domain") == domain).sort("id").head(cfg.n_items)
        out[domain] = rows.to_dicts()
    return out


def benchmark_sets(data: DataConfig, n_items: int) -> dict[str, list[dict]]:
    """Benchmarks that carry reference answers, as items to evaluate on: a benchmark in a preset's
    schema keeps the domain, task and metadata its preset gives (a HumanEval benchmark is code items with
    their tests), any other is math (prompt + reference)."""
    out = {}
    for b in data.benchmarks:
        df = read_benchmark(b.path, b.mapping, label=b.label, preset=b.preset)
        if "reference" not in df.columns:
            continue  # a contamination-only benchmark
        rows = df.filter(pl.col("reference").is_not_null()).head(n_items).to_dicts()
        out[f"{BENCHMARK}{b.label}"] = [
            {
                "id": str(r.get("id") or i),
                "domain": str(r.get("domain") or "math"),
                "task": str(r.get("task") or ""),
                "prompt": str(r["prompt"]),
                "reference": str(r["reference"]),
                "metadata": str(r.get("metadata") or "{}"),
            }
            for i, r in enumerate(rows)
        ]
    return out


def evaluate_sets(
    model, tokenizer, sets: Mapping[str, list[dict]], max_new_tokens: int, reward_fn
) -> dict[str, PassRate]:
    """Per non-empty evaluation set, which of its items the policy solves."""
    return {
        name: pass_rate(model, tokenizer, rows, max_new_tokens, reward_fn)
        for name, rows in sets.items()
        if rows
    }


def pooled(results: Mapping[str, PassRate]) -> PassRate | None:
    """Every held-out item of every domain as one set (benchmark files excluded: they are not drawn from
    the training distribution). None when there is no held-out set."""
    held = [r for name, r in results.items() if not name.startswith(BENCHMARK)]
    return PassRate(tuple(s for r in held for s in r.solved)) if held else None


def rates(results: Mapping[str, PassRate]) -> dict[str, float]:
    """``val/<set>`` pass rates, and ``val/all``: the pass rate over all held-out items (so a domain
    counts by its number of items)."""
    out = {f"val/{name}": r.rate for name, r in results.items()}
    if (everything := pooled(results)) is not None:
        out["val/all"] = everything.rate
    return out


def validate(
    model, tokenizer, sets: Mapping[str, list[dict]], max_new_tokens: int, reward_fn
) -> dict[str, float]:
    """Pass rate per evaluation set (``val/<set>``) and over all held-out items (``val/all``)."""
    return rates(evaluate_sets(model, tokenizer, sets, max_new_tokens, reward_fn))


def overfitting(
    history: Sequence[Mapping[str, float]], val_start: float | None, val_end: float | None, tolerance: float
) -> str | None:
    """A warning when training reward rose while validation fell (each by more than ``tolerance``)."""
    if not history or val_start is None or val_end is None:
        return None
    k = max(1, len(history) // 4)  # compare the first and last quarter of the stage: single steps are noisy
    first = float(np.mean([h["reward_mean"] for h in history[:k]]))
    last = float(np.mean([h["reward_mean"] for h in history[-k:]]))
    if last - first > tolerance and val_start - val_end > tolerance:
        return (
            f"possible overfitting: training reward rose {first:.3f} -> {last:.3f} while held-out pass rate "
            f"fell {val_start:.1%} -> {val_end:.1%}"
        )
    return None
