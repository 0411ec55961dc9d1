"""Shortest path in a weighted undirected graph. Any path from source to target of optimal total
weight scores 1; the optimum comes from networkx's Dijkstra."""

from __future__ import annotations

import random
from typing import Any

import networkx as nx

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.graphs import random_connected_edges, vertex_sequence


class ShortestPath(LogicTask):
    name = "shortest_path"
    description = "Find a minimum-weight path between two vertices of a weighted graph."
    levels = {
        1: "5 vertices, 7 edges",
        2: "7 vertices, 11 edges",
        3: "10 vertices, 16 edges",
        4: "14 vertices, 24 edges",
        5: "18 vertices, 32 edges",
        6: "24 vertices, 44 edges",
    }
    sizes = {1: (5, 7), 2: (7, 11), 3: (10, 16), 4: (14, 24), 5: (18, 32), 6: (24, 44)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n, m = self.sizes[difficulty]
        while True:
            edges = [[a, b, rng.randint(1, 9)] for a, b in random_connected_edges(rng, n, m)]
            graph = _graph(edges)
            # the pair whose optimal path has the most edges: a real search, never a single edge
            lengths, paths = nx.single_source_dijkstra(graph, source := rng.randint(1, n))
            target = max(paths, key=lambda v: (len(paths[v]), -v))
            if len(paths[target]) >= 3:
                break
        path = paths[target]
        listing = ", ".join(f"{a}-{b} ({w})" for a, b, w in edges)
        prompt = (
            f"An undirected graph has vertices 1 to {n} and these edges, with weights in parentheses:\n{listing}\n\n"
            f"Find a path from vertex {source} to vertex {target} with the smallest total weight. "
            f"Give the vertices of the path in order, separated by ' -> '. {ANSWER_FORMAT} "
            f"Example: <answer>{source} -> 7 -> {target}</answer>"
        )
        puzzle = {"n": n, "edges": edges, "source": source, "target": target, "distance": lengths[target]}
        return LogicInstance(self.name, difficulty, seed, prompt, " -> ".join(map(str, path)), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        path = vertex_sequence(answer)
        if len(path) < 2:
            return 0.0, {"error": "parse error: expected a path of at least two vertices"}
        weight = {frozenset((a, b)): w for a, b, w in puzzle["edges"]}
        if path[0] != puzzle["source"] or path[-1] != puzzle["target"]:
            return 0.0, {
                "correct": False,
                "reason": "path must run from source to target",
                "starts": path[0],
                "ends": path[-1],
            }
        total = 0
        for a, b in zip(path, path[1:], strict=False):
            if frozenset((a, b)) not in weight:
                return 0.0, {"correct": False, "reason": "no such edge", "edge": [a, b]}
            total += weight[frozenset((a, b))]
        if total != puzzle["distance"]:
            return 0.0, {
                "correct": False,
                "reason": "not the shortest",
                "weight": total,
                "optimal": puzzle["distance"],
            }
        return 1.0, {"correct": True, "weight": total}

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(len(puzzle["edges"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        """Change one vertex: an interior one to a vertex that breaks an edge, or else the target."""
        rng = random.Random(seed)
        path = vertex_sequence(instance.answer)
        p = instance.puzzle
        adjacent = {frozenset(e[:2]) for e in p["edges"]}
        k = rng.randrange(1, len(path) - 1)
        options = [
            v
            for v in range(1, p["n"] + 1)
            if frozenset((path[k - 1], v)) not in adjacent and v != path[k - 1]
        ]
        if options:
            path[k] = rng.choice(options)
        else:
            path[-1] = rng.choice([v for v in range(1, p["n"] + 1) if v != p["target"]])
        return " -> ".join(map(str, path))


def _graph(edges: list[list[int]]) -> nx.Graph:
    graph = nx.Graph()
    graph.add_weighted_edges_from(edges)
    return graph


TASK = ShortestPath()
