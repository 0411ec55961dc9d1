"""Benchmark contamination: word n-gram overlap (and optionally embedding similarity) with test sets.

n-gram overlap follows the GPT-3 / Llama decontamination recipe: an item is contaminated if it shares
any n consecutive normalised words (default n = 13) with a benchmark item. A benchmark item shorter
than n words counts as one n-gram of its own length, so short test items are caught when an item
contains them whole. Every removed row names the benchmark, the benchmark item, the method and a score
(n-gram: the share of the benchmark item's n-grams found in the row; embedding: the cosine).

Not a flow: a curation step, kept beside the flow that runs it (flows/curate/flow.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from flows.curate import embed as embedder
from flows.curate.ingest import read_table
from flows.curate.result import split_by_reason
from flows.curate.text import ngram_hashes, token_hashes
from flows.schema import require_columns

MATCH_SCHEMA = {
    "id": pl.String,
    "benchmark": pl.String,
    "benchmark_id": pl.String,
    "method": pl.String,
    "score": pl.Float64,
}

BENCH_SCHEMA = {"benchmark": pl.String, "benchmark_id": pl.String, "text": pl.String}


def _benchmark_frame(
    benchmarks: dict[str, pl.DataFrame] | list[str | Path], text_column: str, id_column: str
) -> pl.DataFrame:
    """All benchmark items in one frame: benchmark, benchmark_id, text."""
    if not isinstance(benchmarks, dict):
        benchmarks = {Path(p).stem: read_table(p, strict=True) for p in benchmarks}
    frames = []
    for name, df in benchmarks.items():
        require_columns(df, [text_column], where=f"benchmark {name}")
        ids = (
            df[id_column].cast(pl.String)
            if id_column in df.columns
            else pl.Series([f"{name}#{i}" for i in range(df.height)])
        )
        frames.append(
            pl.DataFrame(
                {
                    "benchmark": [name] * df.height,
                    "benchmark_id": ids,
                    "text": df[text_column].cast(pl.String),
                },
                schema=BENCH_SCHEMA,  # an empty benchmark's columns would otherwise be Null
            )
        )
    if not frames:
        return pl.DataFrame(schema=BENCH_SCHEMA)
    return pl.concat(frames)


def ngram_matches(
    texts: pl.Series, bench_texts: pl.Series, n: int = 13
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, benchmark row, score) for each text sharing an n-gram with a benchmark text: the benchmark
    text it shares the largest share of its n-grams with."""
    bench_tokens, corpus_tokens = token_hashes(bench_texts), token_hashes(texts)
    b_off, b_hash = ngram_hashes(bench_tokens, n)
    b_count = np.diff(b_off)
    b_row = np.repeat(np.arange(len(b_count)), b_count)
    pairs: list[np.ndarray] = []
    # Benchmark items shorter than n words: match their whole word sequence (one length at a time).
    lengths = np.diff(bench_tokens[1])
    for length in [n, *sorted({int(x) for x in lengths if 0 < x < n})]:
        sel = np.repeat((lengths >= n) if length == n else (lengths == length), b_count)
        if not sel.any():
            continue
        keys, rows = b_hash[sel], b_row[sel]
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
        t_off, t_hash = ngram_hashes(corpus_tokens, length, short=False)
        t_row = np.repeat(np.arange(len(texts)), np.diff(t_off))
        lo = np.searchsorted(keys, t_hash, side="left")
        hi = np.searchsorted(keys, t_hash, side="right")
        hit = hi > lo
        # Every (text row, benchmark row) pair sharing this n-gram: expand the equal-key ranges.
        span = (hi - lo)[hit]
        which = np.repeat(np.flatnonzero(hit), span)
        pos = np.repeat(lo[hit], span) + (np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span))
        pairs.append(np.stack([t_row[which], rows[pos], t_hash[which].view(np.int64)], axis=1))
    found = np.concatenate(pairs) if pairs else np.empty((0, 3), dtype=np.int64)
    if len(found) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    found = np.unique(found, axis=0)  # distinct (row, benchmark row, n-gram): few, only the hits
    pair_key, shared = np.unique(found[:, 0] * len(b_count) + found[:, 1], return_counts=True)
    row, brow = pair_key // len(b_count), pair_key % len(b_count)
    # Share of the item's distinct n-grams (a repeated n-gram counts once on both sides).
    b_distinct = np.unique(np.stack([b_row, b_hash.view(np.int64)], axis=1), axis=0)[:, 0]
    score = shared / np.maximum(np.bincount(b_distinct, minlength=len(b_count))[brow], 1)
    best = np.lexsort((-score, row))
    first = np.r_[True, row[best][1:] != row[best][:-1]]
    pick = best[first]
    return row[pick], brow[pick], np.minimum(score[pick], 1.0)


def decontaminate(
    df: pl.DataFrame,
    benchmarks: dict[str, pl.DataFrame] | list[str | Path],
    ngram: int = 13,
    embedding_threshold: float | None = None,
    text_column: str = "prompt",
    id_column: str = "id",
    benchmark_text_column: str = "prompt",
    benchmark_id_column: str = "id",
):
    """Drop rows that overlap a benchmark item; `matches` says which item each removed row matched."""
    require_columns(df, [text_column, id_column], where="decontaminate input")
    bench = _benchmark_frame(benchmarks, benchmark_text_column, benchmark_id_column)
    texts = df[text_column].cast(pl.String)
    method = np.full(df.height, None, dtype=object)
    bench_row = np.full(df.height, -1, dtype=np.int64)
    score = np.zeros(df.height)
    if bench.height and df.height:
        rows, brows, scores = ngram_matches(texts, bench["text"], ngram)
        method[rows], bench_row[rows], score[rows] = f"{ngram}-gram", brows, scores
        if embedding_threshold is not None:
            nb, sims = embedder.nearest(embedder.embed(texts), embedder.embed(bench["text"]))
            close = (sims >= embedding_threshold) & (bench_row < 0)
            method[close], bench_row[close], score[close] = "embedding", nb[close], sims[close]
    hit = bench_row >= 0
    idx = np.flatnonzero(hit)
    matched = bench[bench_row[idx].tolist()] if len(idx) else bench.clear()
    matches = pl.DataFrame(
        {
            "id": df[id_column].cast(pl.String).gather(idx),
            "benchmark": matched["benchmark"],
            "benchmark_id": matched["benchmark_id"],
            "method": pl.Series(method[idx].tolist(), dtype=pl.String),
            "score": pl.Series(score[idx], dtype=pl.Float64),
        },
        schema=MATCH_SCHEMA,
    )
    reasons = [None] * df.height
    for i, m in zip(idx.tolist(), matches.iter_rows(named=True), strict=True):
        what = "overlap" if m["method"] != "embedding" else "cosine"
        reasons[i] = (
            f"{m['method']} {what} with {m['benchmark']}:{m['benchmark_id']} (score {m['score']:.2f})"
        )
    summary = f"benchmark contamination ({ngram}-gram overlap" + (
        f", embedding cosine >= {embedding_threshold})" if embedding_threshold is not None else ")"
    )
    return split_by_reason(df, pl.Series(reasons, dtype=pl.String), "decontaminate", summary, matches=matches)
