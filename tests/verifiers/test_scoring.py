"""Per-domain scoring (verifiers/scoring.py): each item by its domain's verifier, a missing verifier
found before any scoring, and the flows side's message that says what to fix."""

from __future__ import annotations

import pytest

from flows.curriculum.rewards import resolve_verifiers as resolve_for_run
from flows.errors import InputError
from verifiers.base import Registry, Reward
from verifiers.scoring import NoVerifier, make_reward_fn, resolve_verifiers, score


class Echo:
    """Reward = the response's length times ``scale``; a response "boom" raises."""

    name = "echo"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def verify(self, items):
        if any(it["response"] == "boom" for it in items):
            raise RuntimeError("boom")
        return [Reward(len(it["response"]) * self.scale) for it in items]


@pytest.fixture
def registry() -> Registry:
    r = Registry()
    r.register("echo", Echo)
    return r


def test_each_domain_scores_with_its_own_verifier_and_options(registry):
    checks = resolve_verifiers({"a", "b"}, {"a": "echo", "b": "echo"}, registry, {"echo": {"scale": 2.0}})
    items = [{"domain": "a"}, {"domain": "b"}, {"domain": "a"}]
    assert [r.reward for r in score(checks, items, ["x", "yy", "boom"])] == [2.0, 4.0, 0.0]  # one crash: 0
    reward_fn = make_reward_fn(checks, lambda ids: "z" * len(ids))
    assert reward_fn(items[:2], [[1, 2, 3], [4]]) == [6.0, 2.0]


def test_a_missing_verifier_fails_before_scoring(registry):
    with pytest.raises(NoVerifier, match="no verifier for domain 'c'") as unnamed:
        resolve_verifiers({"a", "c"}, {"a": "echo"}, registry)
    assert (unnamed.value.domain, unnamed.value.plugin) == ("c", None)
    with pytest.raises(NoVerifier, match=r"domain 'a': unknown verifier 'nope' \(known: echo\)") as unknown:
        resolve_verifiers({"a"}, {"a": "nope"}, registry)
    assert unknown.value.plugin == "nope"


def test_the_run_says_where_to_name_a_verifier(registry):
    with pytest.raises(
        InputError, match=r"^no verifier for domain 'c': add it to the curriculum's \[verifiers\]"
    ):
        resolve_for_run({"c"}, {}, registry)
    with pytest.raises(InputError, match=r"^domain 'a': unknown verifier 'nope' \(known: echo\)$"):
        resolve_for_run({"a"}, {"a": "nope"}, registry)
