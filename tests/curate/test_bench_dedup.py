"""`m1 bench dedup` at tiny size prints the ratios, precision/recall and memory."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.bench.dedup import exact_pairs, make_corpus
from flows.cli import app


def test_corpus_plants_pairs_across_the_jaccard_range():
    corpus = make_corpus(3000, seed=1)
    _, sim = exact_pairs(corpus, 0.8, set())
    values = list(sim.values())
    assert len(values) > 300
    assert min(values) < 0.55 and max(values) == 1.0
    assert sum(v >= 0.8 for v in values) > 0.2 * len(values)


def test_bench_dedup_tiny_prints_ratios():
    res = CliRunner().invoke(
        app,
        ["bench", "dedup", "--docs", "1500", "--baseline-docs", "400", "--embed-docs", "0"],
        terminal_width=200,
        env={"M1_BENCH_LOAD_TOLERANCE": "100"},
    )
    assert res.exit_code == 0, res.output
    for text in (
        "datasketch bulk*",
        "datasketch per-doc*",
        "vs per-document (target >= 10x)",
        "vs bulk (target >= 3x)",
        "peak memory",
        "precision",
        "recall",
        "docs/s extrapolated",
        "Why the rate transfers",
        "ours, datatrove 14x8",
        "machine load at start",
    ):
        assert text in res.output, text


@pytest.mark.slow
def test_bench_dedup_on_dask_prints_growth_beside_datatrove(tmp_path):
    res = CliRunner().invoke(
        app,
        ["bench", "dedup", "--runner", "dask", "--docs", "3000,6000", "--partition-rows", "2000"]
        + ["--check-docs", "3000", "--work-dir", str(tmp_path)],
        terminal_width=250,
        env={"M1_BENCH_LOAD_TOLERANCE": "100", "COLUMNS": "250"},  # the table's headers on one line
    )
    assert res.exit_code == 0, res.output
    for text in ("driver peak MB", "worker peak MB", "spilled MB", "datatrove docs/s", "= one process"):
        assert text in res.output, text
    assert "identical clusters: True" in res.output and "growth 3,000 -> 6,000 (2x documents)" in res.output
    assert "1,000,000,000 documents on these 2 workers" in res.output
