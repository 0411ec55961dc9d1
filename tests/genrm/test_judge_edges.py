"""The generative judges' edges, against a real scripted judge on loopback (chat and completions APIs):
what each request carries (model, n, max_tokens, the retry temperature), the exact prompt layout and its
budget cuts, option checking, item errors, failed judgments and their details, one-sided verdicts,
combining the two orders, the Comparison records of `compare`, and mixing in the constraint rules."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest

from tests.genrm.scripted import blocks
from verifiers.base import Reward
from verifiers.endpoint import Endpoint
from verifiers.genrm.grade import GradeJudge
from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.pair import Comparison, PairJudge, combine, compare
from verifiers.genrm.parse import expected_grade, parse_grade
from verifiers.genrm.prompts import (
    GRADE_INSTRUCTIONS,
    PAIR_INSTRUCTIONS,
    Budget,
    clip,
    defuse,
    grade_prompt,
    pair_prompt,
)

Q = "Ada has 3 apples and buys 4 more. How many apples does Ada have?"


class Judge:
    """A scripted OpenAI-compatible judge: ``policy(user message) -> reply`` for every sample asked for,
    over chat and text completions; it logs each request's path and body."""

    def __init__(self) -> None:
        self.policy: Callable[[str], str] = lambda message: "Grade: 5"
        # user message -> its grade token's probabilities, sent as OpenAI logprobs when a request asks
        self.weights: Callable[[str], dict[int, float]] | None = None
        self.requests: list[tuple[str, dict]] = []

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        self.requests.append((path, body))
        n = body.get("n", 1)
        if path == "/v1/chat/completions":
            message = body["messages"][-1]["content"]
            choices = [
                {"index": i, "message": {"content": self.policy(message)}}
                | self._logprobs(message, body, chat=True)
                for i in range(n)
            ]
        elif path == "/v1/completions":
            choices = [
                {"index": p * n + i, "text": self.policy(prompt)} | self._logprobs(prompt, body, chat=False)
                for p, prompt in enumerate(body["prompt"])
                for i in range(n)
            ]
        else:
            return 404, {"error": f"no route {path}"}
        return 200, {"choices": choices}

    def _logprobs(self, message: str, body: dict, chat: bool) -> dict:
        """The reply `Grade: N` as the tokens "Grade", ":", " N", the last with the scripted weights."""
        if not body.get("logprobs") or self.weights is None:
            return {}
        grade = self.policy(message).split()[-1]
        tokens = [("Grade", {"Grade": 0.0}), (":", {":": 0.0})]
        tokens.append((f" {grade}", {f" {g}": math.log(p) for g, p in self.weights(message).items()}))
        if chat:
            content = [
                {
                    "token": t,
                    "logprob": top[t],
                    "top_logprobs": [{"token": a, "logprob": lp} for a, lp in top.items()],
                }
                for t, top in tokens
            ]
            return {"logprobs": {"content": content}}
        return {
            "logprobs": {
                "tokens": [t for t, _ in tokens],
                "token_logprobs": [top[t] for t, top in tokens],
                "top_logprobs": [top for _, top in tokens],
            }
        }

    @property
    def messages(self) -> list[str]:
        return [body["messages"][-1]["content"] for _, body in self.requests]


@pytest.fixture
def judge(openai_loopback) -> tuple[str, Judge]:
    """(base URL ending in /v1, a fresh scripted judge answering there)."""
    root, owner = openai_loopback
    judge = Judge()
    owner.reply = lambda seen: judge.answer(seen.path, seen.body)
    return f"{root}/v1", judge


# -- parsing and prompts ------------------------------------------------------------------------------


@pytest.mark.parametrize("text,grade", [("Grade: 6", None), ("Grade: 0", None), ("Grade: 5", 5), ("1/5", 1)])
def test_grades_outside_one_to_five_are_not_grades(text, grade):
    assert parse_grade(text) == grade


@pytest.mark.parametrize(
    "text,defused",
    [
        ("x</response>y", "x‹/response›y"),
        ("<QUESTION>", "‹QUESTION›"),
        ("< / response_a >", "‹ / response_a ›"),
        ("<reference>\n</response_b>", "‹reference›\n‹/response_b›"),
        ("<b>bold</b> and 1 < 2 > 0", "<b>bold</b> and 1 < 2 > 0"),  # other tags and comparisons stay
    ],
)
def test_defuse_breaks_only_the_prompts_own_tags(text, defused):
    assert defuse(text) == defused


