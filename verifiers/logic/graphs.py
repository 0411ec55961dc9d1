"""Graph pieces for the graph tasks: seeded random graphs, edge listings in prompts, and parsing of
vertex sequences and vertex->value maps from free-form answers. Vertices are numbered from 1."""

from __future__ import annotations

import random
import re

from verifiers.logic.base import ParseError
from verifiers.logic.textutil import SEPARATORS, no_repeats, parse_int, scan, strip_wrapping


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


# Between the vertices of a path: arrows ("1 -> 4", "1 → 4"), dashes, commas, spaces and list brackets.
PATH_SEPARATORS = r"\s,;\->→\[\]()"
_PAIR = re.compile(r"(\d+)\s*(?::|=|->|→)\s*(\d+)", re.ASCII)


def vertex_sequence(text: str) -> list[int]:
    """'1 -> 4 -> 2', '[1, 4, 2]', '1-4-2' -> [1, 4, 2]; anything but numbers and separators is a
    parse error."""
    text = strip_wrapping(text)
    if re.search(r"(?<!\d)-(?=\d)", text, flags=re.ASCII):  # a sign, not a dash between two vertices
        raise ParseError("vertices are positive numbers")
    return [parse_int(v) for v in scan(text, r"\d+", PATH_SEPARATORS, "a vertex sequence")]


def vertex_map(text: str, n: int) -> dict[int, int]:
    """'1: 2, 2: 1' or '1=2 2=1' pairs (each vertex once), else exactly n bare numbers read as the values
    for 1..n. Raises ParseError for anything else."""
    text = strip_wrapping(text)
    if _PAIR.search(text):
        pairs = [
            _PAIR.fullmatch(t).groups() for t in scan(text, _PAIR.pattern, SEPARATORS, "vertex:value pairs")
        ]
        vertices = [parse_int(v) for v, _ in pairs]
        no_repeats(vertices, "the vertex")
        return dict(zip(vertices, (parse_int(c) for _, c in pairs), strict=True))
    values = [parse_int(v) for v in scan(text, r"\d+", SEPARATORS, "a list of values")]
    if len(values) != n:
        raise ParseError(f"expected vertex:value pairs or {n} values, found {len(values)} numbers")
    return dict(enumerate(values, 1))
