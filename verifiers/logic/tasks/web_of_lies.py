"""Web of lies: people at different places either always tell the truth or always lie, and talk about
each other by place. One fact anchors the web; the generator proves (by enumerating every truth
assignment) that exactly one assignment fits, then asks about three of the people."""

from __future__ import annotations

import itertools
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, flip_one_part
from verifiers.logic.textutil import NAMES, SEPARATORS, scan, strip_wrapping

PLACES = (
    "library museum park cafe school bakery airport harbor theater stadium hospital zoo garden station "
    "market beach"
).split()


def holds(st: list[Any], truthful: tuple[bool, ...]) -> bool:
    kind = st[0]
    if kind == "says":  # speaker says target tells the truth (flag True) / lies (False)
        return truthful[st[2]] == st[3]
    if kind == "says_both":  # speaker says both targets lie
        return not truthful[st[2]] and not truthful[st[3]]
    if kind == "says_one":  # speaker says exactly one of the two targets tells the truth
        return truthful[st[2]] != truthful[st[3]]
    raise ValueError(f"unknown statement {kind!r}")


def consistent(anchor: list[Any], statements: list[list[Any]], n: int) -> list[tuple[bool, ...]]:
    return [
        t
        for t in itertools.product((True, False), repeat=n)
        if t[anchor[0]] == anchor[1] and all(t[st[1]] == holds(st, t) for st in statements)
    ]


class WebOfLies(LogicTask):
    name = "web_of_lies"
    description = "Truth-tellers and liars at named places talk about each other; who tells the truth?"
    levels = {
        1: "3 people, chain of single claims",
        2: "4 people",
        3: "5 people, some claims about two people",
        4: "6 people, distractor claims",
        5: "7 people, distractor claims",
        6: "8 people, distractor claims",
    }
    sizes = {1: (3, 0), 2: (4, 0), 3: (5, 1), 4: (6, 2), 5: (7, 2), 6: (8, 3)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, extra = self.sizes[difficulty]
        names = rng.sample(NAMES, n)
        places = rng.sample(PLACES, n)
        truthful = tuple(rng.random() < 0.5 for _ in range(n))
        order = list(range(n))
        rng.shuffle(order)
        anchor = [order[0], truthful[order[0]]]
        while True:
            statements: list[list[Any]] = []
            # A random tree from the anchor: each new person is talked about, or talks about, a known one.
            for k in range(1, n):
                new, old = order[k], order[rng.randrange(k)]
                speaker, target = (old, new) if rng.random() < 0.5 else (new, old)
                if difficulty >= 3 and rng.random() < 0.4 and k >= 2:
                    other = order[rng.randrange(k)]
                    if other not in (speaker, target):
                        kind = rng.choice(["says_both", "says_one"])
                        st = [kind, speaker, target, other]
                        if holds(st, truthful) == truthful[speaker]:
                            statements.append(st)
                            continue
                claim = truthful[target] if truthful[speaker] else not truthful[target]
                statements.append(["says", speaker, target, claim])
            for _ in range(extra):  # true-to-type distractors
                s, t = rng.sample(range(n), 2)
                statements.append(["says", s, t, truthful[t] == truthful[s]])
            rng.shuffle(statements)
            if len(consistent(anchor, statements, n)) == 1:
                break
        asked = sorted(rng.sample(range(n), 3))

        def at(p: int) -> str:
            return f"the person at the {places[p]}"

        def sentence(st: list[Any]) -> str:
            if st[0] == "says":
                verb = "tells the truth" if st[3] else "lies"
                return f"{at(st[1]).capitalize()} says {at(st[2])} {verb}."
            if st[0] == "says_both":
                return f"{at(st[1]).capitalize()} says {at(st[2])} and {at(st[3])} both lie."
            return (
                f"{at(st[1]).capitalize()} says exactly one of {at(st[2])} and {at(st[3])} tells the truth."
            )

        where = " ".join(f"{names[p]} is at the {places[p]}." for p in rng.sample(range(n), n))
        fact = f"{at(anchor[0]).capitalize()} {'tells the truth' if anchor[1] else 'lies'}."
        questions = " ".join(f"Does {at(p)} tell the truth?" for p in asked)
        prompt = (
            "Each person either always tells the truth or always lies.\n"
            f"{where}\n{fact}\n" + "\n".join(sentence(st) for st in statements) + f"\n\n{questions}\n"
            f"Answer yes or no for each question, in order, separated by commas. {ANSWER_FORMAT} "
            "Example: <answer>yes, no, yes</answer>"
        )
        answer = ", ".join("yes" if truthful[p] else "no" for p in asked)
        puzzle = {
            "places": places,
            "anchor": anchor,
            "statements": statements,
            "asked": asked,
            "truthful": list(truthful),
        }
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        words = scan(
            strip_wrapping(answer), r"(?i)\b(?:yes|no|true|false)\b", SEPARATORS + ".", "yes/no answers"
        )
        got = [w.lower() in ("yes", "true") for w in words]
        want = [puzzle["truthful"][p] for p in puzzle["asked"]]
        if len(got) != len(want):
            return 0.0, {"error": f"parse error: expected {len(want)} yes/no answers, found {len(got)}"}
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            if g != w:
                return 0.0, {
                    "correct": False,
                    "wrong_question": k + 1,
                    "place": puzzle["places"][puzzle["asked"][k]],
                }
        return 1.0, {"correct": True}

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        return min(limit, len(consistent(puzzle["anchor"], puzzle["statements"], len(puzzle["places"]))))

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(2 ** len(puzzle["places"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        return flip_one_part(instance.answer, seed, lambda p: "no" if p == "yes" else "yes")


TASK = WebOfLies()