LETTERS = "abcdefghijklmnopqrstuvwxyz0123"  # 30 characters


@pytest.mark.parametrize(
    "text,limit,clipped",
    [
        ("x" * 10, 10, ("x" * 10, 0)),  # exactly at the limit: untouched
        ("x" * 9, 10, ("x" * 9, 0)),
        (LETTERS, 12, ("abcd\n[... 18 characters cut ...]\nwxyz0123", 18)),  # a third head, the rest tail
        (LETTERS, 29, ("abcdefghi\n[... 1 characters cut ...]\nklmnopqrstuvwxyz0123", 1)),
    ],
)
def test_clip_keeps_a_third_head_and_the_tail(text, limit, clipped):
    assert clip(text, limit) == clipped


def test_grade_prompt_layout_and_cuts():
    text, cuts = grade_prompt("Q?", "R", "A")
    assert (
        text
        == f"<question>\nQ?\n</question>\n<response>\nA\n</response>\n<reference>\nR\n</reference>\n{GRADE_INSTRUCTIONS}"
    )
    assert cuts == {}
    text, cuts = grade_prompt(
        "q" * 250, "r" * 240, "a" * 230, Budget(question=200, reference=200, response=200)
    )
    assert cuts == {"question": 50, "reference": 40, "response": 30}
    assert all(len(body) < 250 for body in blocks(text).values())


def test_pair_prompt_layout_and_cuts():
    text, cuts = pair_prompt("Q?", "first", "second")
    assert text == (
        "<question>\nQ?\n</question>\n<response_a>\nfirst\n</response_a>\n"
        f"<response_b>\nsecond\n</response_b>\n{PAIR_INSTRUCTIONS}"
    )
    assert cuts == {}
    _, cuts = pair_prompt("q" * 250, "a" * 230, "b" * 210, Budget(question=200, reference=10, response=200))
    assert cuts == {"question": 50, "response_a": 30, "response_b": 10}


# -- options ------------------------------------------------------------------------------------------

COUNTS = "k, attempts, max_tokens and concurrency must be >= 1"


@pytest.mark.parametrize(
    "options,error",
    [
        ({"k": 1, "attempts": 1, "max_tokens": 1, "concurrency": 1}, None),
        ({"k": 0}, COUNTS),
        ({"attempts": 0}, COUNTS),
        ({"max_tokens": 0}, COUNTS),
        ({"concurrency": 0}, COUNTS),
        ({"constraint_weight": 0.0}, None),
        ({"constraint_weight": -0.1}, "constraint_weight must be >= 0"),
        ({"max_response_chars": 200}, None),
        ({"max_response_chars": 199}, "max_response_chars must be >= 200"),
        ({"api": "completions"}, None),
        ({"api": "responses"}, "api must be chat or completions, not 'responses'"),
        ({"retries": 0, "timeout_s": 0.1}, None),
        ({"retries": -1}, "retries must be >= 0 and timeout_s > 0"),
        ({"timeout_s": 0}, "retries must be >= 0 and timeout_s > 0"),  # every request would time out
        ({"k": 2.5}, "k=2.5 is not a int"),  # would fail only at the first judgment
        ({"url": 8001}, "url=8001 is not a str"),
        ({"k": "three"}, "k='three' is not a int"),
    ],
)
def test_options_are_checked_when_the_judge_is_built(options, error):
    options = {"url": "http://127.0.0.1:9/v1"} | options
    if error is None:
        JudgeOptions.resolve(**options)
    else:
        with pytest.raises(ValueError, match=f"^{re.escape(error)}$"):
            GradeJudge(**options)


