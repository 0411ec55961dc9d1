"""Skyscrapers: a latin square of building heights; a clue outside the grid says how many buildings are
visible from there (a taller one hides every shorter one behind it). Side clues are removed, then
given heights, while the solution stays unique."""

from __future__ import annotations

from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance
from verifiers.logic.fill import FillInTask, givens_of, show
from verifiers.logic.grids import render
from verifiers.logic.latin import all_vars, latin_model, latin_violations, random_latin
from verifiers.logic.solvers import reduce_in_phases

SIZES = {1: 4, 2: 5, 3: 6, 4: 7, 5: 8}
SIDES = ("top", "bottom", "left", "right")


def lines(n: int) -> dict[str, list[list[tuple[int, int]]]]:
    """For each side, the n lines of cells in viewing order from that side."""
    return {
        "top": [[(r, c) for r in range(n)] for c in range(n)],
        "bottom": [[(r, c) for r in reversed(range(n))] for c in range(n)],
        "left": [[(r, c) for c in range(n)] for r in range(n)],
        "right": [[(r, c) for c in reversed(range(n))] for r in range(n)],
    }


def visible(heights: list[int]) -> int:
    tallest, seen = 0, 0
    for h in heights:
        if h > tallest:
            tallest, seen = h, seen + 1
    return seen


def _model(n: int, counts: dict[tuple[str, int], int]):
    """Latin square rules plus one guard literal per clued line: "exactly `count` visible from there".

    Visibility uses order literals: taller[i][v] says the tallest of the first i+1 buildings in viewing
    order is at least v, built incrementally, so building k is visible iff for its height v the prefix
    before it is not yet at least v. That keeps every gate at two inputs.
    """
    model, x = latin_model(n)
    at_least = [
        [{v: model.or_gate([x[r][c][u] for u in range(v, n + 1)]) for v in range(2, n + 1)} for c in range(n)]
        for r in range(n)
    ]
    guards: dict[tuple[str, int], int] = {}
    for side, side_lines in lines(n).items():
        for i, cells in enumerate(side_lines):
            if (side, i) not in counts:
                continue
            (r0, c0) = cells[0]
            seen = [model.or_gate([x[r0][c0][v] for v in range(1, n + 1)])]  # the first is always seen
            taller = dict(at_least[r0][c0])
            for r, c in cells[1:]:
                seen.append(
                    model.or_gate([model.and_gate([x[r][c][v], -taller[v]]) for v in range(2, n + 1)])
                )
                taller = {v: model.or_gate([taller[v], at_least[r][c][v]]) for v in range(2, n + 1)}
            guards[side, i] = g = model.fresh()
            model.exactly(seen, counts[side, i], guard=g)
    return model, x, guards


class Skyscraper(FillInTask):
    name = "skyscraper"
    description = "Place buildings of heights 1..n in a latin square so that the visibility clues hold."
    levels = {d: f"{n}x{n}, clues removed until minimal" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        sol = random_latin(rng, n)
        views = [(side, i) for side in SIDES for i in range(n)]
        counts = {
            (side, i): visible([sol[r][c] for r, c in cells])
            for side, side_lines in lines(n).items()
            for i, cells in enumerate(side_lines)
        }
        model, x, guards = _model(n, counts)
        cells = [(r, c) for r in range(n) for c in range(n)]
        side_clues = [[guards[view]] for view in views]
        given_clues = [[x[r][c][sol[r][c]]] for r, c in cells]
        with model.session() as s:
            kept_givens, kept_views = reduce_in_phases(s, all_vars(x), [given_clues, side_clues], rng)
        clues = {side: [0] * n for side in SIDES}
        for j in kept_views:
            side, i = views[j]
            clues[side][i] = counts[side, i]
        givens = givens_of(sol, cells, kept_givens)
        puzzle = {"n": n, "clues": clues, "givens": givens, "solution": sol}
        return LogicInstance(self.name, difficulty, seed, self._prompt(puzzle), render(sol), puzzle)

    def _prompt(self, p: dict[str, Any]) -> str:
        n, clues = p["n"], p["clues"]

        def fmt(values: list[int]) -> str:
            return " ".join(str(v) if v else "." for v in values)

        extra = (
            f"\nGiven heights ('.' = unknown):\n{show(p['givens'])}\n" if any(map(any, p["givens"])) else ""
        )
        return (
            f"Skyscrapers puzzle on a {n}x{n} grid. Place a building of height 1-{n} in every cell so that each "
            f"row and each column contains every height exactly once. A clue outside the grid is the number "
            "of buildings visible from that side, looking along the row or column; a taller building hides "
            "all lower ones behind it. '.' means no clue.\n\n"
            f"Top clues (columns 1-{n}, looking down): {fmt(clues['top'])}\n"
            f"Bottom clues (columns 1-{n}, looking up): {fmt(clues['bottom'])}\n"
            f"Left clues (rows 1-{n}, looking right): {fmt(clues['left'])}\n"
            f"Right clues (rows 1-{n}, looking left): {fmt(clues['right'])}\n{extra}\n"
            f"Answer with the grid of heights: {n} lines of {n} numbers separated by spaces. " + ANSWER_FORMAT
        )

    def violations(self, puzzle: dict[str, Any], grid: list[list[int]]) -> list[str]:
        n = puzzle["n"]
        violations = latin_violations(grid)
        if not violations:
            for side, side_lines in lines(n).items():
                for i, cells in enumerate(side_lines):
                    want = puzzle["clues"][side][i]
                    got = visible([grid[r][c] for r, c in cells])
                    if want and got != want:
                        violations.append(f"{side} clue {i + 1}: {got} visible, expected {want}")
        return violations

    def count_solutions(self, puzzle: dict[str, Any], limit: int = 2) -> int:
        n = puzzle["n"]
        counts = {(side, i): v for side, values in puzzle["clues"].items() for i, v in enumerate(values) if v}
        model, x, guards = _model(n, counts)
        on = list(guards.values())
        on += [x[r][c][v] for r, row in enumerate(puzzle["givens"]) for c, v in enumerate(row) if v]
        with model.session() as s:
            return s.count(all_vars(x), on, limit)


TASK = Skyscraper()
