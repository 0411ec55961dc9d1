"""The algorithms experiment's rendering, on synthetic runs: steps.csv, summary.md's table, reach and
claim texts, and the files write_outputs leaves (the slow --quick test proves the whole run)."""

from __future__ import annotations

import csv
import json
import math

import pytest

from flows.experiments.arms import QUICK, select
from flows.experiments.estimates import Estimate, summarise
from flows.experiments.runs import RunResult
from flows.experiments.summary import (
    HELDOUT_COLUMNS,
    STEP_COLUMNS,
    claim_check,
    goals_check,
    markdown,
    reach_text,
    seeds_to_separate,
    step_rows,
    table_rows,
    write_outputs,
    write_steps_csv,
)
from m1model.rl.evaluation import PassRate, SampledPassRate


def _rate(x: float, n: int = 100) -> PassRate:
    k = round(x * n)
    return PassRate((True,) * k + (False,) * (n - k))


def _sampled(x: float, n: int = 100, samples: int = 4) -> SampledPassRate:
    """n items of which a share x were solved by all `samples` answers, the rest by none."""
    k = round(x * n)
    return SampledPassRate((samples,) * k + (0,) * (n - k), samples)


def _run(
    arm: str,
    seed: int,
    heldout: list[float],
    reward: list[float],
    seconds: float = 10.0,
    sampled: float | None = None,
) -> RunResult:
    history = [
        {
            "step": i + 1,
            "reward_mean": r,
            "clip_fraction": 0.1 * (i + 1),
            "masked_fraction": 0.5,
            "entropy": 2.0,
            "loss": 0.25,
        }
        for i, r in enumerate(reward)
    ]
    curve = [(i, _rate(x)) for i, x in enumerate(heldout)]
    return RunResult(
        arm, seed, history, curve, seconds, sampled_after=None if sampled is None else _sampled(sampled)
    )


def test_step_rows_are_one_per_step_with_the_reward_and_the_logged_columns():
    rows = step_rows([_run("cispo", 3, [0.1, 0.2, 0.3], [0.4, 0.6])])
    assert [(r["algorithm"], r["seed"], r["step"], r["reward"]) for r in rows] == [
        ("cispo", 3, 1, 0.4),
        ("cispo", 3, 2, 0.6),
    ]
    assert rows[1]["clip_fraction"] == pytest.approx(0.2) and rows[1]["loss"] == 0.25
    assert rows[0]["grad_norm"] is None  # not logged: empty, not missing


def test_steps_csv_writes_every_column_and_leaves_missing_values_empty(tmp_path):
    path = tmp_path / "steps.csv"
    write_steps_csv([{"algorithm": "sft", "seed": 0, "step": 1, "reward": None, "loss": 0.5}], path)
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(STEP_COLUMNS)
    assert rows[0]["algorithm"] == "sft" and rows[0]["loss"] == "0.5"
    assert rows[0]["reward"] == "" and rows[0]["entropy"] == ""


def test_reach_text_says_how_many_seeds_reached_and_when_none_did():
    assert reach_text([None, None], 40) == "not within 40"
    assert reach_text([4, 6], 40) == "5.0 ± 1.0"
    assert reach_text([4, None, 6], 40) == "5.0 ± 1.0 (2/3 seeds)"
    assert reach_text([7], 40) == "7.0"


def _summaries():
    arms = select("sft,dapo,cispo")
    results = [_run("dapo", s, [0.2, 0.3, 0.4, 0.5], [0.4, 0.5, 0.6], seconds=20.0) for s in range(2)]
    results += [
        _run("cispo", s, [0.2, 0.5, 0.5, x], [0.5, 0.7, 0.9], seconds=30.0, sampled=y)
        for s, (x, y) in enumerate([(0.6, 0.2), (0.8, 0.4)])
    ]
    results += [
        RunResult("sft", s, [{"step": 1, "loss": 1.0}], [(0, _rate(0.2)), (3, _rate(0.25))], 5.0)
        for s in range(2)
    ]
    return summarise(results, arms, window=2)


