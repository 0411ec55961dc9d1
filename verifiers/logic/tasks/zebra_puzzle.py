"""Zebra (Einstein) puzzle: houses in a row, each with one value per attribute. The generator draws a
random solution, then adds true clues until its constraint solver finds exactly one solution, and
finally drops every clue the solution does not need (so the clue set is minimal)."""

from __future__ import annotations

import random
import re
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.textutil import SEPARATORS, no_repeats, parse_int, scan

# Every value is a distinct single word, so answers can be parsed by word look-up.
ATTRIBUTES: dict[str, list[str]] = {
    "owner": ["Alice", "Bob", "Carol", "David", "Emma", "Frank"],
    "color": ["red", "green", "blue", "yellow", "white", "purple"],
    "pet": ["dog", "cat", "bird", "fish", "horse", "rabbit"],
    "drink": ["tea", "coffee", "milk", "juice", "water", "soda"],
    "sport": ["tennis", "soccer", "chess", "golf", "rugby", "hockey"],
    "food": ["pizza", "pasta", "salad", "curry", "sushi", "tacos"],
}

# Between the values of a house: commas, bars, colons, dashes, quotes and list brackets.
ROW_SEPARATORS = SEPARATORS + r"|:\-\[\]()'\"."
Clue = list[Any]  # [kind, a, b]; a and b are variable indices (or a house index for "pos"/"notpos")


class ZebraSolver:
    """Constraint propagation over position bitmasks plus branching; counts solutions up to a limit."""

    def __init__(self, n: int, m: int, clues: list[Clue]) -> None:
        self.n, self.m, self.clues = n, m, clues
        self.full = (1 << n) - 1
        self.nodes = 0

    def count(self, limit: int = 2) -> list[list[int]]:
        domains = [self.full] * (self.n * self.m)
        for kind, a, b in self.clues:
            if kind == "pos":
                domains[a] &= 1 << b
            elif kind == "notpos":
                domains[a] &= ~(1 << b) & self.full
        found: list[list[int]] = []
        self._search(domains, found, limit)
        return found

    def _propagate(self, d: list[int]) -> bool:
        n, full = self.n, self.full
        changed = True
        while changed:
            changed = False
            for kind, a, b in self.clues:
                da, db = d[a], d[b] if kind not in ("pos", "notpos") else 0
                if kind == "same":
                    na = nb = da & db
                elif kind == "notsame":
                    na = da & ~db if _single(db) else da
                    nb = db & ~da if _single(da) else db
                elif kind == "left":  # a directly left of b
                    na, nb = da & (db >> 1), db & (da << 1) & full
                elif kind == "next":
                    na = da & ((db >> 1) | (db << 1)) & full
                    nb = db & ((da >> 1) | (da << 1)) & full
                elif kind == "before":  # a somewhere left of b
                    na = da & ((1 << (db.bit_length() - 1)) - 1) if db else 0
                    low = (da & -da).bit_length() if da else n
                    nb = db & ~((1 << low) - 1) & full
                else:
                    continue
                if na != da or nb != db:
                    if not na or not nb:
                        return False
                    d[a], d[b] = na, nb
                    changed = True
            for attr in range(self.m):  # all-different within each attribute
                vs = range(attr * n, attr * n + n)
                fixed = 0
                for v in vs:
                    if _single(d[v]):
                        if fixed & d[v]:
                            return False
                        fixed |= d[v]
                once = twice = 0
                for v in vs:
                    if not _single(d[v]) and d[v] & fixed:
                        d[v] &= ~fixed
                        if not d[v]:
                            return False
                        changed = True
                    twice |= once & d[v]
                    once |= d[v]
                if once != full:
                    return False
                hidden = once & ~twice & ~fixed  # a house that only one value can still take gets it
                for v in vs:
                    if d[v] & hidden and not _single(d[v]):
                        d[v] &= hidden
                        if not _single(d[v]):
                            return False
                        changed = True
        return True

    def _search(self, d: list[int], found: list[list[int]], limit: int) -> None:
        self.nodes += 1
        if not self._propagate(d):
            return
        open_vars = [v for v in range(len(d)) if not _single(d[v])]
        if not open_vars:
            found.append([x.bit_length() - 1 for x in d])
            return
        v = min(open_vars, key=lambda x: (d[x].bit_count(), x))
        bits = d[v]
        while bits and len(found) < limit:
            bit = bits & -bits
            bits ^= bit
            child = list(d)
            child[v] = bit
            self._search(child, found, limit)


def _single(x: int) -> bool:
    return x != 0 and x & (x - 1) == 0


