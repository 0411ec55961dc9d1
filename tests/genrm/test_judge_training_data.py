"""The trained judge's examples (flows/genrm/train_judge.py), without training: what each grade and pair
example says, who is A and B and the verdict from the true grades, class balancing, the chat encoding,
and held-out prompts disjoint from the training ones (the slow flow test trains on them)."""

from __future__ import annotations

import random
from collections import Counter

from flows.config import GenRMConfig
from flows.genrm.labels import Labelled
from flows.genrm.train_judge import (
    JudgeExample,
    balanced,
    chat_ids,
    datasets,
    grade_examples,
    pair_examples,
    pair_reference,
)
from verifiers.genrm.prompts import grade_prompt, pair_prompt


def _lab(prompt_id, response, grade, perturbation, domain="math", reference="42") -> Labelled:
    item = {"reference": f"so the answer is \\boxed{{{reference}}}"}
    return Labelled(
        prompt_id, domain, f"question {prompt_id}", reference, response, grade, perturbation, item
    )


def test_a_grade_example_is_the_grade_prompt_and_its_reply():
    lab = _lab("p1", "it is 41", 2, "wrong_answer")
    (e,) = grade_examples([lab])
    assert e == JudgeExample("grade", "math", grade_prompt("question p1", "42", "it is 41")[0], "Grade: 2", 2)


def test_the_pairwise_reference_is_the_items_full_text_or_a_logic_answer_block():
    assert pair_reference(_lab("p", "r", 5, "reference")) == "so the answer is \\boxed{42}"
    assert (
        pair_reference(_lab("p", "r", 5, "reference", domain="logic", reference="7")) == "<answer>7</answer>"
    )


def test_pairs_put_the_reference_against_each_other_response_in_both_orders_with_the_true_verdict():
    labs = []
    for i in range(40):
        labs += [
            _lab(f"p{i}", "ref text", 5, "reference"),
            _lab(f"p{i}", "worse", 2, "wrong_answer"),
            _lab(f"p{i}", "as good", 5, "padded"),
        ]
    labs.append(
        _lab("lonely", "no reference here", 3, "wrong_answer")
    )  # a prompt without a reference: no pair
    out = pair_examples(labs, random.Random(0))
    assert len(out) == 80 and all(e.kind == "pair" and e.domain == "math" for e in out)
    ref_text = "so the answer is \\boxed{42}"
    firsts = Counter()
    for e in out:
        other = "worse" if "worse" in e.message else "as good"
        a_ref = e.message.index(ref_text) < e.message.index(other)
        assert (
            e.message
            == pair_prompt(e.message.split("\n")[1], *((ref_text, other) if a_ref else (other, ref_text)))[0]
        )
        firsts[a_ref] += 1
        want = "C" if other == "as good" else ("A" if a_ref else "B")
        assert (e.label, e.answer) == (want, f"Verdict: [[{want}]]")
    assert 20 <= firsts[True] <= 60  # the reference is A about half the time


def test_balancing_makes_every_class_of_a_kind_as_large_as_its_largest():
    ex = [JudgeExample("grade", "math", f"m{i}", "", 5) for i in range(6)]
    ex += [JudgeExample("grade", "math", f"n{i}", "", 1) for i in range(2)]
    ex += [JudgeExample("pair", "math", f"q{i}", "", "A") for i in range(3)]
    ex += [JudgeExample("pair", "math", "r", "", "C")]
    out = balanced(ex, random.Random(1))
    assert Counter((e.kind, e.label) for e in out) == {
        ("grade", 5): 6,
        ("grade", 1): 6,
        ("pair", "A"): 3,
        ("pair", "C"): 3,
    }
    assert {e.message for e in out} == {e.message for e in ex}  # resampled from the class, nothing new


def test_chat_ids_are_the_served_chat_encoding(tiny_checkpoint):
    from m1model.serving import app_from_checkpoint

    service = app_from_checkpoint(tiny_checkpoint).state.service
    from m1model.serving.protocol import ChatRequest

    req = ChatRequest(model="tiny-m1", messages=[{"role": "user", "content": "grade this"}])
    assert chat_ids(service.tokenizer, "grade this") == service.encode_chat(req)


def test_held_out_prompts_are_other_prompts_than_the_training_ones():
    cfg = GenRMConfig(train_prompts=12, eval_prompts=8, seed=3, judge_domains=["math", "logic", "general"])
    train, test = datasets(cfg)
    assert train and test
    assert not {x.question for x in train} & {x.question for x in test}
    assert {x.domain for x in train} == {"math", "logic", "general"}
    assert len({x.prompt_id for x in train if x.domain == "logic"}) == 6  # half as many logic prompts


def test_logic_responses_are_graded_by_the_logic_verifier():
    from flows.genrm.labels import labelled_set

    logic = [x for x in labelled_set(1, 2, 1, 0) if x.domain == "logic"]
    grades = {(x.prompt_id, x.perturbation): x.grade for x in logic}
    for pid in {x.prompt_id for x in logic}:
        assert grades[(pid, "reference")] == grades[(pid, "padded")] == 5  # right, in tags
        assert grades[(pid, "unformatted")] == 4  # right on its last line, no tags
        assert grades[(pid, "wrong")] == 2 and grades[(pid, "truncated")] == 1


def test_general_items_depend_on_the_seed_alone():
    from flows.genrm.general import general_items

    assert general_items(6, seed=1).equals(general_items(6, seed=1))
    assert general_items(6, seed=1)["prompt"].to_list() != general_items(6, seed=2)["prompt"].to_list()
