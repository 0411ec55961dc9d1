"""`m1 experiment algorithms`: the output contract at --quick size, and the summary's arithmetic."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.experiments.arms import ARMS, QUICK
from flows.experiments.runs import RunResult
from flows.experiments.summary import claim_check, summarise, trailing_mean


@pytest.mark.slow
def test_quick_run_writes_the_contract(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["experiment", "algorithms", "--quick", "--output", str(out)])
    assert result.exit_code == 0, result.output
    with open(out / "steps.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:4] == ["algorithm", "seed", "step", "reward"]
    assert {"clip_fraction", "masked_fraction", "entropy"} <= set(rows[0])
    runs = {(r["algorithm"], r["seed"]) for r in rows}
    assert runs == {(a.name, str(s)) for a in ARMS for s in range(QUICK.seeds)}
    assert len(rows) == len(ARMS) * QUICK.seeds * QUICK.steps
    assert all(0.0 <= float(r["reward"]) <= 1.1 for r in rows)
    summary = (out / "summary.md").read_text()
    for arm in ARMS:
        assert f"| {arm.name} |" in summary
    assert "steps to reach DAPO's final" in summary and "The paper's claim" in summary
    assert (out / "reward.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the warm start is trained once and cached: a second run reuses it
    assert len(list((tmp_path / "home" / "experiments" / "algorithms").glob("warm-start-*"))) == 1


def _run(arm: str, seed: int, curve: list[float]) -> RunResult:
    history = [
        {"step": i + 1, "reward_mean": r, "clip_fraction": 0.1, "entropy": 1.0} for i, r in enumerate(curve)
    ]
    return RunResult(arm, seed, history, heldout_pass=0.5, seconds=1.0)


def test_steps_to_reach_are_measured_against_dapo_in_the_same_run():
    arms = [a for a in ARMS if a.kind == "algorithm"]
    dapo = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]  # final (last 2 steps) 0.55
    results = [_run("dapo", s, dapo) for s in range(2)]
    results += [_run("cispo", s, [0.1, 0.6, 0.6, 0.6, 0.6, 0.6]) for s in range(2)]
    results += [_run("grpo", s, [0.1] * 6) for s in range(2)]
    summaries, target = summarise(results, arms, window=2)
    assert target == pytest.approx(0.55)
    reach = {s.arm.name: s.reach for s in summaries}
    # trailing 2-step means: dapo 0.55 first at step 6; cispo (0.1+0.6)/2 < 0.55, then 0.6 at step 3
    assert reach == {"grpo": [None, None], "dapo": [6, 6], "cispo": [3, 3]}
    assert "a ratio of 0.50" in claim_check(summaries, 6) and "supports" in claim_check(summaries, 6)
    np.testing.assert_allclose(trailing_mean(np.array([1.0, 3.0, 5.0]), 2), [1.0, 2.0, 4.0])