class ZebraPuzzle(LogicTask):
    name = "zebra_puzzle"
    description = "Einstein-style puzzle: deduce every house's attributes from minimal clues."
    levels = {
        1: "3 houses, 2 attributes",
        2: "3 houses, 3 attributes",
        3: "4 houses, 3 attributes",
        4: "4 houses, 4 attributes",
        5: "5 houses, 4 attributes",
        6: "5 houses, 5 attributes",
        7: "6 houses, 5 attributes",
    }
    sizes = {1: (3, 2), 2: (3, 3), 3: (4, 3), 4: (4, 4), 5: (5, 4), 6: (5, 5), 7: (6, 5)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, m = self.sizes[difficulty]
        attrs = ["owner", *rng.sample([a for a in ATTRIBUTES if a != "owner"], m - 1)]
        values = [rng.sample(ATTRIBUTES[a], n) for a in attrs]
        # solution[v] = house of variable v; variable attr*n + i is value values[attr][i]
        solution = [p for attr in range(m) for p in rng.sample(range(n), n)]
        # Shortest prefix of a random pool of true clues that makes the solution unique (binary search:
        # uniqueness only improves as clues are added), then drop every clue the rest already imply.
        pool = [_random_clue(rng, solution, n, m) for _ in range(8 * n * m)]
        while len(ZebraSolver(n, m, pool).count()) > 1:  # rare: extend the pool until it pins the solution
            pool += [_random_clue(rng, solution, n, m) for _ in range(n * m)]
        lo, hi = 1, len(pool)
        while lo < hi:
            mid = (lo + hi) // 2
            if len(ZebraSolver(n, m, pool[:mid]).count()) == 1:
                hi = mid
            else:
                lo = mid + 1
        clues = pool[:lo]
        for clue in list(reversed(clues)):  # minimise: drop clues that are not needed
            trial = [c for c in clues if c is not clue]
            if len(ZebraSolver(n, m, trial).count()) == 1:
                clues = trial
        rng.shuffle(clues)
        solver = ZebraSolver(n, m, clues)
        assert solver.count() == [solution]
        words = [v for row in values for v in row]
        lines = [f"{k + 1}. {_say(c, words, attrs, n)}" for k, c in enumerate(clues)]
        houses = [
            [values[a][i] for a in range(m) for i in range(n) if solution[a * n + i] == p] for p in range(n)
        ]
        answer = "\n".join(f"House {p + 1}: {', '.join(h)}" for p, h in enumerate(houses))
        prompt = (
            f"There are {n} houses in a row, numbered 1 to {n} from left to right. Each house has a different "
            + "; ".join(f"{a} ({', '.join(sorted(values[k], key=str.lower))})" for k, a in enumerate(attrs))
            + ".\n\nClues:\n"
            + "\n".join(lines)
            + "\n\n"
            f"Give each house's values in the order {', '.join(attrs)}, one house per line. {ANSWER_FORMAT} "
            f"Example format: <answer>\nHouse 1: {', '.join(f'<{a}>' for a in attrs)}\nHouse 2: ...\n</answer>"
        )
        puzzle = {"attributes": attrs, "houses": houses, "clues": clues, "solver_nodes": solver.nodes}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        houses, attrs = puzzle["houses"], puzzle["attributes"]
        n = len(houses)
        known = {v.lower(): a for h in houses for a, v in enumerate(h)}
        rows = _rows(answer, n)
        for p, text in enumerate(rows):
            found = [w.lower() for w in scan(text, r"[A-Za-z]+", ROW_SEPARATORS, f"house {p + 1}")]
            unknown = [w for w in found if w not in known]
            if unknown:
                raise ParseError(f"{unknown[0]!r} in house {p + 1} is not a value of this puzzle")
            for a, want in enumerate(houses[p]):
                got = [w for w in found if known[w] == a]
                if len(got) != 1:
                    return 0.0, {
                        "correct": False,
                        "house": p + 1,
                        "attribute": attrs[a],
                        "reason": "missing" if not got else "several values",
                    }
                if got[0] != want.lower():
                    return 0.0, {"correct": False, "house": p + 1, "attribute": attrs[a], "got": got[0]}
        return 1.0, {"correct": True}

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        n, m = len(puzzle["houses"]), len(puzzle["attributes"])
        return len(ZebraSolver(n, m, puzzle["clues"]).count(limit))

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["houses"]) * len(puzzle["attributes"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """Swap one attribute's values between two houses (a one-cell change in each)."""
        rng = random.Random(seed)
        houses = [list(h) for h in instance.puzzle["houses"]]
        p, q = rng.sample(range(len(houses)), 2)
        a = rng.randrange(len(houses[0]))
        houses[p][a], houses[q][a] = houses[q][a], houses[p][a]
        return "\n".join(f"House {k + 1}: {', '.join(h)}" for k, h in enumerate(houses))


def _rows(answer: str, n: int) -> list[str]:
    """The text describing each house: split at 'House k' markers (each house once, nothing else
    before the first), else one line (or list) per house; blank lines and brackets between are fine."""
    marks = list(re.finditer(r"house\s*#?\s*(\d+)", answer, flags=re.IGNORECASE | re.ASCII))
    if marks:
        scan(answer[: marks[0].start()], r"(?!)", ROW_SEPARATORS, "the answer")
        houses = [parse_int(mk.group(1)) for mk in marks]
        no_repeats(houses, "house")
        if sorted(houses) != list(range(1, n + 1)):
            raise ParseError(f"expected houses 1 to {n}, found {sorted(houses)}")
        ends = [mk.start() for mk in marks[1:]] + [len(answer)]
        rows = {h: answer[mk.end() : end] for h, mk, end in zip(houses, marks, ends, strict=True)}
        return [rows[p] for p in range(1, n + 1)]
    rows = []
    for piece in re.split(r"[\n;]|\],", answer):
        if re.search(r"[A-Za-z]", piece):
            rows.append(piece)
        else:
            scan(piece, r"(?!)", ROW_SEPARATORS, "the answer")
    if len(rows) != n:
        raise ParseError(f"expected {n} houses ('House k: ...' or one line per house), found {len(rows)}")
    return rows


def _random_clue(rng: random.Random, sol: list[int], n: int, m: int) -> Clue:
    def var(attr: int | None = None) -> int:
        a = rng.randrange(m) if attr is None else attr
        return a * n + rng.randrange(n)

    kind = rng.choices(["same", "notsame", "left", "next", "before", "pos", "notpos"], [5, 2, 2, 2, 2, 1, 1])[
        0
    ]
    a_attr = rng.randrange(m)
    b_attr = rng.choice([x for x in range(m) if x != a_attr]) if kind == "same" else rng.randrange(m)
    for _ in range(100):
        a, b = var(a_attr), var(b_attr)
        if kind == "pos":
            return ["pos", a, sol[a]]
        if kind == "notpos":
            return ["notpos", a, rng.choice([p for p in range(n) if p != sol[a]])]
        if a == b:
            continue
        ok = {
            "same": sol[a] == sol[b],
            "notsame": sol[a] != sol[b] and a // n != b // n,
            "left": sol[a] + 1 == sol[b],
            "next": abs(sol[a] - sol[b]) == 1,
            "before": sol[a] < sol[b],
        }[kind]
        if ok:
            return [kind, a, b]
    a = var()
    return ["pos", a, sol[a]]


def _say(clue: Clue, words: list[str], attrs: list[str], n: int) -> str:
    kind, a, b = clue

    def who(v: int) -> str:
        attr = attrs[v // n]
        w = words[v]
        return {
            "owner": w,
            "color": f"the {w} house",
            "pet": f"the {w} owner",
            "drink": f"the person who drinks {w}",
            "sport": f"the person who plays {w}",
            "food": f"the person who eats {w}",
        }[attr]

    ordinal = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh"]
    is_color = attrs[a // n] == "color"
    if kind == "pos":
        text = (
            f"{who(a)} is the {ordinal[b]} house" if is_color else f"{who(a)} lives in the {ordinal[b]} house"
        )
        return text[0].upper() + text[1:] + "."
    if kind == "notpos":
        text = (
            f"{who(a)} is not the {ordinal[b]} house"
            if is_color
            else f"{who(a)} does not live in the {ordinal[b]} house"
        )
        return text[0].upper() + text[1:] + "."
    if (
        kind == "same" and a // n == 0
    ):  # owner first: "Carol lives in the red house", "Carol is the dog owner"
        text = f"{who(a)} lives in {who(b)}" if attrs[b // n] == "color" else f"{who(a)} is {who(b)}"
        return text + "."
    text = {
        "same": f"{who(a)} and {who(b)} are in the same house",
        "notsame": f"{who(a)} and {who(b)} are in different houses",
        "left": f"{who(a)} is directly left of {who(b)}",
        "next": f"{who(a)} and {who(b)} are next to each other",
        "before": f"{who(a)} is somewhere left of {who(b)}",
    }[kind]
    return text[0].upper() + text[1:] + "."


TASK = ZebraPuzzle()
