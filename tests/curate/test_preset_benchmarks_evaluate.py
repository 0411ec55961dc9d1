"""A benchmark in a public schema is an evaluation set in its own domain: a HumanEval file read through
its preset evaluates as code items the code verifier scores (its tests ride in the metadata), and a
GSM8K file as math items; the reward path is the one every evaluation uses."""

from __future__ import annotations

from pathlib import Path

from flows.config import BenchmarkConfig, DataConfig
from flows.curriculum.evaluation import BENCHMARK, benchmark_sets
from verifiers.scoring import DEFAULT_VERIFIERS, resolve_verifiers, score

PRESETS = Path(__file__).parent / "data" / "presets"


def test_a_humaneval_benchmark_evaluates_as_code_with_its_tests():
    data = DataConfig(benchmarks=[BenchmarkConfig(path=str(PRESETS / "humaneval.jsonl"), preset="humaneval")])
    (name, rows), *_ = benchmark_sets(data, n_items=10).items()
    lines = (PRESETS / "humaneval.jsonl").read_text().splitlines()
    assert name == f"{BENCHMARK}humaneval" and len(rows) == len(lines) >= 2
    assert {r["domain"] for r in rows} == {"code"}
    assert all('"entry_point"' in r["metadata"] and '"test"' in r["metadata"] for r in rows)
    verifiers = resolve_verifiers({"code"}, DEFAULT_VERIFIERS)  # the process sandbox (make test installs it)
    gold = score(verifiers, rows, [r["reference"] for r in rows])
    wrong = score(verifiers, rows, ["def nothing():\n    pass\n"] * len(rows))
    assert [r.reward for r in gold] == [1.0] * len(rows)
    assert [r.reward for r in wrong] == [0.0] * len(rows)


def test_a_gsm8k_benchmark_evaluates_as_math_with_the_final_number():
    data = DataConfig(benchmarks=[BenchmarkConfig(path=str(PRESETS / "gsm8k.jsonl"), preset="gsm8k")])
    rows = next(iter(benchmark_sets(data, n_items=2).values()))
    assert {r["domain"] for r in rows} == {"math"}
    verifiers = resolve_verifiers({"math"}, DEFAULT_VERIFIERS)
    got = score(verifiers, rows, [f"\\boxed{{{r['reference']}}}" for r in rows])
    assert [r.reward for r in got] == [1.0, 1.0]
