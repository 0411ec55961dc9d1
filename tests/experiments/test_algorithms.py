"""`m1 experiment algorithms`: the output contract at --quick size, and the summary's arithmetic."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.experiments.arms import ARMS, FULL, QUICK, select
from flows.experiments.estimates import Estimate, summarise, summary_json
from flows.experiments.runs import RunResult
from flows.experiments.summary import claim_check, goals_check, markdown
from m1model.rl.evaluation import PassRate, SampledPassRate


@pytest.mark.slow
def test_quick_run_writes_the_contract(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["experiment", "algorithms", "--quick", "--output", str(out)])
    assert result.exit_code == 0, result.output
    with open(out / "steps.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:4] == ["algorithm", "seed", "step", "reward"]
    assert {"clip_fraction", "masked_fraction", "entropy", "loss"} <= set(rows[0])
    runs = {(r["algorithm"], r["seed"]) for r in rows}
    assert runs == {(a.name, str(s)) for a in ARMS for s in range(QUICK.seeds)}
    assert len(rows) == len(ARMS) * QUICK.seeds * QUICK.steps
    assert all(0.0 <= float(r["reward"]) <= 1.1 for r in rows if r["algorithm"] != "sft")
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"heldout_items", "arms"} and summary["heldout_items"] > 0
    assert set(summary["arms"]) == {a.name for a in ARMS}
    for arm, runs_ in summary["arms"].items():
        assert [r["seed"] for r in runs_] == list(range(QUICK.seeds))
        for r in runs_:
            assert set(r) == {
                "seed",
                "heldout_before",
                "heldout_after",
                "final_reward",
                "steps_to_target",
                "heldout_curve",
            }
            assert [s for s, _ in r["heldout_curve"]] == list(range(QUICK.steps + 1))
            assert r["heldout_curve"][-1][1] == r["heldout_after"]
            assert (r["final_reward"] is None) == (arm == "sft")
    text = (out / "summary.md").read_text()
    for arm in ARMS:
        assert f"| {arm.name} |" in text
    assert "steps to DAPO's held-out" in text and "The paper's claim" in text and "**Goals:**" in text
    for png in ("reward.png", "heldout.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every run's end is also measured sampled (mean@k, k = QUICK.eval_samples), as is the warm start
    with open(out / "heldout.csv") as fh:
        heldout = list(csv.DictReader(fh))
    assert {(r["arm"], r["seed"]) for r in heldout} == runs and len(heldout) == len(runs)
    for r in heldout:
        assert r["samples"] == str(QUICK.eval_samples) and 0.0 <= float(r["sampled_after"]) <= 1.0
        assert float(r["greedy_after"]) == summary["arms"][r["arm"]][int(r["seed"])]["heldout_after"]
    assert len({r["sampled_before"] for r in heldout}) == 1
    assert f"| sampled held-out after (mean@{QUICK.eval_samples}) |" in text
    # the warm start is trained once and cached: a second run reuses it
    assert len(list((tmp_path / "home" / "experiments" / "algorithms").glob("warm-start-*"))) == 1


def _rate(x: float, n: int = 100) -> PassRate:
    k = round(x * n)
    return PassRate((True,) * k + (False,) * (n - k))


def _run(arm: str, seed: int, heldout: list[float], reward: list[float] | None = None) -> RunResult:
    reward = reward or [0.5] * (len(heldout) - 1)
    history = [
        {"step": i + 1, "reward_mean": r, "clip_fraction": 0.1, "entropy": 1.0} for i, r in enumerate(reward)
    ]
    curve = [(i, _rate(x)) for i, x in enumerate(heldout)]
    return RunResult(arm, seed, history, curve, seconds=1.0)


def test_steps_to_target_are_measured_against_dapo_held_out_in_the_same_run():
    arms = select("grpo,dapo,cispo")
    results = [_run("dapo", s, [0.1, 0.2, 0.3, 0.4, 0.5]) for s in range(2)]  # final 0.5
    results += [_run("cispo", s, [0.1, 0.5, 0.6, 0.6, 0.6]) for s in range(2)]
    results += [_run("grpo", s, [0.1] * 5) for s in range(2)]
    summaries, target = summarise(results, arms, window=2)
    assert target == pytest.approx(0.5)
    reach = {s.arm.name: s.reach for s in summaries}
    assert reach == {"grpo": [None, None], "dapo": [4, 4], "cispo": [1, 1]}
    text = claim_check(summaries, 4)
    assert "a ratio of 0.25" in text and "supports" in text


def test_a_warm_start_that_already_meets_the_target_is_zero_steps_and_no_claim():
    """The edge where training is not needed to reach the target: steps to target 0 (not "never"), and
    the half-the-steps claim is not judged on it (0 / 0)."""
    arms = select("dapo,cispo")
    results = [_run("dapo", s, [0.5, 0.4, 0.5]) for s in range(2)]  # final 0.5, met at the warm start
    results += [_run("cispo", s, [0.5, 0.6, 0.6]) for s in range(2)]
    summaries, target = summarise(results, arms, window=1)
    assert target == pytest.approx(0.5)
    assert {s.arm.name: s.reach for s in summaries} == {"dapo": [0, 0], "cispo": [0, 0]}
    text = claim_check(summaries, 2)
    assert "warm start already meets its own final held-out accuracy (steps to target 0)" in text
    assert "a ratio of" not in text and "did not reach" not in text
    assert summary_json(summaries, _rate(0.5))["arms"]["dapo"][0]["steps_to_target"] == 0


def test_without_a_dapo_arm_steps_count_to_the_first_arms_final_and_say_so():
    arms = select("rft,cispo+positive-only")
    results = [_run("rft", s, [0.1, 0.3, 0.4]) for s in range(2)]  # final 0.4
    results += [_run("cispo+positive-only", s, [0.1, 0.4, 0.5]) for s in range(2)]
    summaries, target = summarise(results, arms, window=1)
    assert target == pytest.approx(0.4)
    assert {s.arm.name: s.reach for s in summaries} == {"rft": [2, 2], "cispo+positive-only": [1, 1]}
    text = markdown(summaries, target, QUICK, _rate(0.1), window=1, source="test", n_train=1, seconds=1.0)
    assert "steps to RFT's held-out" in text and "reaches 0.400, RFT's final" in text
    assert "DAPO's held-out" not in text


def test_summary_json_is_the_contract():
    arms = select("sft,cispo")
    warm = _rate(0.2)
    results = [_run("cispo", s, [0.2, 0.3, 0.35], reward=[0.4, 0.6]) for s in range(2)]
    results += [
        RunResult(
            "sft", s, [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.9}], [(0, warm), (2, _rate(0.3))], 1.0
        )
        for s in range(2)
    ]
    summaries, _ = summarise(results, arms, window=1)
    got = summary_json(summaries, warm)
    assert got["heldout_items"] == 100
    assert got["arms"]["cispo"][0] == {
        "seed": 0,
        "heldout_before": 0.2,
        "heldout_after": 0.35,
        "final_reward": pytest.approx(0.6),
        "steps_to_target": 1,  # no DAPO arm: the target is the first arm's (sft) final 0.3, reached at 1
        "heldout_curve": [[0, 0.2], [1, 0.3], [2, 0.35]],
    }
    assert got["arms"]["sft"][0]["final_reward"] is None


def test_estimates_use_student_t_over_seeds():
    e = Estimate((0.30, 0.34, 0.32))
    assert e.mean == pytest.approx(0.32)
    assert e.se == pytest.approx(np.std([0.30, 0.34, 0.32], ddof=1) / np.sqrt(3))
    lo, hi = e.interval
    assert (hi - lo) / 2 == pytest.approx(4.302653 * e.se, rel=1e-5)
    assert Estimate((0.5,)).interval is None and Estimate((0.5,)).text() == "0.500"


def test_goals_say_which_arms_miss():
    arms = select("rft,dapo,cispo")
    warm = _rate(0.2)
    results = [_run("cispo", s, [0.2, x]) for s, x in enumerate([0.33, 0.35, 0.34])]
    results += [_run("rft", s, [0.2, x]) for s, x in enumerate([0.30, 0.31, 0.29])]
    results += [
        _run("dapo", s, [0.2, x]) for s, x in enumerate([0.15, 0.30, 0.25])
    ]  # wide: lower bound < 0.2
    summaries, _ = summarise(results, arms, window=1)
    lines = goals_check(summaries, warm)
    assert lines[0].endswith("not met by dapo.")
    assert lines[1].startswith("CISPO gains +0.140") and ": met" in lines[1]
    assert "CISPO 0.340 vs rejection sampling 0.300: met" in lines[2]


def test_select_arms():
    assert [a.name for a in select("cispo,sft")] == ["sft", "cispo"]  # the table's order
    with pytest.raises(ValueError, match="unknown arms nope"):
        select("cispo,nope")


def test_size_for_takes_zero_sampled_answers_as_a_choice_not_the_default():
    from flows.experiments.algorithms import size_for

    assert size_for(False).eval_samples == FULL.eval_samples == 8
    assert size_for(True).eval_samples == QUICK.eval_samples
    assert size_for(True, eval_samples=0).eval_samples == 0
    assert size_for(False, eval_samples=5, seeds=4).eval_samples == 5
    assert "8 sampled answers per item at the end" in size_for(False).describe()
    assert "sampled" not in size_for(False, eval_samples=0).describe()


def test_the_sampled_evaluation_samples_at_the_runs_temperature_and_none_for_zero(monkeypatch):
    from flows.config import TrainConfig
    from flows.curriculum import evaluation
    from flows.experiments import runs

    seen = {}

    def spy(model, prompts, items, reward_fn, **kwargs):
        seen.update(kwargs, prompts=len(prompts))
        return SampledPassRate((1,) * len(items), kwargs["samples"])

    monkeypatch.setattr(evaluation, "sampled_pass_rate", spy)
    monkeypatch.setattr(evaluation, "encode_prompt", lambda tokenizer, row: [1, 2])
    monkeypatch.setattr(evaluation, "stop_ids", lambda tokenizer: [0])
    tc = TrainConfig(temperature=0.7, max_new_tokens=5)
    rows = [{"id": "a"}, {"id": "b"}]
    result = runs.evaluate_sampled(None, None, rows, None, tc, 3)
    assert (result.n, result.samples) == (2, 3)
    assert seen == {
        "prompts": 2,
        "samples": 3,
        "max_new_tokens": 5,
        "stop_token_ids": [0],
        "temperature": 0.7,
    }
    assert runs.evaluate_sampled(None, None, rows, None, tc, 0) is None
