"""Graph pieces for the graph tasks: seeded random graphs, edge listings in prompts, and parsing of
vertex sequences and vertex->value maps from free-form answers. Vertices are numbered from 1."""

from __future__ import annotations

import random
import re

from verifiers.logic.textutil import integers, parse_int


def random_connected_edges(rng: random.Random, n: int, m: int) -> list[tuple[int, int]]:
    """``m`` distinct undirected edges over vertices 1..n that connect the graph (a random spanning
    tree first, then random extra edges). Sorted, so the listing does not reveal the tree."""
    order = rng.sample(range(1, n + 1), n)
    edges = {tuple(sorted((order[k], order[rng.randrange(k)]))) for k in range(1, n)}
    m = min(m, n * (n - 1) // 2)
    while len(edges) < m:
        a, b = rng.sample(range(1, n + 1), 2)
        edges.add((min(a, b), max(a, b)))
    return sorted(edges)


def vertex_sequence(text: str) -> list[int]:
    """'1 -> 4 -> 2', '[1, 4, 2]', '1-4-2' -> [1, 4, 2]."""
    return integers(text, signed=False)


def vertex_map(text: str, n: int) -> dict[int, int] | None:
    """'1: 2, 2: 1' or '1=2 2=1' pairs; else exactly n bare numbers read as values for 1..n; else None."""
    pairs = re.findall(r"(?<!\d)(\d+)\s*(?::|=|->|→)\s*(\d+)", text)  # lookbehind: linear on long digit runs
    if pairs:
        out: dict[int, int] = {}
        for v, c in pairs:
            out.setdefault(parse_int(v), parse_int(c))
        return out
    values = integers(text, signed=False)
    return dict(enumerate(values, 1)) if len(values) == n else None
