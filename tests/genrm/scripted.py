"""A scripted OpenAI-compatible judge on loopback: the fake server's replies are a known function
of the prompt, for tests that need a judge with a known behaviour (honest, malformed, biased)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.fakes.openai import serve

Policy = Callable[[str], str]  # the user message -> the judge's reply


def blocks(message: str) -> dict[str, str]:
    """The tagged blocks of a judge prompt (question, reference, response, response_a, response_b)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"<(\w+)>\n(.*?)\n</\1>", message, re.DOTALL)}


class Script:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.messages: list[str] = []  # every prompt received, in order

    def chat(self, body: dict) -> list[str]:
        message = body["messages"][-1]["content"]
        self.messages.append(message)
        return [self.policy(message) for _ in range(int(body.get("n", 1)))]


@contextmanager
def scripted_judge(policy: Policy) -> Iterator[tuple[str, Script]]:
    """(base URL ending in /v1, the script with its log of prompts), served by the tests' one fake
    OpenAI-compatible server (tests/fakes/openai.py)."""
    script = Script(policy)
    with serve(chat=script.chat, models=["scripted"]) as (root, _):
        yield f"{root}/v1", script


def honest_grade(message: str) -> str:
    b = blocks(message)
    return "Grade: 5" if b["reference"].strip() in b["response"] else "Grade: 2"


def prefers_longer(message: str) -> str:
    """A pairwise judge with a pure length bias: the longer response wins."""
    b = blocks(message)
    a, c = len(b["response_a"]), len(b["response_b"])
    return "Verdict: [[A]]" if a > c else "Verdict: [[B]]" if c > a else "Verdict: [[C]]"
