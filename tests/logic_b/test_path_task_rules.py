"""Path tasks (shortest path, Hamiltonian path): every wrong path is scored 0 with the broken rule named,
every valid path in any documented form is scored 1, parse errors are explained, and the generators
build the puzzles their levels promise."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from verifiers.logic.base import LogicInstance
from verifiers.logic.graphs import random_connected_edges, vertex_sequence
from verifiers.logic.tasks.hamiltonian_path import TASK as HAM
from verifiers.logic.tasks.shortest_path import TASK as SHORT

# 1-2-4 and 1-3-4 both weigh 2; the direct edge 1-4 weighs 5
DIAMOND = {
    "n": 4,
    "edges": [[1, 2, 1], [2, 4, 1], [1, 3, 1], [3, 4, 1], [1, 4, 5]],
    "source": 1,
    "target": 4,
    "distance": 2,
}
# a path 3-1-5-2-4 plus the chord 1-4
LINE5 = {"n": 5, "edges": [[1, 3], [1, 5], [2, 5], [2, 4], [1, 4]]}


def test_shortest_path_score_details():
    assert SHORT.score(DIAMOND, "1 -> 3 -> 4") == (1.0, {"correct": True, "weight": 2})
    assert SHORT.verify(DIAMOND, "<answer>1 → 2 → 4</answer>") == (1.0, {"correct": True, "weight": 2})
    assert SHORT.score(DIAMOND, "2 -> 3 -> 1") == (
        0.0,
        {"correct": False, "reason": "path must run from source to target", "starts": 2, "ends": 1},
    )
    assert SHORT.score(DIAMOND, "1 -> 2 -> 3 -> 4") == (
        0.0,
        {"correct": False, "reason": "no such edge", "edge": [2, 3]},
    )
    assert SHORT.score(DIAMOND, "1") == (
        0.0,
        {"error": "parse error: expected a path of at least two vertices"},
    )


def test_parse_errors_are_explained():
    assert SHORT.verify(DIAMOND, "<answer>1 -> -2 -> 4</answer>") == (
        0.0,
        {"error": "parse error: vertices are positive numbers"},
    )
    assert HAM.verify(LINE5, "<answer>3 -> one -> 5</answer>") == (
        0.0,
        {"error": "parse error: unexpected 'one' in a vertex sequence"},
    )
    assert HAM.score(LINE5, "") == (0.0, {"error": "parse error: expected a sequence of vertex numbers"})


def test_hamiltonian_path_score_details():
    assert HAM.score(LINE5, "3 -> 1 -> 5 -> 2 -> 4") == (1.0, {"correct": True})
    assert HAM.verify(LINE5, "<answer>[4, 2, 5, 1, 3]</answer>")[0] == 1.0
    assert HAM.score(LINE5, "5 -> 2 -> 4 -> 1 -> 3") == (1.0, {"correct": True})  # uses the chord
    # every vertex once, but 4-3 is no edge: a wrong answer is never scored 1
    assert HAM.score(LINE5, "1 -> 5 -> 2 -> 4 -> 3") == (
        0.0,
        {"correct": False, "reason": "no such edge", "edge": [4, 3]},
    )
    for v in (0, 6):
        assert HAM.score(LINE5, f"3 -> 1 -> {v}") == (
            0.0,
            {"correct": False, "reason": "no such vertex", "vertex": v},
        )
    assert HAM.score(LINE5, "3 -> 1 -> 3") == (
        0.0,
        {"correct": False, "reason": "vertex visited twice", "vertex": 3},
    )
    assert HAM.score(LINE5, "2 -> 3") == (
        0.0,
        {"correct": False, "reason": "not every vertex visited", "missing": [1, 4, 5]},
    )


@pytest.mark.parametrize("task", [SHORT, HAM], ids=lambda t: t.name)
def test_generation_is_seeded_and_gold_scores_one(task):
    for level in (1, 3, 6):
        a, b = task.generate(level, 0), task.generate(level, 1)
        assert a == task.generate(level, 0) and a.puzzle != b.puzzle
        for inst in (a, b):
            assert task.verify(inst.puzzle, f"<answer>{inst.answer}</answer>")[0] == 1.0
            listing = ", ".join(
                f"{e[0]}-{e[1]}" + "".join(f" ({w})" for w in e[2:]) for e in inst.puzzle["edges"]
            )
            assert listing in inst.prompt
            for a_, b_, *_ in inst.puzzle["edges"]:
                assert f"{a_}-{b_}" in inst.prompt and 1 <= a_ < b_ <= inst.puzzle["n"]


def test_hamiltonian_generation_hides_a_path_among_the_promised_extra_edges():
    touches_one = False
    for level, (n, extra) in HAM.sizes.items():
        for seed in range(4):
            inst = HAM.generate(level, seed)
            edges = {tuple(e) for e in inst.puzzle["edges"]}
            assert len(edges) == n - 1 + extra  # the "extra edges" of the level description
            path = vertex_sequence(inst.answer)
            on_path = {tuple(sorted(p)) for p in zip(path, path[1:], strict=False)}
            touches_one |= any(1 in e for e in edges - on_path)
            assert "Give the vertices in order, separated by ' -> '." in inst.prompt
            assert (
                "Find a path that visits every vertex exactly once, moving only along edges." in inst.prompt
            )
    assert touches_one  # the extra edges may touch any vertex


def test_shortest_path_generation_picks_the_longest_optimal_route():
    sources, two_edge, weights = set(), False, set()
    for level in (1, 2, 4):
        for seed in range(12):
            p = SHORT.generate(level, seed).puzzle
            graph = nx.Graph()
            graph.add_weighted_edges_from(p["edges"])
            weights |= {w for *_, w in p["edges"]}
            _, paths = nx.single_source_dijkstra(graph, p["source"])
            most = max(len(q) for q in paths.values())
            # the target is the (smallest-numbered) vertex whose optimal route has the most edges
            assert p["target"] == min(v for v, q in paths.items() if len(q) == most) and most >= 3
            sources.add(p["source"])
            two_edge |= most == 3
    assert 1 in sources and two_edge and weights == set(range(1, 10))


def _changed(a: list[int], b: list[int]) -> list[int]:
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def test_shortest_path_corruption_breaks_one_step():
    for level, seed in ((1, 0), (3, 2), (6, 5)):
        inst = SHORT.generate(level, seed)
        p, gold = inst.puzzle, vertex_sequence(inst.answer)
        adjacent = {frozenset(e[:2]) for e in p["edges"]}
        for s in range(8):
            text = SHORT.corrupt(inst, s)
            assert text == SHORT.corrupt(inst, s) and " -> ".join(map(str, gold)) != text
            bad = vertex_sequence(text)
            (k,) = _changed(gold, bad)
            assert 0 < k and all(1 <= v <= p["n"] for v in bad) and SHORT.score(p, text)[0] == 0.0
            if k < len(bad) - 1:
                assert bad[k] != bad[k - 1] and frozenset(bad[k - 1 : k + 1]) not in adjacent


def test_shortest_path_corruption_offers_every_breaking_vertex():
    # on the line 1-2-3-4 the vertices that break the step after the predecessor are known exactly
    line = [[1, 2, 1], [2, 3, 1], [3, 4, 1]]
    for path, expected in (([1, 2, 3, 4], {3, 4}), ([4, 3, 2, 1], {1, 2})):
        p = {"n": 4, "edges": line, "source": path[0], "target": path[-1], "distance": 3}
        inst = LogicInstance("shortest_path", 1, 0, "", " -> ".join(map(str, path)), p)
        chosen = set()
        for s in range(40):
            bad = vertex_sequence(SHORT.corrupt(inst, s))
            (k,) = _changed(path, bad)
            chosen.add(bad[k])
        assert chosen == expected


def test_shortest_path_corruption_falls_back_to_the_target():
    # the triangle: the source is adjacent to every vertex, so no interior change breaks an edge
    p = {"n": 3, "edges": [[1, 2, 1], [2, 3, 1], [1, 3, 5]], "source": 1, "target": 3, "distance": 2}
    inst = LogicInstance("shortest_path", 1, 0, "", "1 -> 2 -> 3", p)
    ends = set()
    for s in range(30):
        bad = vertex_sequence(SHORT.corrupt(inst, s))
        assert bad[:2] == [1, 2] and len(bad) == 3 and SHORT.score(p, " -> ".join(map(str, bad)))[0] == 0.0
        ends.add(bad[-1])
    assert ends == {1, 2}


def test_hamiltonian_corruption_repeats_a_vertex():
    inst = HAM.generate(3, 4)
    for s in range(6):
        text = HAM.corrupt(inst, s)
        assert text == HAM.corrupt(inst, s)
        bad = vertex_sequence(text)
        assert HAM.score(inst.puzzle, text)[1]["reason"] == "vertex visited twice"
        assert len(bad) == inst.puzzle["n"] and set(bad) < set(range(1, inst.puzzle["n"] + 1))


@pytest.mark.timeout(10)
def test_random_edges_saturate_at_the_complete_graph_and_favour_no_vertex():
    for n in (4, 5):
        edges = random_connected_edges(random.Random(n), n, 100)
        assert len(edges) == n * (n - 1) // 2
    degree_one = total = 0
    for seed in range(20):
        graph = nx.Graph(random_connected_edges(random.Random(seed), 10, 30))
        degree_one += graph.degree(1)
        total += 2 * graph.number_of_edges() / 10
    assert degree_one > 0.6 * total
