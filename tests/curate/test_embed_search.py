"""Neighbour search over hand-made unit vectors (no model): the exact range search, its HNSW fallback,
and the nearest-corpus-row lookup."""

from __future__ import annotations

import numpy as np
import pytest

from flows.curate import embed


def unit(*angles_deg):
    """2-d unit vectors at the given angles: the cosine of two of them is the cosine of their angle."""
    t = np.radians(np.asarray(angles_deg, dtype=np.float64))
    return np.stack([np.cos(t), np.sin(t)], axis=1).astype(np.float32)


def arc(n, step=0.01):
    """n unit vectors 0.01 rad apart: each row's nearest neighbours are the rows next to it."""
    t = np.arange(n) * step
    return np.stack([np.cos(t), np.sin(t)], axis=1).astype(np.float32)


def as_list(pairs):
    return sorted(map(tuple, pairs.tolist()))


def test_exact_search_returns_each_pair_once_with_its_cosine():
    x = unit(0, 0, 10, 90, 180)
    pairs, sims = embed.similar_pairs(x, 0.9)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    assert pairs[order].tolist() == [[0, 1], [0, 2], [1, 2]]
    assert pairs.dtype == np.int64 and sims.dtype == np.float64
    np.testing.assert_allclose(sims[order], [1.0, np.cos(np.radians(10)), np.cos(np.radians(10))], rtol=1e-6)


def test_a_cosine_equal_to_the_threshold_is_kept():
    x = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)  # cosines 0.6, 0.0, 0.8
    assert as_list(embed.similar_pairs(x, 0.6)[0]) == [(0, 1), (1, 2)]
    assert as_list(embed.similar_pairs(x, 0.8)[0]) == [(1, 2)]
    assert as_list(embed.similar_pairs(x, 0.8000001)[0]) == []


def test_active_mask_searches_only_active_rows_and_reports_original_row_numbers():
    x = unit(0, 0, 50, 1, 90, 2)
    active = np.array([False, True, True, True, False, True])
    pairs, sims = embed.similar_pairs(x, 0.99, active=active)
    assert as_list(pairs) == [(1, 3), (1, 5), (3, 5)]
    assert len(sims) == 3 and np.all(sims >= 0.99)


@pytest.mark.parametrize(
    ("x", "active"),
    [
        (unit(), None),
        (unit(0), None),
        (unit(0, 0, 0), np.array([False, True, False])),
        (unit(0, 0), np.array([False, False])),
    ],
)
def test_fewer_than_two_rows_have_no_pairs(x, active):
    pairs, sims = embed.similar_pairs(x, 0.5, active=active)
    assert pairs.shape == (0, 2) and pairs.dtype == np.int64
    assert sims.shape == (0,) and sims.dtype == np.float64


def test_query_blocks_keep_their_row_offsets(monkeypatch):
    x = unit(0, 1, 2, 60, 61, 120, 121)
    expected = as_list(embed.similar_pairs(x, 0.99)[0])
    assert expected == [(0, 1), (0, 2), (1, 2), (3, 4), (5, 6)]
    monkeypatch.setattr(embed, "_QUERY_BLOCK", 2)
    pairs, sims = embed.similar_pairs(x, 0.99)
    assert as_list(pairs) == expected and len(sims) == len(expected)


def test_search_is_exact_up_to_the_limit_and_k_nearest_beyond(monkeypatch):
    x = arc(6)
    all_pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    monkeypatch.setattr(embed, "EXACT_LIMIT", 6)
    assert as_list(embed.similar_pairs(x, -1.0, k=3)[0]) == all_pairs  # exact: every pair, whatever k
    monkeypatch.setattr(embed, "EXACT_LIMIT", 5)
    pairs, sims = embed.similar_pairs(x, -1.0, k=3)  # HNSW: each row, itself and its 2 nearest
    assert as_list(pairs) == [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert sims.dtype == np.float64 and np.all(sims > 0.99)


def test_hnsw_search_keeps_the_threshold_and_32_neighbours_by_default(monkeypatch):
    monkeypatch.setattr(embed, "EXACT_LIMIT", 1)
    x = arc(40)
    pairs, _ = embed.similar_pairs(x, -1.0)
    assert sorted(pairs[pairs[:, 0] == 0, 1].tolist()) == list(range(1, 32))  # itself + 31 others
    close, sims = embed.similar_pairs(x, float(x[0] @ x[2]))
    assert as_list(close)[:3] == [(0, 1), (0, 2), (1, 2)]
    assert (2, 5) not in as_list(close) and np.all(sims >= x[0] @ x[2])


def test_nearest_gives_each_query_its_best_corpus_row():
    corpus = unit(0, 90, 180)
    rows, sims = embed.nearest(unit(80, 5, 170, 0).astype(np.float64), corpus)
    assert rows.tolist() == [1, 0, 2, 0] and rows.dtype == np.int64
    assert sims.dtype == np.float64
    np.testing.assert_allclose(sims, np.cos(np.radians([10, 5, 10, 0])), rtol=1e-6)
