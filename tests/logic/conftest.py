"""An OpenAI-compatible chat server on loopback that answers logic prompts with an oracle-with-noise
policy, for calibrating the calibration machinery.

This is a deliberately synthetic policy: it knows the gold answer of every instance it was loaded with
and answers correctly with probability 1 - 0.3 * (difficulty - 1) (so pass rates fall with difficulty
and reach 0 at level 5), otherwise with the task's near-miss corruption. Its choices are a deterministic
function of (prompt, choice index), so runs are reproducible. It speaks the real HTTP protocol, so the
httpx client, the flow and the CLI are exercised exactly as against a model server.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator

import pytest

from tests.fakes.openai import Seen, chat_reply, serve
from verifiers.logic import get_task


def p_correct(difficulty: int) -> float:
    return max(0.0, 1.0 - 0.3 * (difficulty - 1))


class OracleServer:
    """The policy behind the tests' fake OpenAI-compatible server (tests/fakes/openai.py)."""

    def __init__(self, root: str) -> None:
        self.gold: dict[str, tuple[str, str, int]] = {}  # prompt -> (answer, near miss, difficulty)
        self.requests = 0
        self.url = f"{root}/v1"

    def reply(self, seen: Seen) -> tuple[int, dict]:
        if seen.method != "POST" or not seen.path.endswith("/chat/completions"):
            return 404, {"error": "no route"}
        prompt = seen.body["messages"][-1]["content"]
        if prompt not in self.gold:
            return 400, {"error": "unknown prompt"}
        self.requests += 1
        return 200, chat_reply([self.answer(prompt, i) for i in range(int(seen.body.get("n", 1)))])

    def load(self, tasks: list[str], instances: int, seed: int = 0) -> None:
        """Know the instances `calibrate` will generate for these tasks (same seeds)."""
        for name in tasks:
            task = get_task(name)
            for d in task.difficulties:
                for i in range(instances):
                    inst = task.generate(d, seed * 1_000_000 + i)
                    self.gold[inst.prompt] = (inst.answer, task.corrupt(inst, i), d)

    def answer(self, prompt: str, index: int) -> str:
        gold, near_miss, difficulty = self.gold[prompt]
        digest = hashlib.sha256(f"{prompt}\0{index}".encode()).hexdigest()
        correct = random.Random(digest).random() < p_correct(difficulty)
        return (
            f"<think>Checking the rules.</think>\nFinal:\n<answer>{gold if correct else near_miss}</answer>"
        )


@pytest.fixture
def oracle_server() -> Iterator[OracleServer]:
    with serve() as (root, fake):
        server = OracleServer(root)
        fake.reply = server.reply
        yield server
