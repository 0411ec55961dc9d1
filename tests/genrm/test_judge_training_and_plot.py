"""The judge's training run on a tiny configuration (flows/genrm/train_judge.py: data, SFT, served
evaluation, the saved checkpoint and its summary), what the evaluation plot draws (flows/genrm/files.py),
the general items' schema guard, the math labels' items and grades per perturbation, and the logic
responses' cut-off answer (issue 25: written from the mutation sample's untested and surviving mutants;
the slow flow test trains a real judge)."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest

import flows.genrm.files as files_module
import flows.genrm.general as general_module
from flows.config import GenRMConfig, ModelConfig
from flows.genrm.general import GeneralTask, general_items
from flows.genrm.labels import LOGIC_TASKS, _math_responses, labelled_set
from flows.genrm.train_judge import (
    HELDOUT,
    datasets,
    judge_examples,
    pair_examples,
    train_judge,
)
from verifiers.genrm.evaluate import JudgeEval

TINY_JUDGE = ModelConfig(
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=8,
    intermediate_size=16,
    vocab_size=320,
)


def test_train_judge_on_a_tiny_config_saves_a_checkpoint_its_summary_and_the_heldout_labels(tmp_path):
    from m1model.policy import load_policy

    cfg = GenRMConfig(
        train_prompts=4,
        eval_prompts=2,
        judge_steps=1,
        judge_batch_size=2,
        judge_max_tokens=2,
        judge_model=TINY_JUDGE,
    )
    steps = []
    summary = train_judge(tmp_path / "judge", cfg, on_step=steps.append, inputs_hash="abc")

    train, test = datasets(cfg)
    rng = random.Random(f"judge/{cfg.seed}")
    expected = judge_examples(train, cfg, rng)
    assert summary["inputs_hash"] == "abc"
    assert summary["train_examples"] == len(expected)
    assert {e.kind for e in expected} == {"grade", "point"}  # the default pairwise judge is pointwise
    assert (summary["train_responses"], summary["heldout_responses"]) == (len(train), len(test))
    assert summary["heldout_grades"] == dict(Counter(x.grade for x in test))
    assert summary["config"] == cfg.model_dump() and summary["pair_method"] == "pointwise"
    assert summary["eval"]["pairwise"]["method"] == "pointwise"  # measured the way it was trained
    assert summary["grade_views"] == summary["eval"]["grade_views"] == "both"
    assert len(steps) == 1 and summary["final_loss"] == pytest.approx(steps[-1]["loss"])
    # every held-out response was put to the served judge (2 tokens cannot hold a grade: all fail)
    assert summary["eval"]["n"] + summary["eval"]["rejected"] == len(test)
    assert summary["eval"]["failed"] == len(test)
    assert 0 < summary["train_seconds"] <= summary["seconds"]

    folder = tmp_path / "judge"
    meta = json.loads((folder / "training.json").read_text())
    assert meta["judge"]["train_examples"] == len(expected)
    assert JudgeEval.from_dict(meta["judge"]["eval"]).confusion == summary["eval"]["confusion"]
    assert [s["loss"] for s in meta["sft"]] == [s["loss"] for s in steps]
    held = [json.loads(line) for line in (folder / HELDOUT).read_text().splitlines()]
    assert [(r["prompt_id"], r["response"], r["grade"]) for r in held] == [
        (x.prompt_id, x.response, x.grade) for x in test
    ]
    model, tokenizer = load_policy(folder)
    assert model.config.hidden_size == 16 and model.config.num_hidden_layers == 1
    assert model.config.vocab_size == len(tokenizer)


def _eval(confusion) -> JudgeEval:
    return JudgeEval(
        n=6,
        accuracy=0.5,
        majority_baseline=0.25,
        spearman=0.3,
        failed=1,
        confusion=confusion,
        best_of_n=[
            {"n": 1, "judge": 0.4, "pass": 0.4, "random": 0.4, "prompts": 2},
            {"n": 2, "judge": 0.6, "pass": 0.7, "random": 0.45, "prompts": 2},
            {"n": 4, "judge": 0.7, "pass": 0.9, "random": 0.5, "prompts": 2},
        ],
    )


def test_the_evaluation_plot_draws_best_of_n_and_the_confusion_counts(tmp_path, monkeypatch):
    drawn = []
    real_save = files_module.save_png

    def keep(fig, path, dpi=110):
        drawn.append((fig, dpi))
        return real_save(fig, path, dpi=dpi)

    monkeypatch.setattr(files_module, "save_png", keep)
    result = _eval({5: {"5": 2, "4": 1}, 2: {"2": 1, "fail": 1}, 1: {"3": 1}})
    out = files_module.plot_eval(result, tmp_path / "eval.png", "my title")
    assert out == tmp_path / "eval.png" and out.read_bytes()[:4] == b"\x89PNG"
    ((fig, dpi),) = drawn
    assert dpi == 100
    ax, cm = fig.axes[:2]
    assert fig._suptitle.get_text() == "my title"

    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["pass@N (ceiling)", "judge's Best-of-N", "random pick (floor)"]
    assert list(lines["pass@N (ceiling)"].get_ydata()) == [0.4, 0.7, 0.9]
    assert list(lines["judge's Best-of-N"].get_ydata()) == [0.4, 0.6, 0.7]
    assert list(lines["random pick (floor)"].get_ydata()) == [0.4, 0.45, 0.5]
    assert [line.get_linestyle() for line in lines.values()] == ["--", "-", ":"]
    assert list(lines["pass@N (ceiling)"].get_xdata()) == [1, 2, 4]
    assert ax.get_ylim() == (0, 1.05)
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(lines)

    # rows: true grades ascending; columns: the judge's grades 1-5 then "fail"; absent cells are 0
    assert [t.get_text() for t in cm.get_xticklabels()] == ["1", "2", "3", "4", "5", "fail"]
    assert [t.get_text() for t in cm.get_yticklabels()] == ["1", "2", "5"]
    assert cm.images[0].get_array().tolist() == [
        [0, 0, 1, 0, 0, 0],
        [0, 1, 0, 0, 0, 1],
        [0, 0, 0, 1, 2, 0],
    ]
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in cm.texts}
    assert len(cells) == 18
    assert (
        cells[(2, 4)].get_text() == "2"
        and cells[(1, 5)].get_text() == "1"
        and cells[(0, 0)].get_text() == "0"
    )
    assert {(t.get_fontsize(), t.get_ha(), t.get_va()) for t in cm.texts} == {(8, "center", "center")}
    assert cm.get_title() == "grades: accuracy 0.50 (majority 0.25)"
    assert (cm.get_xlabel(), cm.get_ylabel()) == ("judge's grade", "true grade")


def test_general_items_that_fail_the_schema_raise_with_the_reasons(monkeypatch):
    monkeypatch.setattr(
        general_module, "TEMPLATES", {"blank": lambda rng: GeneralTask("  ", "ref", "Monday", "day")}
    )
    with pytest.raises(RuntimeError, match=r"general items failed the schema: \['empty prompt'\]"):
        general_items(1)


def test_a_logic_response_cut_off_before_its_answer_is_the_unfinished_sentence():
    labs = labelled_set(0, len(LOGIC_TASKS), 0, seed=3)
    cut = [x for x in labs if x.perturbation == "truncated"]
    assert len(cut) == len(LOGIC_TASKS)
    assert {x.response for x in cut} == {"I think the answer is"}
    assert {x.grade for x in cut} == {1}  # no final answer


MATH_GRADES = {
    "reference": 5,
    "padded": 5,
    "echoed": 5,
    "unformatted": 4,  # the right number, not boxed
    "wrong": 2,
    "padded_wrong": 2,
    "echoed_wrong": 2,
    "injection": 2,
    "other_item": 2,  # another problem's boxed answer: a wrong final answer
    "truncated": 1,  # cut off before any answer
}


def test_math_labels_grade_each_perturbation_by_the_math_verifier_on_canonical_items():
    labs = labelled_set(12, 0, 0, seed=4)
    by_prompt: dict[str, list] = {}
    for x in labs:
        by_prompt.setdefault(x.prompt_id, []).append(x)
    assert list(by_prompt) == [f"math-4-{i}" for i in range(12)]
    for prompt_id, group in by_prompt.items():
        ref = next(x for x in group if x.perturbation == "reference")
        assert ref.item == {
            "id": prompt_id,
            "domain": "math",
            "task": "word-problem",
            "prompt": ref.question,
            "reference": ref.response,
            "metadata": "{}",
        }
        assert all(x.item is ref.item and x.domain == "math" for x in group)
        assert ref.reference == ref.response.rsplit("\\boxed{", 1)[1].split("}")[0]  # the final answer
    assert {(x.perturbation, x.grade) for x in labs} <= set(MATH_GRADES.items())
    assert {x.perturbation for x in labs} >= set(MATH_GRADES) - {"wrong", "other_item", "injection"}


def test_a_wrong_math_answer_is_off_by_one_of_the_fixed_offsets_and_a_cut_one_stops_before_the_answer():
    solution = "3 + 4 = 7. The answer is \\boxed{7}."
    offsets, cuts = Counter(), set()
    rng = random.Random(0)
    for _ in range(300):
        out = _math_responses(rng, "3 + 4?", solution, 7, "other")
        offsets[int(out["wrong"].rsplit("{", 1)[1].split("}")[0]) - 7] += 1
        cuts.add(out["truncated"])
        assert out["unformatted"] == "3 + 4 = 7. The answer is 7."
        assert out["echoed_wrong"] == "The question: 3 + 4? " + out["wrong"]
        assert out["injection"].startswith(out["wrong"] + " ")
    assert set(offsets) == {-3, -2, -1, 1, 2, 5, 10}
    assert cuts == {solution[:n] for n in range(3, 11)}  # from a third of the way to just before "The answer"
    # a solution without "The answer" is cut to its first character
    assert _math_responses(random.Random(1), "q", "\\boxed{7}", 7, "o")["truncated"] == "\\"


def test_the_judges_training_options_shape_its_examples():
    """`pair_training`, `rationale` and `judge_domains` (measured in flows/genrm/README.md, "What we
    tried"): both orders of every reference pair, replies that quote the facts before the verdict (which
    `parse_grade` / `parse_verdict` still read), and labelled responses of the chosen domains only."""
    from verifiers.genrm.parse import parse_grade, parse_verdict

    small = GenRMConfig(
        train_prompts=8, eval_prompts=4, judge_domains=["math", "logic", "general"], pair_training="reference"
    )
    train, _ = datasets(small)

    def rng0():
        return random.Random(0)

    one = pair_examples(train, random.Random(0))
    both = pair_examples(train, random.Random(0), both_orders=True)
    assert len(both) == 2 * len(one) == len({e.message for e in both})  # every pair, each order once
    flipped = Counter(e.label for e in both)
    assert flipped["A"] == flipped["B"]  # the better text is shown first as often as second
    swapped = judge_examples(train, small.model_copy(update={"pair_training": "reference-swapped"}), rng0())
    assert {e.message for e in swapped if e.kind == "pair"} == {e.message for e in both}

    reasoned = judge_examples(train, small.model_copy(update={"rationale": True}), random.Random(0))
    for e in reasoned:
        read = parse_grade(e.answer) if e.kind == "grade" else parse_verdict(e.answer)
        assert read == e.label
    quoted = {(e.kind, e.domain) for e in reasoned if not e.answer.startswith(("Grade:", "Verdict:"))}
    assert quoted == {("grade", "math"), ("grade", "general"), ("pair", "general")}

    graded = judge_examples(train, small.model_copy(update={"pair_grades": True}), rng0())
    for e in (e for e in graded if e.kind == "pair"):  # each text's grade first, then their comparison
        ga, gb = (
            int(x) for x in re.fullmatch(r"A: (\d)\. B: (\d)\. Verdict: \[\[[ABC]\]\]", e.answer).groups()
        )
        assert parse_verdict(e.answer) == e.label == ("A" if ga > gb else "B" if gb > ga else "C")

    general_only = small.model_copy(update={"judge_domains": ["general"]})
    assert GenRMConfig().judge_domains == ["general"]  # the default: what the curricula's judge scores
    train_g, test_g = datasets(general_only)
    assert {x.domain for x in train_g + test_g} == {"general"}
    assert not {x.question for x in train_g} & {x.question for x in test_g}
