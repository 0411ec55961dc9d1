"""Boolean expressions: several labelled expressions over True/False with not/and/or; name the ones
that evaluate to True. Several expressions per item keep guessing from paying off."""

from __future__ import annotations

import random
import re
import string
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.textutil import SEPARATORS, no_repeats, scan, strip_wrapping

Node = Any  # bool | ["not", Node] | ["and"|"or", Node, Node]


def random_expr(rng: random.Random, ops: int) -> Node:
    """A random expression tree with exactly ``ops`` operators."""
    if ops == 0:
        return rng.random() < 0.5
    if rng.random() < 0.25:
        return ["not", random_expr(rng, ops - 1)]
    left = rng.randint(0, ops - 1)
    return [rng.choice(["and", "or"]), random_expr(rng, left), random_expr(rng, ops - 1 - left)]


def value(node: Node) -> bool:
    if isinstance(node, bool):
        return node
    if node[0] == "not":
        return not value(node[1])
    a, b = value(node[1]), value(node[2])
    return a and b if node[0] == "and" else a or b


def render(node: Node, top: bool = True) -> str:
    if isinstance(node, bool):
        return str(node)
    if node[0] == "not":
        return f"not {render(node[1], False)}"
    text = f"{render(node[1], False)} {node[0]} {render(node[2], False)}"
    return text if top else f"({text})"


class BooleanExpressions(LogicTask):
    name = "boolean_expressions"
    description = "Evaluate labelled Boolean expressions and list the labels of those that are True."
    levels = {
        1: "3 expressions, 2 operators each",
        2: "4 expressions, 3 operators each",
        3: "4 expressions, 5 operators each",
        4: "5 expressions, 7 operators each",
        5: "6 expressions, 9 operators each",
        6: "6 expressions, 12 operators each",
    }
    sizes = {1: (3, 2), 2: (4, 3), 3: (4, 5), 4: (5, 7), 5: (6, 9), 6: (6, 12)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        count, ops = self.sizes[difficulty]
        while True:
            exprs = [random_expr(rng, ops) for _ in range(count)]
            truth = [value(e) for e in exprs]
            if any(truth) and not all(truth):
                break
        labels = string.ascii_uppercase[:count]
        listing = "\n".join(f"{lab}. {render(e)}" for lab, e in zip(labels, exprs, strict=True))
        prompt = (
            "Evaluate each Boolean expression (not binds tighter than and, which binds tighter than or; "
            f"parentheses first):\n{listing}\n\nWhich expressions evaluate to True? Give their letters, "
            f"separated by commas. {ANSWER_FORMAT} Example: <answer>A, C</answer>"
        )
        answer = ", ".join(lab for lab, t in zip(labels, truth, strict=True) if t)
        puzzle = {
            "expressions": exprs,
            "labels": list(labels),
            "true": [lab for lab, t in zip(labels, truth, strict=True) if t],
            "operators": ops,
        }
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        labels = set(puzzle["labels"])
        text = strip_wrapping(answer).strip("*")
        if re.fullmatch(r"none|no(ne)? of them|\{\}|\[\]", text, flags=re.IGNORECASE):
            got: list[str] = []
        else:
            words = [w.upper() for w in scan(text, r"[A-Za-z]+", SEPARATORS + "&", "a list of letters")]
            if len(words) == 1 and set(words[0]) <= labels:
                got = list(words[0])  # run together: "AC"
            else:
                got = [w for w in words if w != "AND"]  # "A, B and C"
            if not got or not set(got) <= labels:
                return 0.0, {"error": f"parse error: expected letters among {', '.join(sorted(labels))}"}
            no_repeats(got, "the expression")
        want = set(puzzle["true"])
        if set(got) == want:
            return 1.0, {"correct": True}
        return 0.0, {
            "correct": False,
            "missing": sorted(want - set(got)),
            "wrongly_included": sorted(set(got) - want),
        }

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["labels"]) * puzzle["operators"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        label = random.Random(seed).choice(instance.puzzle["labels"])
        chosen = set(instance.puzzle["true"]) ^ {label}
        return ", ".join(sorted(chosen)) or "none"


TASK = BooleanExpressions()