def test_unknown_options_are_named_with_the_known_ones():
    known = "url, model, api, timeout_s, retries, concurrency"  # the endpoint's settings, then the judge's
    message = (
        f"unknown judge option(s): colour, size (known: {known}, "
        "k, temperature, max_tokens, attempts, max_response_chars, constraint_weight, pair_method, grade_views, grade_score)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        JudgeOptions.resolve(size=1, colour="blue")


def test_environment_values_take_the_options_types(monkeypatch):
    monkeypatch.setenv("M1_GENRM_URL", "http://judge:8001/v1")
    monkeypatch.setenv("M1_GENRM_TEMPERATURE", "0.5")
    monkeypatch.setenv("M1_GENRM_TIMEOUT_S", "7")
    monkeypatch.setenv("M1_GENRM_K", "")  # set but empty: the default
    monkeypatch.setenv("M1_GENRM_API", "completions")
    opts = JudgeOptions.resolve(constraint_weight=1, retries="0")
    assert (opts.url, opts.temperature, opts.timeout_s, opts.k, opts.api) == (
        "http://judge:8001/v1",
        0.5,
        7.0,
        1,
        "completions",
    )
    assert (opts.constraint_weight, opts.retries) == (1.0, 0)
    assert isinstance(opts.constraint_weight, float) and isinstance(opts.timeout_s, float)


def test_the_endpoint_gets_the_transport_options(monkeypatch):
    opts = JudgeOptions.resolve(url="http://judge/v1", model="j", timeout_s=5, retries=1, concurrency=2)
    assert opts.client() == Endpoint(
        url="http://judge/v1", model="j", timeout_s=5.0, retries=1, concurrency=2
    )
    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    message = (
        "no judge endpoint: pass url=... to the verifier or set M1_GENRM_URL "
        "(e.g. `m1 serve model --checkpoint JUDGE` serves one at http://127.0.0.1:8001/v1)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        PairJudge()


# -- what the five-grade judge asks and reports -------------------------------------------------------

ITEM = {"prompt": Q, "reference": "The answer is \\boxed{7}.", "response": "3 + 4 = 7"}


def test_grade_requests_carry_model_n_max_tokens_and_temperature(judge):
    url, j = judge
    j.policy = lambda message: "Grade: 4"
    (r,) = GradeJudge(url=url, model="judge-x", max_tokens=77, k=2).verify([ITEM])
    assert r == Reward(0.75, {"judge": "judge-x", "grades": [4, 4], "attempts": 1, "grade": 4})
    ((path, body),) = j.requests
    assert path == "/v1/chat/completions"
    assert body == {
        "model": "judge-x",
        "messages": [{"role": "user", "content": grade_prompt(Q, "7", "3 + 4 = 7")[0]}],
        "n": 2,
        "max_tokens": 77,
        "temperature": 1.0,
    }


@pytest.mark.parametrize(
    "options,temperatures,ns",
    [
        ({}, [0.0, 0.7], [1, 1]),  # greedy first; a retry must sample or it repeats itself
        ({"temperature": 0.2}, [0.2, 0.7], [1, 1]),
        ({"temperature": 0.9}, [0.9, 0.9], [1, 1]),
        ({"k": 2}, [1.0, 1.0], [2, 1]),  # only the unread sample is asked again
    ],
)
def test_unread_samples_are_asked_again_at_a_sampling_temperature(judge, options, temperatures, ns):
    url, j = judge
    replies = iter(["I am not sure.", "Grade: 3", "Grade: 3"])
    j.policy = lambda message: next(replies)
    (r,) = GradeJudge(url=url, **options).verify([ITEM])
    assert r.reward == 0.5 and r.details["attempts"] == 2
    assert [body["temperature"] for _, body in j.requests] == temperatures
    assert [body["n"] for _, body in j.requests] == ns


@pytest.mark.parametrize("judge_class", [GradeJudge, PairJudge])
def test_the_completions_api_sends_prompts_as_text(judge, judge_class):
    url, j = judge
    j.policy = lambda prompt: "Grade: 5" if "<reference>" in prompt else "Verdict: [[C]]"
    rewards = judge_class(url=url, api="completions", k=2, max_tokens=50).verify([ITEM, ITEM])
    assert [r.reward for r in rewards] == ([1.0, 1.0] if judge_class is GradeJudge else [0.0, 0.0])
    ((path, body),) = j.requests  # one request for the whole batch
    assert path == "/v1/completions"
    assert body["n"] == 2 and body["max_tokens"] == 50 and body["temperature"] == 1.0
    assert len(body["prompt"]) == (2 if judge_class is GradeJudge else 4)


@pytest.mark.parametrize(
    "judge_class,no_reference",
    [
        (GradeJudge, "item has no `reference` (the five-grade judge needs one)"),
        (PairJudge, "item has no `reference` to compare with"),
    ],
)
def test_items_that_cannot_be_judged_are_errors_and_never_sent(judge, judge_class, no_reference):
    url, j = judge
    items = [
        {"prompt": Q, "response": "7"},
        {"prompt": Q, "response": "7", "reference": None},
        {"prompt": Q, "response": "7", "reference": "  \n"},
        {"prompt": Q, "reference": "7"},
        {"prompt": Q, "response": ["7"], "reference": "7"},
    ]
    rewards = judge_class(url=url).verify(items)
    assert rewards == [Reward.error(no_reference)] * 3 + [Reward.error("item has no text `response`")] * 2
    assert j.requests == []


@pytest.mark.parametrize("judge_class", [GradeJudge, PairJudge])
def test_the_question_block_holds_the_prompt_or_nothing(judge, judge_class):
    url, j = judge
    j.policy = lambda message: "Grade: 5" if "<reference>" in message else "Verdict: [[C]]"
    judge_class(url=url).verify([ITEM, {k: v for k, v in ITEM.items() if k != "prompt"}])
    questions = [blocks(m)["question"] for m in j.messages]
    assert sorted(questions) == sorted([Q, ""] * (1 if judge_class is GradeJudge else 2))


def test_a_failed_judgment_reports_its_attempts_and_last_reply(judge):
    url, j = judge
    rambling = "Let me think about this. " * 20  # 500 characters, no grade
    j.policy = lambda message: "Grade: 5" if "good" in blocks(message)["response"] else rambling
    bad, good = GradeJudge(url=url, model="jm", attempts=2).verify(
        [ITEM | {"response": "bad"}, ITEM | {"response": "good: 7"}]
    )
    assert bad == Reward.error(
        "judge failed: no grade 1-5 in its reply after 2 attempt(s)",
        judge="jm",
        grades=[None],
        attempts=2,
        reply=rambling[:300],
    )
    assert good.reward == 1.0  # a failed item does not stop the batch


@pytest.mark.parametrize("judge_class", [GradeJudge, PairJudge])
def test_an_endpoint_failure_carries_the_endpoints_message(judge, judge_class):
    url, j = judge
    rewards = judge_class(url=url + "/missing", retries=0).verify([ITEM, {"prompt": Q, "reference": "7"}])
    path = "/v1/missing/chat/completions"
    assert (
        rewards[0]
        .details["error"]
        .startswith(f"judge endpoint failed: {url}/missing/chat/completions: HTTP 404")
    )
    assert rewards[1] == Reward.error("item has no text `response`")  # its own error, not the batch's
    paths = [p for p, _ in j.requests]
    # the grade judge asks once; the pair judge asks both orders at once, and the first failure may cancel
    # the other order before it is sent (a failed batch stops asking), so one or two requests
    assert set(paths) == {path}
    assert len(paths) in ({1} if judge_class is GradeJudge else {1, 2})


# -- the pairwise judge -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "forward,backward,combined",
    [
        (1.0, None, (1.0, None)),  # one order failed: the other decides, consistency unknown
        (None, -0.5, (-0.5, None)),
        (0.0, 1.0, (0.0, False)),  # a tie against a win is no agreement
        (1.0, 0.0, (0.0, False)),
        (0.5, 1.0, (0.75, True)),
        (-0.5, 0.5, (0.0, False)),
    ],
)
def test_combine_the_two_orders(forward, backward, combined):
    assert combine(forward, backward) == combined


def prefers(word: str) -> Callable[[str], str]:
    """A fair pairwise judge: the text containing ``word`` wins; both or neither is a tie."""

    def policy(message: str) -> str:
        b = blocks(message)
        a, c = word in b["response_a"], word in b["response_b"]
        return "Verdict: [[C]]" if a == c else "Verdict: [[A]]" if a else "Verdict: [[B]]"

    return policy


def test_compare_judges_both_orders_blind_and_reports_each(judge):
    url, j = judge
    fair = prefers("WIN")
    j.policy = lambda message: "no idea" if "FAIL" in message else fair(message)
    long = "WIN " + "x" * 500
    # one request at a time, so the log is in the order of the triples and their two orders
    opts = JudgeOptions.resolve(url=url, max_response_chars=300, attempts=2, concurrency=1)
    got = compare(opts, [("q1", "WIN", "lose"), ("q2", "lose", long), ("q3", "FAIL", "lose")])
    cut = {"response_a_chars_cut": len(long) - 300, "response_b_chars_cut": len(long) - 300}
    assert got == [
        Comparison(1.0, 1.0, 1.0, True),
        Comparison(-1.0, -1.0, -1.0, True, None, cut),
        Comparison(
            None,
            None,
            None,
            None,
            "judge failed: no verdict [[A]]/[[B]]/[[C]] in its replies after 4 attempt(s)",
        ),
    ]
    first = [blocks(m) for m in j.messages[:6]]  # each triple's two orders, in order
    assert [(b["question"], b["response_a"], b["response_b"]) for b in first[:2]] == [
        ("q1", "WIN", "lose"),
        ("q1", "lose", "WIN"),
    ]
    assert first[2]["question"] == first[3]["question"] == "q2"
    assert first[3]["response_a"].startswith("WIN x") and "characters cut" in first[3]["response_a"]
    assert first[2]["response_b"] == first[3]["response_a"]


def test_one_unreadable_order_leaves_the_other_to_decide(judge):
    url, j = judge
    # only answers when the response is shown first
    j.policy = lambda message: "Verdict: [[A]]" if blocks(message)["response_a"] == "mine" else "hmm"
    (r,) = PairJudge(url=url, model="pj", attempts=1).verify([ITEM | {"response": "mine"}])
    assert r == Reward(
        1.0,
        {"judge": "pj", "forward": 1.0, "backward": None, "position_consistent": None, "judge_score": 1.0},
    )


def test_a_failed_pairwise_judgment_keeps_its_details(judge):
    url, j = judge
    j.policy = lambda message: "hmm"
    (r,) = PairJudge(url=url, model="pj", attempts=1).verify([ITEM])
    assert r == Reward.error(
        "judge failed: no verdict [[A]]/[[B]]/[[C]] in its replies after 2 attempt(s)",
        judge="pj",
        forward=None,
        backward=None,
        position_consistent=None,
    )


def test_pairwise_details_say_what_was_cut(judge):
    url, j = judge
    j.policy = prefers("7")
    (r,) = PairJudge(url=url, max_response_chars=200).verify([ITEM | {"response": "7" * 250}])
    assert r.details["truncated"] == {"response_a_chars_cut": 50, "response_b_chars_cut": 50}


WORDS = [{"type": "word_count", "max": 3}, {"type": "no_commas"}, {"type": "keywords", "words": ["seven"]}]
BASE = {"judge": "pj", "forward": 1.0, "backward": 1.0, "position_consistent": True}


@pytest.mark.parametrize(
    "constraints,weight,expected",
    [
        ("[{bad", 0.5, Reward.error("`constraints` is a string but not valid JSON", **BASE)),
        ([{"type": "rhyme"}], 0.5, Reward.error("constraints: unknown constraint type(s): rhyme", **BASE)),
        (WORDS, 0.0, Reward(1.0, BASE | {"judge_score": 1.0})),  # weight 0: the rules are not checked
        (None, 0.5, Reward(1.0, BASE | {"judge_score": 1.0})),
    ],
)
def test_constraint_rules_errors_and_weight(judge, constraints, weight, expected):
    url, j = judge
    j.policy = prefers("WIN")
    item = ITEM | {"response": "WIN, seven"}
    if constraints is not None:
        item["constraints"] = constraints
    (r,) = PairJudge(url=url, model="pj", constraint_weight=weight).verify([item])
    assert r == expected


def test_a_partial_rule_reward_is_mixed_in_with_its_weight(judge):
    url, j = judge
    j.policy = prefers("WIN")
    item = ITEM | {
        "response": "WIN, seven eight nine ten",
        "constraints": WORDS + [{"type": "ends_with", "text": "ten"}],
    }
    (r,) = PairJudge(url=url, model="pj", constraint_weight=0.5).verify([item])
    # two of the four rules hold (keyword, ending): r_c = 0.5, so 2 r_c - 1 = 0 and the judge's +1 is scaled
    assert r.reward == pytest.approx(1.0 / 1.5)
    assert r.details["constraint_reward"] == 0.5 and r.details["judge_score"] == 1.0
    assert r.details["constraints"]["passed"] == 2 and r.details["constraints"]["total"] == 4
    item["constraints"] = WORDS[2:] + [{"type": "ends_with", "text": "ten"}, {"type": "no_commas"}, WORDS[0]]
    item["response"] = "WIN seven eight nine ten"
    (r,) = PairJudge(url=url, model="pj", constraint_weight=0.5).verify([item])
    # three of four: r_c = 0.75, reward = (1 + 0.5 * 0.5) / 1.5
    assert r.reward == pytest.approx(1.25 / 1.5) and r.details["constraint_reward"] == 0.75


# -- the expected grade (grade_score = "expected") -------------------------------------------------------


@pytest.mark.parametrize(
    "tokens,grade,expected",
    [
        (
            [
                ("Grade", {}),
                (":", {}),
                (" 4", {" 4": math.log(0.6), "5": math.log(0.3), " 3": math.log(0.1)}),
            ],
            4,
            4.2,
        ),
        (
            [(" 4", {" 4": math.log(0.3), "4": math.log(0.3), " 2": math.log(0.4)})],
            4,
            3.2,
        ),  # " 4" and "4": one grade
        (
            [(" 5", {" 5": math.log(0.4), " 9": math.log(0.4), "x": math.log(0.2)})],
            5,
            5.0,
        ),  # only grades count
        ([(" 3", {})], 3, 3.0),  # no alternatives sent: the grade as written
        ([(" 3", {" 3": math.log(0.5), " 1": math.log(0.5)}), ("3", {"3": 0.0})], 3, 3.0),  # the last "3"
        ([("Grade", {}), (":", {})], 4, None),
    ],
)
def test_the_expected_grade_weighs_the_grade_token_by_its_probabilities(tokens, grade, expected):
    got = expected_grade(tokens, grade)
    assert got == pytest.approx(expected) if expected is not None else got is None


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_an_expected_grade_judge_asks_for_logprobs_and_rewards_the_weighted_grade(judge, api):
    url, j = judge
    j.policy = lambda message: "Grade: 4"
    j.weights = lambda message: {4: 0.6, 5: 0.3, 3: 0.1}
    (r,) = GradeJudge(url=url, api=api, grade_score="expected").verify([ITEM])
    assert r.reward == pytest.approx((4.2 - 1) / 4) and r.details["grades"] == [pytest.approx(4.2)]
    ((_, body),) = j.requests
    asked = {"logprobs": True, "top_logprobs": 20} if api == "chat" else {"logprobs": 20}
    assert {k: body[k] for k in asked} == asked
    (sampled,) = GradeJudge(url=url, api=api).verify([ITEM])  # the default asks for none
    assert sampled.reward == 0.75 and "logprobs" not in j.requests[-1][1]


def test_expected_grades_tell_apart_what_written_grades_tie(judge):
    url, j = judge
    j.policy = lambda message: "Grade: 4"
    j.weights = lambda message: {4: 0.5, 5: 0.5} if "sure" in message else {4: 0.5, 3: 0.5}
    items = [ITEM | {"response": "7, sure"}, ITEM | {"response": "7, maybe"}]
    assert [r.reward for r in GradeJudge(url=url).verify(items)] == [0.75, 0.75]
    weighed = GradeJudge(url=url, grade_score="expected").verify(items)
    assert [r.details["grade"] for r in weighed] == [pytest.approx(4.5), pytest.approx(3.5)]
    # both views: the lower expected grade counts; the pointwise pair method compares them
    both = GradeJudge(url=url, grade_score="expected", grade_views="both").verify(items[:1])
    assert both[0].details["grade"] == pytest.approx(4.5) and both[0].details["question_grades"]
    opts = JudgeOptions.resolve(url=url, pair_method="pointwise", grade_score="expected")
    (first_better,) = compare(opts, [(Q, "7, sure", "7, maybe")])
    assert first_better.score == 1.0


def test_an_endpoint_without_logprobs_fails_an_expected_grade_with_that_reason(judge):
    url, j = judge
    j.policy = lambda message: "Grade: 4"  # and no weights: the reply carries no logprobs
    (r,) = GradeJudge(url=url, grade_score="expected").verify([ITEM])
    assert r.reward == 0.0 and "needs each reply's token logprobs" in r.details["error"]


def test_a_grade_written_inside_a_larger_token_counts_as_written(judge):
    url, j = judge
    j.policy = lambda message: "Grade: 4"
    j.weights = lambda message: {4: 0.5, 5: 0.5}
    real = j._logprobs

    def glued(message, body, chat):  # the tokenizer wrote " 4." as one token: nothing to weigh it by
        out = real(message, body, chat)
        if chat:
            out["logprobs"]["content"][-1]["token"] = " 4."
        return out

    j._logprobs = glued
    (r,) = GradeJudge(url=url, grade_score="expected").verify([ITEM])
    assert r.details["grade"] == 4.0 and "error" not in r.details
