"""Pass-rate filtering (M1 paper, section 4.1): sample k responses per item from a policy, verify them,
and keep items that are neither always solved nor never solved: low < pass rate < high.

The policy is any `flows.policy.Sampler`: an OpenAI-compatible endpoint (vLLM, `m1 serve model`; chat or
completions API with n = k), or the bundled m1model engine in process from a checkpoint folder.

Not a flow: a curation step, kept beside the flow that runs it (flows/curate/flow.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from flows.curate.result import split_by_reason
from flows.errors import InputError
from flows.policy import Sampler
from flows.schema import require_columns
from verifiers.base import default_registry
from verifiers.scoring import NoVerifier, resolve_verifiers, score


def passrate_filter(
    df: pl.DataFrame,
    sampler: Sampler,
    k: int = 8,
    low: float = 0.0,
    high: float = 0.9,
    verifier: str = "math",
    prompt_column: str = "prompt",
    answer_column: str | None = None,
    id_column: str = "id",
    verifiers: Mapping[str, str] | None = None,
    plugin_dirs: Sequence[str] = (),
):
    """Keep rows with low < pass rate < high; `rates` holds every row's pass rate; adds `pass_rate`.

    Each row is scored by the verifier of its `domain` in ``verifiers`` (domain -> plugin name), else by
    ``verifier``; the verifier sees the whole row, with `reference` replaced by `answer_column` if given,
    else `answer` when present (added by extract_answers). Solved means correct: a format bonus alone
    does not count.
    """
    answer_column = answer_column or ("answer" if "answer" in df.columns else "reference")
    require_columns(df, [prompt_column, answer_column, id_column], where="passrate input")
    rows = df.to_dicts()
    for row in rows:
        row["domain"] = row.get("domain") if row.get("domain") in (verifiers or {}) else "default"
        row["reference"] = row[answer_column]
    names = {"default": verifier, **(verifiers or {})}
    try:
        checks = resolve_verifiers((r["domain"] for r in rows), names, default_registry(plugin_dirs))
    except NoVerifier as exc:  # a plugin name in the curate config that no plugin has
        raise InputError(str(exc)) from None
    samples = sampler.sample(df[prompt_column].cast(pl.String).to_list(), k) if df.height else []
    items = [row for row, rs in zip(rows, samples, strict=True) for _ in rs]
    rewards = score(checks, items, [r for rs in samples for r in rs]) if items else []
    solved = [rw.details.get("correct", rw.reward >= 1.0) is True for rw in rewards]
    correct = [sum(solved[i * k : (i + 1) * k]) for i in range(df.height)]
    rate = pl.Series("pass_rate", [c / k for c in correct], dtype=pl.Float64)
    out = df.with_columns(rate)
    reasons = pl.select(
        pl.when(rate <= low)
        .then(pl.format(f"too hard: pass rate {{}} <= {low} ({k} samples)", rate.round(3)))
        .when(rate >= high)
        .then(pl.format(f"too easy: pass rate {{}} >= {high} ({k} samples)", rate.round(3)))
    ).to_series()
    rates = pl.DataFrame(
        {"id": df[id_column], "pass_rate": rate, "correct": correct, "samples": [k] * df.height},
        schema_overrides={"correct": pl.Int64, "samples": pl.Int64},
    )
    return split_by_reason(
        out,
        reasons,
        "pass-rate",
        f"pass rate outside ({low}, {high}) over {k} samples from {sampler.name}",
        rates=rates,
    )