def test_table_rows_render_each_arms_numbers():
    summaries, _ = _summaries()
    rows = {r[0]: r for r in table_rows(summaries, _rate(0.2), steps=3)}
    cispo = rows["cispo"]
    assert cispo[1] == "0.700 ± 0.100"
    assert cispo[2] == Estimate((0.6, 0.8)).interval_text()
    assert cispo[3] == "+0.500"  # change against the warm start
    assert cispo[4] == "0.300 ± 0.100"  # sampled held-out (mean@k) over seeds: 0.2 and 0.4
    assert cispo[5] == "0.800 ± 0.000"  # final reward: the mean of the last 2 steps (0.7, 0.9), over seeds
    assert cispo[6] == "1.0 ± 0.0"  # both seeds reached DAPO's 0.5 at step 1
    assert cispo[7] == "20.00% ± 0.00%"  # clipped: mean over steps of 0.1, 0.2, 0.3
    assert cispo[8] == "50.00% ± 0.00%" and cispo[9] == "2.000 ± 0.000" and cispo[10] == "30"
    assert rows["dapo"][5] == "0.550 ± 0.000" and rows["dapo"][6] == "3.0 ± 0.0" and rows["dapo"][10] == "20"
    assert rows["dapo"][4] == "-"  # no sampled evaluation in these runs
    assert rows["sft"][3] == "+0.050"
    assert rows["sft"][5] == "-" and rows["sft"][7] == "-"  # no training reward, nothing clipped logged
    assert rows["sft"][6] == "not within 3"


def test_claim_check_calls_a_gap_within_two_standard_errors_indistinguishable():
    summaries, _ = _summaries()
    text = claim_check(summaries, 3)
    assert "CISPO 0.700 vs DAPO 0.500 (difference +0.200, standard error 0.100 over seeds)" in text
    assert "a ratio of 0.33" in text and "this run supports" in text
    assert "not distinguishable" in text  # 0.200 is not more than 2 x 0.100
    far = [_run("dapo", s, [0.2, x], [0.5]) for s, x in enumerate([0.30, 0.32])]
    far += [_run("cispo", s, [0.2, x], [0.5]) for s, x in enumerate([0.90, 0.94])]
    text = claim_check(summarise(far, select("dapo,cispo"), window=1)[0], 1)
    # the two arms' standard errors (0.02 and 0.01) add in quadrature: sqrt(0.02^2 + 0.01^2) = 0.022
    assert "(difference +0.610, standard error 0.022 over seeds)" in text
    assert "not distinguishable" not in text


def test_claim_check_without_a_cispo_reach_does_not_support_the_claim():
    late = [_run("dapo", s, [0.2, 0.5], [0.5]) for s in range(2)]
    late += [_run("cispo", s, [0.2, 0.3], [0.5]) for s in range(2)]
    text = claim_check(summarise(late, select("dapo,cispo"), window=1)[0], 1)
    assert "did not reach DAPO's final held-out accuracy within 1 steps" in text
    assert claim_check(summarise(late, select("dapo"), window=1)[0], 1).startswith("The claim needs both")


def test_markdown_states_size_data_table_goals_claim_and_images(tmp_path):
    summaries, target = _summaries()
    image = tmp_path / "reward.png"
    image.write_bytes(b"\x89PNG fake")
    info = dict(window=2, source="synthetic", n_train=30, seconds=90.0)
    text = markdown(summaries, target, QUICK, _rate(0.2), images=[("reward", image)], **info)
    assert f"Size: {QUICK.describe()}." in text
    assert "Data: synthetic; 30 training items, 100 held-out items (never trained on)." in text
    assert "Wall time: 1.5 min." in text
    assert "| cispo | 0.700 ± 0.100 |" in text and text.count("\n| ") == 4  # header and three arms
    assert "over 2 seeds" in text and "last 2 steps" in text and "reaches 0.500, DAPO's final" in text
    assert "- CISPO gains +0.500 over the warm start: met (goal +0.10)." in text
    assert "**The paper's claim (CISPO matches DAPO in half the steps):** Final held-out" in text
    assert text.endswith("![reward](reward.png)\n")
    embedded = markdown(summaries, target, QUICK, _rate(0.2), images=[("reward", image)], embed=True, **info)
    assert "![reward](data:image/png;base64,iVBORyBmYWtl)" in embedded


