"""Graph tasks: every valid object is accepted, the broken constraint is named."""

from __future__ import annotations

import random

import networkx as nx

from verifiers.logic.graphs import random_connected_edges, vertex_map
from verifiers.logic.tasks.graph_coloring import TASK as COLOR
from verifiers.logic.tasks.hamiltonian_path import TASK as HAM
from verifiers.logic.tasks.shortest_path import TASK as SHORT


def test_random_graphs_are_connected():
    rng = random.Random(0)
    for n, m in ((5, 4), (10, 16), (24, 44)):
        graph = nx.Graph(random_connected_edges(rng, n, m))
        assert nx.is_connected(graph) and graph.number_of_nodes() == n and graph.number_of_edges() == m


def test_colouring_accepts_other_proper_colourings_and_lists():
    inst = COLOR.generate(3, 0)
    gold = vertex_map(inst.answer, inst.puzzle["n"])
    k = inst.puzzle["colors"]
    relabelled = {v: c % k + 1 for v, c in gold.items()}  # permuting colours keeps it proper
    assert COLOR.score(inst.puzzle, ", ".join(f"{v}={c}" for v, c in relabelled.items()))[0] == 1.0
    assert COLOR.score(inst.puzzle, " ".join(str(gold[v]) for v in sorted(gold)))[0] == 1.0
    over = dict(gold) | {1: k + 1}
    assert COLOR.score(inst.puzzle, ", ".join(f"{v}:{c}" for v, c in over.items()))[1]["vertex"] == 1


def test_shortest_path_accepts_any_optimal_path():
    puzzle = {
        "n": 4,
        "edges": [[1, 2, 1], [2, 4, 1], [1, 3, 1], [3, 4, 1], [1, 4, 5]],
        "source": 1,
        "target": 4,
        "distance": 2,
    }
    assert SHORT.score(puzzle, "1 -> 2 -> 4")[0] == 1.0
    assert SHORT.score(puzzle, "[1, 3, 4]")[0] == 1.0
    assert SHORT.score(puzzle, "1 -> 4")[1] == {
        "correct": False,
        "reason": "not the shortest",
        "weight": 5,
        "optimal": 2,
    }
    assert SHORT.score(puzzle, "1 -> 2 -> 3 -> 4")[1]["edge"] == [2, 3]
    assert SHORT.score(puzzle, "2 -> 4")[1]["reason"] == "path must run from source to target"


def test_shortest_path_distance_is_dijkstras():
    inst = SHORT.generate(5, 3)
    graph = nx.Graph()
    graph.add_weighted_edges_from(inst.puzzle["edges"])
    assert (
        nx.dijkstra_path_length(graph, inst.puzzle["source"], inst.puzzle["target"])
        == inst.puzzle["distance"]
    )


def test_hamiltonian_path_reverse_is_valid_and_repeats_are_named():
    inst = HAM.generate(4, 1)
    path = inst.answer.split(" -> ")
    assert HAM.score(inst.puzzle, ", ".join(reversed(path)))[0] == 1.0
    assert HAM.score(inst.puzzle, " -> ".join(path[:-1]))[1]["reason"] == "not every vertex visited"
    assert HAM.score(inst.puzzle, " -> ".join([*path[:-1], path[0]]))[1]["reason"] == "vertex visited twice"
