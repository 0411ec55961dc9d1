"""The three SWE rewards on tasks synthesised from a real repository, in real containers."""

from __future__ import annotations

import json

import pytest

from verifiers.swe import SWETask, SWEVerifier

pytestmark = pytest.mark.docker


def test_gold_patch_resolves(scorer, swe_tasks):
    task = SWETask.from_row(swe_tasks[0])
    r = scorer.repair(task, task.patch)
    assert r.reward == 1.0, r.details
    assert r.details["resolved"] is True
    statuses = r.details["tests"]
    assert set(statuses["FAIL_TO_PASS"].values()) == {"PASSED"}
    assert len(statuses["PASS_TO_PASS"]) == len(task.PASS_TO_PASS)


def test_empty_and_malformed_patches_score_zero(scorer, swe_tasks):
    task = SWETask.from_row(swe_tasks[0])
    assert scorer.repair(task, "").details["reason"] == "empty patch"
    r = scorer.repair(task, "this is not a diff\n")
    assert r.reward == 0.0 and "malformed diff" in r.details["reason"]


def test_patch_that_does_not_apply_scores_zero_and_says_why(scorer, swe_tasks):
    task = SWETask.from_row(swe_tasks[0])
    wrong = task.patch.replace("\n-", "\n-XX_NOT_THERE", 1)
    r = scorer.repair(task, wrong)
    assert r.reward == 0.0
    assert r.details["reason"] == "patch does not apply"
    assert "error" in r.details["apply_error"] or "patch" in r.details["apply_error"]


def test_wrong_fix_scores_zero_with_failing_tests(scorer, swe_tasks, make_patch):
    task = SWETask.from_row(swe_tasks[0])
    harmless = make_patch(task.base_commit, {"README.rst": "\nA note.\n"})
    r = scorer.repair(task, harmless)
    assert r.reward == 0.0
    assert set(task.FAIL_TO_PASS) <= set(r.details["failed"])
    assert r.details["tests"]["FAIL_TO_PASS"][task.FAIL_TO_PASS[0]] in ("FAILED", "ERROR", "missing")


def test_patch_breaking_pass_to_pass_scores_zero(scorer, swe_tasks, make_patch):
    task = SWETask.from_row(swe_tasks[0])
    gold_file = task.patch.split("\n", 1)[0].split(" b/")[-1]
    victim = "src/isodate/isotime.py" if "isotime" not in gold_file else "src/isodate/isodates.py"
    name = "parse_time" if "isotime" in victim else "parse_date"
    breaking = f"\n\ndef {name}(*args, **kwargs):\n    raise ValueError('broken on purpose')\n"
    extra = make_patch(task.base_commit, {victim: breaking})
    r = scorer.repair(task, task.patch + extra)
    assert r.reward == 0.0
    broken = [t for t in r.details["failed"] if t in set(task.PASS_TO_PASS)]
    assert broken, r.details.get("reason")


def test_localization_f1_against_gold_locations():
    row = {
        "instance_id": "x", "repo": "r", "base_commit": "c", "patch": "p", "FAIL_TO_PASS": [], "PASS_TO_PASS": [],
        "problem_statement": "", "gold_locations": {"files": ["src/a.py"], "functions": ["src/a.py::f"]},
    }  # fmt: skip
    verifier = SWEVerifier()
    exact = verifier.score({**row, "task": "localize", "response": "src/a.py::f"})
    assert exact.reward == 1.0
    half = verifier.score({**row, "task": "localize", "response": "src/a.py::g\nsrc/b.py::f"})
    assert 0 < half.reward < 1 and half.details["file_f1"] == pytest.approx(2 / 3)
    assert verifier.score({**row, "task": "localize", "response": "no idea"}).reward == 0.0


def test_testgen_rewards_a_test_that_catches_the_bug(scorer, swe_tasks):
    task = SWETask.from_row(swe_tasks[0])
    # A real test of the task: the first FAIL_TO_PASS test file, which fails on the bug and passes after.
    test_file = task.FAIL_TO_PASS[0].split("::")[0]
    from flows.swe.repos import git

    source = git(scorer.repos_dir / "isodate", "show", f"{task.base_commit}:{test_file}")
    good = scorer.testgen(task, source)
    assert good.reward == 1.0, good.details
    assert good.details["before"]["failed"] > 0 and good.details["after"]["exit_code"] == 0
    trivial = scorer.testgen(task, "def test_nothing():\n    assert True\n")
    assert trivial.reward == 0.0 and trivial.details["reason"] == "the tests do not fail on the buggy code"


def test_verifier_plugin_scores_items_from_the_registry(swe_tasks, swe_repos):
    from flows.swe.items import to_items
    from verifiers.base import default_registry, verify_safely

    items = to_items(swe_tasks[:1], ("repair", "localize"), swe_repos).to_dicts()
    verifier = default_registry().get("swe", repos_dir=str(swe_repos))
    task = SWETask.from_row(json.loads(items[0]["metadata"]))
    gold_response = f"The fix:\n```diff\n{task.patch}```\n"
    where = json.loads(items[1]["reference"])
    rewards = verify_safely(
        verifier,
        [
            {**items[0], "response": gold_response},
            {**items[0], "response": "I don't know."},
            {**items[1], "response": "\n".join(where["functions"])},
        ],
    )
    assert [r.reward for r in rewards] == [1.0, 0.0, 1.0], [r.details for r in rewards]
    assert rewards[1].details["reason"] == "empty patch"
