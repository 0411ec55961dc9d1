"""Connected components of an edge list on Dask: the large-star / small-star algorithm of Kiveris,
Lattanzi, Mirrokni, Rastogi and Vassilvitskii, "Connected Components in MapReduce and Beyond" (SoCC
2014), the one BigCode's near-dedup runs on Spark (GraphFrames).

Nodes are global input rows, so the smallest node of a component is its first row in input order. With
Γ(u) the neighbours of u and m(S) the smallest node of S, one round is

    large-star:  for each u, m = m(Γ(u) ∪ {u});  emit (v, m) for every v ∈ Γ(u) with v > u
    small-star:  for each u, N = {v ∈ Γ(u): v < u}, m = m(N ∪ {u});  emit (v, m) for every v ∈ N ∪ {u}

Both keep every component connected and neither joins two components; they converge in O(log² n)
rounds to one star per component whose centre is its smallest node. Each half round is one Dask
shuffle of the edges (by u) and a function of a partition; the edges between rounds live on the
workers (persisted, spilled to disk under memory pressure), never on the driver.

Convergence is tested exactly, not by a checksum: the edges are stars centred on their smallest node
iff no node has both a smaller and a larger neighbour and none has two smaller neighbours. The driver
receives one count per round.

Not a flow: a stage of flows/curate/scale/engine.py.
"""

from __future__ import annotations

from collections.abc import Callable

import dask.dataframe as dd
import numpy as np
import pandas as pd

from flows.curate.scale.ops import EDGES, empty, frame, unique_pairs

DIRECTED = {"u": "int64", "v": "int64"}
LABELS = {"v": "int64", "m": "int64"}


def _directed(edges: pd.DataFrame) -> pd.DataFrame:
    i, j = edges["i"].to_numpy(np.int64), edges["j"].to_numpy(np.int64)
    return frame(DIRECTED, u=np.r_[i, j], v=np.r_[j, i])


def _neighbourhoods(d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(u, v) distinct and sorted by u then v; the start of each u's run; each run's u."""
    u, v = unique_pairs(d["u"].to_numpy(np.int64), d["v"].to_numpy(np.int64))
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]]) if len(u) else np.empty(0, dtype=np.int64)
    return u, v, starts, u[starts]


def violations(d: pd.DataFrame) -> pd.Series:
    """Nodes of this partition (shuffled by u) that keep the edges from being stars on their minimum."""
    u, v, starts, nodes = _neighbourhoods(d)
    if len(u) == 0:
        return pd.Series([0])
    smaller = np.add.reduceat((v < u).astype(np.int64), starts)
    larger = np.add.reduceat((v > u).astype(np.int64), starts)
    return pd.Series([int(((smaller > 1) | ((smaller > 0) & (larger > 0))).sum())])


def large_star(d: pd.DataFrame) -> pd.DataFrame:
    u, v, starts, nodes = _neighbourhoods(d)
    if len(u) == 0:
        return empty(EDGES)
    # v sorted within each u: the run's first v is its smallest neighbour
    m = np.minimum(nodes, v[starts])
    m_of = np.repeat(m, np.diff(np.r_[starts, len(u)]))
    up = v > u
    return frame(EDGES, i=m_of[up], j=v[up])


def small_star(e: pd.DataFrame) -> pd.DataFrame:
    """Edges (i < j) shuffled by j: each j's smaller neighbours and j itself to the smallest of them."""
    j, i = unique_pairs(e["j"].to_numpy(np.int64), e["i"].to_numpy(np.int64))
    if len(j) == 0:
        return empty(EDGES)
    starts = np.flatnonzero(np.r_[True, j[1:] != j[:-1]])
    m = i[starts]  # i sorted within each j: the smallest
    m_of = np.repeat(m, np.diff(np.r_[starts, len(j)]))
    other = i != m_of
    return frame(EDGES, i=np.r_[m_of[other], m], j=np.r_[i[other], j[starts]])


def star_labels(d: pd.DataFrame) -> pd.DataFrame:
    """On converged stars: each node with a smaller neighbour (its centre) as (v, m)."""
    u, v, starts, nodes = _neighbourhoods(d)
    first = v[starts] if len(u) else v
    leaf = first < nodes
    return frame(LABELS, v=nodes[leaf], m=first[leaf])


def connected_components(
    edges: dd.DataFrame,
    npartitions: int,
    persist: Callable[[str, dd.DataFrame], dd.DataFrame],
    count: Callable,
) -> tuple[dd.DataFrame, int]:
    """(v, m) for every node v of an edge that is not its component's smallest node m; and the rounds.

    `persist(name, collection)` materialises a collection on the workers (with progress) and `count`
    computes a small collection's value: the engine's, so that each round shows up as a stage."""
    d_meta = empty(DIRECTED)
    rounds = 0
    while True:
        rounds += 1
        d = edges.map_partitions(_directed, meta=d_meta).shuffle(on="u", npartitions=npartitions)
        d = persist(f"components: round {rounds}", d)
        bad = int(count(d.map_partitions(violations, meta=pd.Series([], dtype="int64")).sum()))
        if bad == 0:
            return d.map_partitions(star_labels, meta=empty(LABELS)), rounds
        stars = d.map_partitions(large_star, meta=empty(EDGES)).shuffle(on="j", npartitions=npartitions)
        edges = stars.map_partitions(small_star, meta=empty(EDGES))