def test_write_outputs_writes_the_csv_the_json_the_markdown_and_both_plots(tmp_path):
    arms = select("dapo,cispo")
    results = [_run("dapo", s, [0.2, 0.3, 0.5], [0.4, 0.5]) for s in range(2)]
    results += [_run("cispo", s, [0.2, 0.5, 0.6], [0.5, 0.7]) for s in range(2)]
    size = QUICK
    out, embedded = write_outputs(
        tmp_path / "out", results, arms, size, _rate(0.2), source="synthetic", n_train=10, seconds=60.0
    )
    assert out == tmp_path / "out"
    with open(out / "steps.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 8
    summary = json.loads((out / "summary.json").read_text())
    assert summary["arms"]["cispo"][1]["heldout_after"] == 0.6
    # window: a third of the steps, at least 1: QUICK has 2 steps, so the final reward is the last step's
    assert summary["arms"]["cispo"][0]["final_reward"] == pytest.approx(0.7)
    text = (out / "summary.md").read_text()
    assert "![held-out accuracy against step](heldout.png)" in text and "last 1 steps" in text
    assert "data:image/png;base64," in embedded and "data:image" not in text
    for png in ("reward.png", "heldout.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not math.isnan(summary["arms"]["dapo"][0]["final_reward"])


def test_goals_name_every_arm_that_misses_and_say_met_when_all_do():
    warm = _rate(0.2)
    good = [_run(arm, s, [0.2, x], [0.5]) for arm in ("dapo", "cispo") for s, x in enumerate([0.5, 0.52])]
    lines = goals_check(summarise(good, select("dapo,cispo"), window=1)[0], warm)
    assert lines[0].endswith(": met.")
    bad = [_run(arm, s, [0.2, x], [0.5]) for arm in ("grpo", "dapo") for s, x in enumerate([0.1, 0.12])]
    lines = goals_check(summarise(bad, select("grpo,dapo"), window=1)[0], warm)
    assert lines == [
        "Every RL arm ends above the warm start with its 95% lower bound above it: not met by grpo, dapo."
    ]


def test_goals_say_not_met_below_the_gain_and_below_rft_and_quote_sft():
    warm = _rate(0.2)
    results = [_run("cispo", s, [0.2, x], [0.5]) for s, x in enumerate([0.25, 0.27])]
    results += [_run("rft", s, [0.2, x], [0.5]) for s, x in enumerate([0.30, 0.32])]
    results += [
        RunResult("sft", s, [{"step": 1, "loss": 1.0}], [(0, warm), (1, _rate(0.4))], 1.0) for s in range(2)
    ]
    lines = goals_check(summarise(results, select("sft,rft,cispo"), window=1)[0], warm)
    assert "CISPO gains +0.060 over the warm start: not met (goal +0.10)." in lines
    assert (
        "CISPO 0.260 vs rejection sampling 0.310: not met (goal: CISPO >= RFT; difference -0.050, standard "
        "error 0.014: beyond two standard errors)."
    ) in lines
    assert (
        lines[-1]
        == "For reference, SFT continued on gold answers with the same optimiser steps ends at 0.400."
    )


def test_markdown_layout_line_by_line():
    summaries, target = _summaries()
    text = markdown(summaries, target, QUICK, _rate(0.2), window=2, source="s", n_train=3, seconds=60.0)
    lines = text.split("\n")
    assert lines[0] == "# RL on the pipeline's math and logic items: does it learn, and CISPO vs DAPO vs GRPO"
    assert lines[1] == "" and lines[6] == "" and lines[7].startswith("| arm | held-out after")
    table = [x for x in lines if x.startswith("|")]
    assert len(table) == 5 and all(x.endswith(" |") for x in table if not x.startswith("|---"))
    arms = lines.index(next(x for x in lines if x.startswith("Arms: ")))
    assert lines[arms - 1] == "" and lines[arms + 1] == ""
    goals = lines.index("**Goals:**")
    assert lines[goals - 1] == "" and lines[goals + 1] == "" and lines[goals + 2].startswith("- ")
    assert Estimate((0.6, 0.8)).interval_text() == "-0.571 to 1.971"


def test_markdown_of_no_arms_says_zero_seeds():
    text = markdown([], 0.5, QUICK, _rate(0.2), window=1, source="s", n_train=0, seconds=0.0)
    assert "Mean ± SE over 0 seeds" in text


def test_write_outputs_window_is_a_third_of_the_steps_at_most_five_and_reruns_in_place(tmp_path):
    import dataclasses

    arms = select("dapo,cispo")
    results = [
        _run(a, s, [0.2, 0.4], [0.1 * k for k in range(1, 19)]) for a in ("dapo", "cispo") for s in range(2)
    ]
    info = dict(source="s", n_train=1, seconds=1.0)
    out, _ = write_outputs(
        tmp_path / "o", results, arms, dataclasses.replace(QUICK, steps=18), _rate(0.2), **info
    )
    assert "last 5 steps" in (out / "summary.md").read_text()  # 18 // 3 = 6, capped at 5
    assert (out / "summary.json").read_text().startswith('{\n "heldout_items": 100')
    assert "![reward against step](reward.png)" in (out / "summary.md").read_text()
    write_outputs(tmp_path / "o", results, arms, dataclasses.replace(QUICK, steps=15), _rate(0.2), **info)
    assert "last 5 steps" in (out / "summary.md").read_text()  # 15 // 3
    write_outputs(tmp_path / "o", results, arms, dataclasses.replace(QUICK, steps=9), _rate(0.2), **info)
    assert "last 3 steps" in (out / "summary.md").read_text()


def test_goals_compare_cispo_and_rft_sampled_too_with_the_gap_in_standard_errors():
    warm = _rate(0.2)
    results = [_run("cispo", s, [0.2, 0.25], [0.5], sampled=y) for s, y in enumerate([0.34, 0.36])]
    results += [_run("rft", s, [0.2, 0.30], [0.5], sampled=0.30) for s in range(2)]
    lines = goals_check(summarise(results, select("rft,cispo"), window=1)[0], warm)
    line = next(x for x in lines if x.startswith("CISPO 0.250 vs rejection sampling 0.300: not met"))
    # sampled: 0.35 +- 0.01 vs 0.30 +- 0: +0.05 is five standard errors
    assert line.endswith(
        "Sampled at temperature 1 (mean@k, from the distribution training samples): CISPO 0.350 vs RFT 0.300, "
        "CISPO >= RFT (difference +0.050, standard error 0.010: beyond two standard errors)."
    )
    close = [_run("cispo", s, [0.2, 0.25], [0.5], sampled=y) for s, y in enumerate([0.27, 0.31])]
    close += [_run("rft", s, [0.2, 0.30], [0.5], sampled=0.30) for s in range(2)]
    line = goals_check(summarise(close, select("rft,cispo"), window=1)[0], warm)[-1]
    assert (
        "CISPO 0.290 vs RFT 0.300, CISPO < RFT (difference -0.010, standard error 0.020: within two" in line
    )
    unsampled = [_run(a, s, [0.2, 0.3], [0.5]) for a in ("rft", "cispo") for s in range(2)]
    line = goals_check(summarise(unsampled, select("rft,cispo"), window=1)[0], warm)[-1]
    assert line == (
        "CISPO 0.300 vs rejection sampling 0.300: met (goal: CISPO >= RFT; difference +0.000, standard error "
        "0.000: within two standard errors)."
    )


def test_heldout_csv_has_each_runs_greedy_and_sampled_numbers_before_and_after(tmp_path):
    arms = select("dapo,cispo")
    results = [_run("dapo", s, [0.2, 0.5], [0.4], sampled=0.3) for s in range(2)]
    results += [_run("cispo", 0, [0.2, 0.6], [0.5])]  # a run without a sampled evaluation
    out, _ = write_outputs(
        tmp_path,
        results,
        arms,
        QUICK,
        _rate(0.2),
        warm_sampled=_sampled(0.1),
        source="s",
        n_train=1,
        seconds=1.0,
    )
    with open(out / "heldout.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == HELDOUT_COLUMNS
    assert [tuple(r.values()) for r in rows] == [
        ("dapo", "0", "0.2", "0.5", "0.1", "0.3", "4"),
        ("dapo", "1", "0.2", "0.5", "0.1", "0.3", "4"),
        ("cispo", "0", "0.2", "0.6", "0.1", "", ""),
    ]
    text = (out / "summary.md").read_text()
    assert "; sampled at temperature 1 10.0% (mean@4 over 100 items, 95% CI " in text
    assert "| sampled held-out after (mean@4) |" in text
    assert "4 answers per item sampled at temperature 1" in text


def test_claim_check_adds_the_sampled_comparison_with_dapo_when_the_run_sampled():
    runs = [_run("dapo", s, [0.2, 0.5], [0.5], sampled=y) for s, y in enumerate([0.30, 0.32])]
    runs += [_run("cispo", s, [0.2, 0.5], [0.5], sampled=y) for s, y in enumerate([0.31, 0.33])]
    text = claim_check(summarise(runs, select("dapo,cispo"), window=1)[0], 1)
    assert text.endswith(
        "CISPO 0.320 vs DAPO 0.310, CISPO >= DAPO (difference +0.010, standard error 0.014: within two "
        "standard errors)."
    )


def test_seeds_to_separate_scales_the_standard_error_by_one_over_root_seeds():
    # 3 seeds, SE 0.014, gap 0.009: 3 x (0.028 / 0.009)^2 = 29.04 -> 30 seeds
    assert "about 30 seeds per arm" in seeds_to_separate(0.009, 0.014, 3)
    assert "about 30 seeds per arm" in seeds_to_separate(-0.009, 0.014, 3)  # the sign does not matter
    assert "no number of seeds" in seeds_to_separate(0.0, 0.01, 3)
    assert "agree exactly" in seeds_to_separate(0.01, 0.0, 3)
    summaries, _ = _summaries()  # CISPO 0.700 vs DAPO 0.500, SE 0.100 over 2 seeds: 2 x (0.2 / 0.2)^2 = 2
    assert claim_check(summaries, 3).endswith(
        "separating a difference of 0.200 at two standard errors would take about 2 seeds per arm, if the "
        "spread over seeds stays as measured."
    )
