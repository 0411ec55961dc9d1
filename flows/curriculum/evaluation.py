"""Held-out evaluation: greedy pass rates per domain on items training never sees, plus benchmark files
with reference answers; and the overfitting check that compares training reward with validation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from flows.config import DataConfig, EvalConfig
from flows.curriculum.prompts import encode_prompt
from flows.errors import InputError

PASS = 1.0 - 1e-9  # a reward of 1 is a solved item (verifiers keep rewards in [0, 1])


def pass_rate(model, tokenizer, rows: Sequence[Mapping[str, Any]], max_new_tokens: int, reward_fn) -> float:
    """Fraction of items whose greedy answer earns reward 1 under ``reward_fn(items, token_ids)``."""
    from m1model import Engine, SamplingParams

    if not rows:
        raise InputError("no evaluation items")
    stop = (tokenizer.eos_token_id,) if tokenizer.eos_token_id is not None else ()
    params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, stop_token_ids=stop)
    was_training = model.training
    model.eval()
    completions = Engine(model).generate([encode_prompt(tokenizer, r) for r in rows], params)
    model.train(was_training)
    rewards = reward_fn(rows, [c.token_ids for c in completions])
    return float(np.mean([r >= PASS for r in rewards]))


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
    """Benchmarks that carry reference answers, as math items (prompt + reference) to evaluate on."""
    from flows.curate.ingest import read_benchmark

    out = {}
    for b in data.benchmarks:
        df = read_benchmark(b.path, b.mapping, label=b.label)
        if "reference" not in df.columns:
            continue  # a contamination-only benchmark
        rows = df.head(n_items).to_dicts()
        out[f"benchmark:{b.label}"] = [
            {
                "id": str(r.get("id", i)),
                "domain": str(r.get("domain") or "math"),
                "task": "",
                "prompt": str(r["prompt"]),
                "reference": str(r["reference"]),
                "metadata": "{}",
            }
            for i, r in enumerate(rows)
        ]
    return out


def validate(
    model, tokenizer, sets: Mapping[str, list[dict]], max_new_tokens: int, reward_fn
) -> dict[str, float]:
    """Pass rate per evaluation set (``val/<set>``) and over all their items (``val/all``)."""
    out, weighted = {}, []
    for name, rows in sets.items():
        if rows:
            out[f"val/{name}"] = pass_rate(model, tokenizer, rows, max_new_tokens, reward_fn)
            weighted.append((out[f"val/{name}"], len(rows)))
    if weighted:
        out["val/all"] = sum(r * n for r, n in weighted) / sum(n for _, n in weighted)
    return out


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
