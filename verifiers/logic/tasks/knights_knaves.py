"""Knights and knaves: knights always tell the truth, knaves always lie. Each islander makes one
statement; the generator redraws statements until exactly one assignment is consistent (checked by
enumerating all 2^n assignments)."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, flip_one_part
from verifiers.logic.textutil import NAMES, SEPARATORS, no_repeats, scan, strip_wrapping

Statement = list[Any]  # [kind, *args]; JSON-friendly


def holds(st: Statement, knight: tuple[bool, ...]) -> bool:
    kind = st[0]
    if kind == "is":  # X is a knight (True) / knave (False)
        return knight[st[1]] == st[2]
    if kind == "both":
        return knight[st[1]] == st[3] and knight[st[2]] == st[3]
    if kind == "either":  # at least one of X, Y is of the kind
        return knight[st[1]] == st[3] or knight[st[2]] == st[3]
    if kind == "same":
        return knight[st[1]] == knight[st[2]]
    if kind == "different":
        return knight[st[1]] != knight[st[2]]
    if kind == "implies":  # if X is kind a then Y is kind b
        return knight[st[1]] != st[2] or knight[st[3]] == st[4]
    raise ValueError(f"unknown statement kind {kind!r}")


def say(st: Statement, names: list[str]) -> str:
    def k(flag: bool) -> str:
        return "a knight" if flag else "a knave"

    def ks(flag: bool) -> str:
        return "knights" if flag else "knaves"

    kind, *a = st
    if kind == "is":
        return f"{names[a[0]]} is {k(a[1])}."
    if kind == "both":
        return f"{names[a[0]]} and {names[a[1]]} are both {ks(a[2])}."
    if kind == "either":
        return f"At least one of {names[a[0]]} and {names[a[1]]} is {k(a[2])}."
    if kind == "same":
        return f"{names[a[0]]} and {names[a[1]]} are of the same kind."
    if kind == "different":
        return f"{names[a[0]]} and {names[a[1]]} are of different kinds."
    return f"If {names[a[0]]} is {k(a[1])}, then {names[a[2]]} is {k(a[3])}."


def consistent(statements: list[Statement], n: int) -> list[tuple[bool, ...]]:
    """All assignments under which every speaker i is a knight exactly when statement i holds."""
    return [
        knight
        for knight in itertools.product((True, False), repeat=n)
        if all(knight[i] == holds(st, knight) for i, st in enumerate(statements))
    ]


def random_statement(rng: random.Random, speaker: int, n: int) -> Statement:
    others = [p for p in range(n) if p != speaker]
    kind = rng.choice(["is", "both", "either", "same", "different", "implies"])
    if kind == "is":
        return ["is", rng.choice(others), rng.random() < 0.5]
    pool = others if len(others) >= 2 else [speaker, *others]
    x, y = rng.sample(pool, 2)
    if kind in ("both", "either"):
        return [kind, x, y, rng.random() < 0.5]
    if kind == "implies":
        return [kind, x, rng.random() < 0.5, y, rng.random() < 0.5]
    return [kind, x, y]


class KnightsKnaves(LogicTask):
    name = "knights_knaves"
    description = "Decide who is a knight (truthful) and who is a knave (liar) from their statements."
    levels = {
        1: "2 islanders",
        2: "3 islanders",
        3: "4 islanders",
        4: "5 islanders",
        5: "6 islanders",
        6: "7 islanders",
    }
    sizes = {1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = self.sizes[difficulty]
        names = rng.sample(NAMES, n)
        while True:
            statements = [random_statement(rng, i, n) for i in range(n)]
            solutions = consistent(statements, n)
            if len(solutions) == 1:
                break
        (knight,) = solutions
        lines = "\n".join(f'{names[i]} says: "{say(st, names)}"' for i, st in enumerate(statements))
        answer = ", ".join(
            f"{nm} is a {'knight' if kn else 'knave'}" for nm, kn in zip(names, knight, strict=True)
        )
        prompt = (
            "On an island every inhabitant is either a knight, who always tells the truth, or a knave, who "
            f"always lies. You meet {n} inhabitants: {', '.join(names)}.\n{lines}\n\n"
            "Who is a knight and who is a knave? Name every inhabitant. "
            f"{ANSWER_FORMAT} Example format: <answer>NAME is a knight, NAME is a knave, ...</answer>"
        )
        puzzle = {"names": names, "statements": statements, "knights": list(knight)}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        got = parse_roles(answer, puzzle["names"], ("knight", "knave"))
        if not got:
            return 0.0, {"error": "parse error: no 'NAME is a knight/knave' statements found"}
        for name, truth in zip(puzzle["names"], puzzle["knights"], strict=True):
            if name not in got:
                return 0.0, {"correct": False, "reason": "inhabitant not classified", "name": name}
            if got[name] != truth:
                return 0.0, {"correct": False, "reason": "wrong role", "name": name}
        return 1.0, {"correct": True}

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        return min(limit, len(consistent(puzzle["statements"], len(puzzle["names"]))))

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(2 ** len(puzzle["names"]))  # assignments the solver enumerates

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        return flip_one_part(
            instance.answer,
            seed,
            lambda p: p.replace("knight", "KNAVE").replace("knave", "knight").replace("KNAVE", "knave"),
        )


def parse_roles(answer: str, names: list[str], words: tuple[str, str]) -> dict[str, bool]:
    """Name -> True for words[0] (knight, truthful), False for words[1]. Accepts 'Alice is a knight',
    'Alice: knave', 'Alice - Knight', '**Alice**: knight', separated by commas, semicolons, full stops,
    new lines or 'and'. Anything else, or a name classified twice, is a parse error."""
    who = "|".join(re.escape(name) for name in names)
    statement = rf"(?i)\b(?:{who})\b[\s*:=\-–>]*(?:is\s+)?(?:an?\s+)?(?:{words[0]}|{words[1]})\b"
    text = re.sub(r"(?i)\band\b", " ", strip_wrapping(answer))
    found = scan(text, statement, SEPARATORS + ".*", "a list of 'NAME is a knight/knave' statements")
    pairs = [
        re.match(rf"(?i)({who})\b.*?({words[0]}|{words[1]})\b", st, flags=re.DOTALL).groups() for st in found
    ]
    canonical = {name.lower(): name for name in names}
    roles = [(canonical[name.lower()], role.lower() == words[0]) for name, role in pairs]
    no_repeats([name for name, _ in roles], "the inhabitant")
    return dict(roles)


TASK = KnightsKnaves()
