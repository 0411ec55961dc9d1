"""Hamiltonian path: visit every vertex exactly once along edges. The graph hides one such path among
extra edges, so a path exists; any valid path scores 1."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.graphs import vertex_sequence


class HamiltonianPath(LogicTask):
    name = "hamiltonian_path"
    description = "Find a path through an undirected graph that visits every vertex exactly once."
    levels = {
        1: "5 vertices, 2 extra edges",
        2: "7 vertices, 4 extra edges",
        3: "9 vertices, 6 extra edges",
        4: "11 vertices, 9 extra edges",
        5: "13 vertices, 12 extra edges",
        6: "16 vertices, 16 extra edges",
    }
    sizes = {1: (5, 2), 2: (7, 4), 3: (9, 6), 4: (11, 9), 5: (13, 12), 6: (16, 16)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, extra = self.sizes[difficulty]
        path = rng.sample(range(1, n + 1), n)
        edges = {(min(a, b), max(a, b)) for a, b in zip(path, path[1:], strict=False)}
        target = len(edges) + extra
        while len(edges) < target:
            a, b = rng.sample(range(1, n + 1), 2)
            edges.add((min(a, b), max(a, b)))
        listing = ", ".join(f"{a}-{b}" for a, b in sorted(edges))
        prompt = (
            f"An undirected graph has vertices 1 to {n} and these edges:\n{listing}\n\n"
            "Find a path that visits every vertex exactly once, moving only along edges. Give the vertices in "
            f"order, separated by ' -> '. {ANSWER_FORMAT} Example: <answer>3 -> 1 -> 2 -> ...</answer>"
        )
        puzzle = {"n": n, "edges": [list(e) for e in sorted(edges)]}
        return LogicInstance(self.name, difficulty, seed, prompt, " -> ".join(map(str, path)), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n = puzzle["n"]
        path = vertex_sequence(answer)
        if not path:
            return 0.0, {"error": "parse error: expected a sequence of vertex numbers"}
        seen: set[int] = set()
        for v in path:
            if not 1 <= v <= n:
                return 0.0, {"correct": False, "reason": "no such vertex", "vertex": v}
            if v in seen:
                return 0.0, {"correct": False, "reason": "vertex visited twice", "vertex": v}
            seen.add(v)
        if len(path) != n:
            return 0.0, {
                "correct": False,
                "reason": "not every vertex visited",
                "missing": sorted(set(range(1, n + 1)) - seen),
            }
        adjacent = {frozenset(e) for e in puzzle["edges"]}
        for a, b in zip(path, path[1:], strict=False):
            if frozenset((a, b)) not in adjacent:
                return 0.0, {"correct": False, "reason": "no such edge", "edge": [a, b]}
        return 1.0, {"correct": True}

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["edges"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """Replace one vertex by another one already on the path."""
        rng = random.Random(seed)
        path = vertex_sequence(instance.answer)
        i, j = rng.sample(range(len(path)), 2)
        path[i] = path[j]
        return " -> ".join(map(str, path))


TASK = HamiltonianPath()
