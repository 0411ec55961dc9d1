"""Embedding dedup and embedding contamination with the bundled all-MiniLM-L6-v2 (loaded once)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from flows.curate.contamination import decontaminate
from flows.curate.dedup import embedding_dedup

pytestmark = pytest.mark.slow

ITEMS = [
    "A train travels 120 kilometres in 2 hours. What is its average speed?",
    "Find the area of a circle whose radius is 3 centimetres.",
    "How many ways can 5 books be arranged on a shelf?",
    "What is the greatest common divisor of 48 and 180?",
    "Résolvez l'équation 2x + 3 = 11 pour x.",
    "",
]
PARAPHRASES = [
    "A train covers 120 km in 2 hours. What is the train's average speed?",
    "How many different ways are there to arrange 5 books on a shelf?",
]


@pytest.fixture(scope="module")
def vectors():
    from flows.curate.embed import embed

    return embed(pl.Series(ITEMS + PARAPHRASES))


def test_embeddings_are_unit_vectors(vectors):
    assert vectors.shape == (8, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_embedding_dedup_removes_the_paraphrases_only(vectors):
    df = pl.DataFrame({"id": [f"e{i}" for i in range(8)], "prompt": ITEMS + PARAPHRASES})
    res = embedding_dedup(df, threshold=0.85, embeddings=vectors)
    assert res.removed["id"].to_list() == ["e6", "e7"]
    assert res.removed["reason"][0].startswith("semantic duplicate of e0 (cosine 0.9")
    assert res.clusters.filter(pl.col("id") == "e7")["cluster"][0] == "e2"


def test_embedding_contamination_names_the_benchmark_item(vectors):
    df = pl.DataFrame({"id": ["p0", "p1", "q"], "prompt": [*PARAPHRASES, ITEMS[3]]})
    bench = {"bench": pl.DataFrame({"id": ["b0", "b1"], "prompt": [ITEMS[0], ITEMS[2]]})}
    res = decontaminate(df, bench, ngram=13, embedding_threshold=0.85)
    assert res.matches.select("id", "benchmark_id", "method").rows() == [
        ("p0", "b0", "embedding"),
        ("p1", "b1", "embedding"),
    ]
    assert res.kept["id"].to_list() == ["q"]
