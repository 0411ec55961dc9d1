"""A judge at another endpoint (``M1_GENRM_URL``: any OpenAI-compatible server) goes through the same
measurement, gate and report as the run's own judge; `m1 genrm eval --endpoint URL` prints the same table
for it, on the run's held-out labels when no labels file is given."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flows.config import PipelineConfig
from tests.genrm.scripted import blocks, prefers_longer, scripted_judge
from verifiers.genrm.prompts import defuse

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]
SMALL = {"general_items": 12, "train_prompts": 4, "eval_prompts": 6}


def oracle(rows, pairwise=None):
    """A judge that knows every held-out response's true grade; ``pairwise`` replaces its verdicts."""
    grade = {(defuse(r["question"]), defuse(r["response"])): r["grade"] for r in rows}

    def reply(message: str) -> str:
        b = blocks(message)
        if "response_a" not in b:
            return f"Grade: {grade[(b['question'], b['response'])]}"
        if pairwise is not None:
            return pairwise(message)
        a, c = grade[(b["question"], b["response_a"])], grade[(b["question"], b["response_b"])]
        return "Verdict: [[A]]" if a > c else "Verdict: [[B]]" if c > a else "Verdict: [[C]]"

    return reply


@pytest.fixture
def config(tmp_path):
    return PipelineConfig(name="theirs", home=str(tmp_path / "home"), genrm=SMALL)


@pytest.mark.slow
def test_a_judge_at_another_endpoint_is_measured_gated_and_reported(config, prefect_harness, monkeypatch):
    from flows.curriculum.plan import active_curriculum, general_gate
    from flows.genrm.flow import general_tasks, heldout_rows, judge_dir, judge_gate

    rows = heldout_rows(config.genrm)
    monkeypatch.setenv("M1_GENRM_MODEL", "theirs")
    with scripted_judge(oracle(rows)) as (url, script):
        monkeypatch.setenv("M1_GENRM_URL", url)
        good = general_tasks(config)
    assert good["trained"] is False and good["judge"] == url
    assert not (judge_dir(config) / "config.json").exists()  # no judge of its own was trained
    assert good["verdicts"] == {"genrm-grade": None, "genrm-pair": None} and judge_gate(config) is None
    assert "general" in [s.name for s in active_curriculum(config)[0].stages]
    assert f"## Judge theirs at {url} (M1_GENRM_URL)" in good["report"]
    assert "| pairwise balanced accuracy | 1.0 |" in good["report"]
    assert "- as `genrm-pair`: fit to train on" in good["report"]
    assert len(script.messages) > len(rows)  # every grade, and every pair in both orders

    with scripted_judge(oracle(rows, prefers_longer)) as (url, _):
        monkeypatch.setenv("M1_GENRM_URL", url)
        biased = general_tasks(config)
        assert judge_gate(config, "genrm") == biased["verdicts"]["genrm-pair"]
    assert biased["verdicts"]["genrm-pair"].startswith("pairwise balanced accuracy 0.3")
    assert biased["verdicts"]["genrm-grade"] is None  # its grades are the oracle's: fit as a grade judge
    assert general_gate(config) is None  # the default curriculum grades general items: trained on
    assert "- as `genrm-pair`: **not fit to train on**" in biased["report"]
    rows_by_metric = {r["metric"]: r for r in biased["eval"]}
    slope = rows_by_metric["pairwise length slope"]
    assert slope["value"] > 0.3 and slope["value"] == pytest.approx(slope["baseline"])


def test_eval_without_labels_measures_on_the_runs_heldout_labels(tmp_path):
    from flows.genrm.flow import heldout_rows

    rows = heldout_rows(PipelineConfig(genrm=SMALL).genrm)
    sets = [f"genrm.{k}={v}" for k, v in SMALL.items()]
    with scripted_judge(oracle(rows)) as (url, _):
        proc = subprocess.run(
            [*M1, "genrm", "eval", "--endpoint", url, *[a for s in sets for a in ("--set", s)]],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "1000"},  # the table's rows uncut, as without a terminal
        )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for metric in (
        "grade balanced accuracy",
        "pairwise balanced accuracy",
        "trivial: always the reference",
        "trivial: always the first shown",
        "trivial: the longer text wins",
        "trivial: a random verdict",
        "position consistency",
        "pairwise length slope",
        "Best-of-8 accuracy",
    ):
        assert metric in out, metric
    assert f"{len(rows)} labelled responses" in out and "fit to train on" in out
    assert (tmp_path / "judge-eval.png").stat().st_size > 10_000
