"""The judge on a policy's own answers beside the rule grade (flows/curriculum/judge_on_policy.py, `m1 genrm eval
--policy`), with scripted judges whose order is known."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from flows.config import GenRMConfig
from flows.curriculum.judge_on_policy import judge_policy, order_share_interval, policy_items, sample_answers
from flows.genrm.labels import labelled_set, rule_grade, write_labels
from flows.genrm.train_judge import datasets
from m1model.rl.length_bias import RuleOrder, order_against_rule
from tests.genrm.scripted import blocks, scripted_judge
from verifiers.genrm.grade import GradeJudge

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]


def test_pairs_are_counted_within_each_group_only():
    groups = [
        [(5, 1.0), (2, 0.0), (2, 0.5), (5, 1.0)],  # 4 pairs ordered as the rule; the two 2s split
        [(4, 0.2), (1, 0.9), (3, 0.2)],  # 4 over 1 and 3 over 1 the other way; 4 and 3 tied
    ]
    got = order_against_rule(groups)
    assert got == RuleOrder(right=4, wrong=2, tied=1, split=1)
    assert got.share == pytest.approx(4.5 / 7)
    # the same answers in one group would compare across prompts: other counts
    assert order_against_rule([groups[0] + groups[1]]) != got


def test_the_interval_resamples_prompts_not_pairs():
    """Prompts that disagree (half ordered all right, half all wrong) leave the share's interval wide; as
    many independent pairs at the same share would give one well under half as wide."""
    mixed = [RuleOrder(right=10)] * 10 + [RuleOrder(wrong=10)] * 10
    low, high = order_share_interval(mixed, seed=1)
    assert low < 0.36 and high > 0.64  # 200 independent pairs: about 0.43-0.57
    even = [RuleOrder(right=5, wrong=5)] * 20  # every prompt at 0.5: nothing to resample
    assert order_share_interval(even) == (0.5, 0.5)


def _answers(items):
    """Per item: the reference (grade 5), its number changed (2), its number dropped (1), the reference."""
    out = []
    for item in items:
        key, ref = json.loads(item["metadata"])["key"], item["reference"]
        out += [ref, ref.replace(key, "99" if key != "99" else "98"), ref.replace(f" {key}", ""), ref]
    return out


def _judge(url):
    return GradeJudge(url=url, model="scripted", max_tokens=16, grade_views="reference")


def test_judge_policy_counts_a_scripted_judges_order_beside_the_rule():
    numbered = [x for x in policy_items(GenRMConfig(), 12) if x["task"] in ("sign", "reply")]
    items = numbered[:5]  # each with a number to change
    answers = _answers(items)
    grades = [rule_grade(items[i // 4], a) for i, a in enumerate(answers)]
    assert grades == [5, 2, 1, 5] * len(items)  # the set up this test relies on

    def honest(m):  # tells the reference from any other text, not a wrong fact from a missing one
        b = blocks(m)
        return "Grade: 5" if b["response"].strip() == b["reference"].strip() else "Grade: 2"

    with scripted_judge(honest) as (url, _):
        got = judge_policy(_judge(url), items, answers, 4)
    # per prompt: 5 > 2, 5 > 1 twice each as the rule; 2 vs 1 tied; the two 5s alike (no split)
    assert got.order == RuleOrder(right=20, wrong=0, tied=5, split=0)
    assert got.order.share == pytest.approx(0.9) and got.low == got.high == pytest.approx(0.9)
    assert got.rule_grades == {5: 10, 2: 5, 1: 5} and got.failed == 0 and got.answers == 20

    with scripted_judge(lambda m: "Grade: 5" if " 99 " in blocks(m)["response"] else "Grade: 1") as (url, _):
        backwards = judge_policy(_judge(url), items, answers, 4)
    # a changed number graded 5, all else 1: 5 > 2 and 2 < 5 the other way, 2 > 1 as the rule, the rest tied
    assert backwards.order == RuleOrder(right=5, wrong=10, tied=10, split=0) and backwards.order.share == 0.4

    with scripted_judge(lambda m: "Grade: 3") as (url, _):
        flat = judge_policy(_judge(url), items, answers, 4)
    assert flat.order == RuleOrder(right=0, wrong=0, tied=25, split=0) and flat.order.share == 0.5

    with scripted_judge(lambda m: "no grade here") as (url, _):
        broken = judge_policy(_judge(url), items, answers, 4)
    assert broken.failed == 20 and "20 judgments failed" in broken.table()[-1]["note"]


def test_judge_policy_refuses_answers_that_do_not_fill_the_groups():
    items = policy_items(GenRMConfig(), 2)
    with pytest.raises(ValueError, match="3 answers for 2 items x 2"):
        judge_policy(None, items, ["a", "b", "c"], 2)


def test_policy_items_are_the_judges_held_out_prompts_and_none_it_trained_on():
    cfg = GenRMConfig(judge_domains=["general"], train_prompts=8, eval_prompts=4)
    train, test = datasets(cfg)
    held_out = list(dict.fromkeys(x.question for x in test))
    items = policy_items(cfg, 10)
    assert [x["prompt"] for x in items[: len(held_out)]] == held_out
    assert not {x["prompt"] for x in items} & {x.question for x in train}
    assert all(x["domain"] == "general" and x["reference"] for x in items)


def test_sample_answers_are_k_per_item_and_seeded(tiny_checkpoint):
    items = policy_items(GenRMConfig(), 2)
    first = sample_answers(tiny_checkpoint, items, 3, max_tokens=6, temperature=1.0, seed=5)
    assert len(first) == 6 and all(isinstance(t, str) for t in first)
    assert sample_answers(tiny_checkpoint, items, 3, max_tokens=6, temperature=1.0, seed=5) == first


def test_eval_cli_with_a_policy_prints_the_order_table(tmp_path, tiny_checkpoint):
    path = tmp_path / "labels.jsonl"
    write_labels(path, labelled_set(0, 0, 3, seed=2))
    with scripted_judge(lambda m: "Grade: 4" if "[[" not in m else "Verdict: [[C]]") as (url, script):
        proc = subprocess.run(
            [*M1, "genrm", "eval", "--endpoint", url, "--labels", str(path), "--no-pairwise"]
            + ["--policy", str(tiny_checkpoint), "--policy-prompts", "2", "--policy-samples", "2"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "COLUMNS": "250"},  # the title (with the checkpoint's path) on one line
        )
        asked = len(script.messages)
    assert proc.returncode == 0, proc.stderr
    assert "beside the rule grade" in proc.stdout and "ordered as the rule" in proc.stdout
    assert "answers by rule grade" in proc.stdout and asked >= 24 + 4  # the labels, then 2 x 2 answers
    assert (
        "as the gate reads it (genrm.policy_gate_margin 0.00): not fit to train on" in proc.stdout
    )  # constant

    bad = subprocess.run(
        [*M1, "genrm", "eval", "--endpoint", url, "--labels", str(path), "--no-pairwise"]
        + ["--policy", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "not a model folder" in bad.stderr and "Traceback" not in bad.stderr
