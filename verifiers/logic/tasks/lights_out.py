"""Lights Out: press cells (each press toggles the cell and its orthogonal neighbours) to turn every light
off. Several press sets can work (4x4 and 5x5 boards have non-trivial null spaces), so the verifier
simulates the presses instead of comparing with the gold set."""

from __future__ import annotations

from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.grids import grid_result, neighbours, parse_binary_grid, render

SIZES = {1: 3, 2: 4, 3: 5, 4: 6, 5: 7, 6: 8}


def apply_presses(lights: list[list[int]], presses: list[list[int]]) -> list[list[int]]:
    n = len(lights)
    out = [row[:] for row in lights]
    for r in range(n):
        for c in range(n):
            if presses[r][c]:
                for rr, cc in [(r, c), *neighbours(r, c, n, n)]:
                    out[rr][cc] ^= 1
    return out


class LightsOut(LogicTask):
    name = "lights_out"
    description = "Find cells to press so that every light of a Lights Out board goes off."
    levels = {d: f"{n}x{n} board, about {n * n // 3} presses needed" for d, n in SIZES.items()}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n = SIZES[difficulty]
        zero = [[0] * n for _ in range(n)]
        while True:
            presses = [[int(rng.random() < 1 / 3) for _ in range(n)] for _ in range(n)]
            lights = apply_presses(zero, presses)
            if any(map(any, lights)):
                break
        prompt = (
            f"Lights Out on a {n}x{n} board. 1 means the light is on, 0 off:\n\n{render(lights)}\n\n"
            "Pressing a cell toggles it and its up, down, left and right neighbours. Choose cells to press "
            "(each at most once) so that all lights end up off.\n"
            f"Answer with a {n}x{n} grid of 0/1 (1 = press this cell): {n} lines of {n} digits separated by "
            "spaces. " + ANSWER_FORMAT
        )
        return LogicInstance(self.name, difficulty, seed, prompt, render(presses), {"n": n, "lights": lights})

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n"]
        presses = parse_binary_grid(answer, n, n)
        left = apply_presses(puzzle["lights"], presses)
        lit = [[r + 1, c + 1] for r in range(n) for c in range(n) if left[r][c]]
        return grid_result([], [f"{len(lit)} light(s) still on: {lit[:10]}"] if lit else [])

    def measure(self, puzzle: dict[str, Any]) -> float:
        return puzzle["n"] ** 2

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        n = instance.puzzle["n"]
        presses = parse_binary_grid(instance.answer, n, n)
        r, c = divmod(seed % (n * n), n)
        presses[r][c] ^= 1
        return render(presses)


TASK = LightsOut()
