"""Graph colouring: colour the vertices with k colours so that no edge joins two equal colours. The
graph is built around a hidden colouring, so one always exists; any proper colouring scores 1."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.graphs import vertex_map


class GraphColoring(LogicTask):
    name = "graph_coloring"
    description = "Colour a graph's vertices with k colours so that adjacent vertices differ."
    levels = {
        1: "5 vertices, 2 colours",
        2: "7 vertices, 3 colours",
        3: "10 vertices, 3 colours",
        4: "12 vertices, 4 colours",
        5: "15 vertices, 4 colours",
        6: "20 vertices, 5 colours",
    }
    sizes = {
        1: (5, 2, 0.6),
        2: (7, 3, 0.5),
        3: (10, 3, 0.5),
        4: (12, 4, 0.55),
        5: (15, 4, 0.55),
        6: (20, 5, 0.55),
    }

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, k, p = self.sizes[difficulty]
        colour = {v: (v - 1) % k + 1 for v in range(1, n + 1)}  # balanced classes, then shuffled
        values = list(colour.values())
        rng.shuffle(values)
        colour = dict(zip(colour, values, strict=True))
        edges = [
            (a, b)
            for a in range(1, n + 1)
            for b in range(a + 1, n + 1)
            if colour[a] != colour[b] and rng.random() < p
        ]
        touched = {v for e in edges for v in e}
        for v in range(1, n + 1):  # every vertex gets a neighbour, so every vertex is constrained
            if v not in touched:
                u = rng.choice([u for u in range(1, n + 1) if colour[u] != colour[v]])
                edges.append((min(u, v), max(u, v)))
        edges = sorted(set(edges))
        prompt = (
            f"Colour the vertices 1 to {n} of this undirected graph with the colours 1 to {k} so that no edge "
            f"connects two vertices of the same colour.\nEdges: {', '.join(f'{a}-{b}' for a, b in edges)}\n\n"
            f"Give every vertex's colour as vertex:colour pairs separated by commas. {ANSWER_FORMAT} "
            "Example: <answer>1:1, 2:2, 3:1</answer>"
        )
        answer = ", ".join(f"{v}:{c}" for v, c in colour.items())
        puzzle = {"n": n, "colors": k, "edges": [list(e) for e in edges]}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        n, k = puzzle["n"], puzzle["colors"]
        got = vertex_map(answer, n)
        unknown = sorted(v for v in got if not 1 <= v <= n)
        if unknown:
            raise ParseError(f"the graph has no vertex {unknown[0]}")
        missing = [v for v in range(1, n + 1) if v not in got]
        if missing:
            return 0.0, {"correct": False, "reason": "vertices without a colour", "missing": missing}
        bad = [v for v in range(1, n + 1) if not 1 <= got[v] <= k]
        if bad:
            return 0.0, {"correct": False, "reason": f"colour outside 1..{k}", "vertex": bad[0]}
        for a, b in puzzle["edges"]:
            if got[a] == got[b]:
                return 0.0, {"correct": False, "reason": "edge joins equal colours", "edge": [a, b]}
        return 1.0, {"correct": True}

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["n"] * puzzle["colors"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """Give one vertex the colour of one of its neighbours."""
        rng = random.Random(seed)
        colour = vertex_map(instance.answer, instance.puzzle["n"])
        a, b = rng.choice(instance.puzzle["edges"])
        colour[a] = colour[b]
        return ", ".join(f"{v}:{c}" for v, c in colour.items())


TASK = GraphColoring()
