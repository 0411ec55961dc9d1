"""The vectorised MinHash LSH against datasketch (bit-compatible mode) and against exact Jaccard."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest
from datasketch import MinHash, MinHashLSH
from datasketch.lsh import _optimal_param

from flows.curate.minhash import (
    candidate_pairs,
    hash_shingles,
    jaccard,
    lsh_params,
    near_duplicates,
    signatures,
    signatures_t,
)
from flows.curate.text import shingle_strings, word_lists

WORDS = ["alpha", "beta", "gamma", "delta", "Ωmega", "naïve", "日本語", "x1", "y_2", "zeta", "eta", "theta"]


def random_docs(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    docs = ["", "   ", "one", "two words", "a b c d", "!!! ??? ...", "Ünïcödé ✓ text — with dashes, commas."]
    while len(docs) < n:
        docs.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60))))
    docs.append(" ".join(rng.choice(WORDS) for _ in range(5000)))  # a very long document
    return docs


def datasketch_minhash(text: str, num_perm: int = 128) -> MinHash:
    m = MinHash(num_perm=num_perm)
    m.update_batch([s.encode("utf-8") for s in shingle_strings(word_lists(pl.Series([text]))[0], 5)])
    return m


@pytest.mark.parametrize("num_perm", [16, 128])
def test_compat_mode_equals_datasketch_bit_for_bit(num_perm):
    docs = random_docs(300)
    ours = signatures(pl.Series(docs), num_perm=num_perm, mode="compat")
    theirs = np.stack([datasketch_minhash(d, num_perm).digest() for d in docs])
    assert ours.dtype == theirs.dtype == np.uint32
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9])
@pytest.mark.parametrize("num_perm", [64, 128])
def test_lsh_params_match_datasketch(threshold, num_perm):
    assert lsh_params(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5)


def test_lsh_candidates_equal_datasketch_index():
    """Same signatures and bands: our bucket collisions are exactly datasketch's query results."""
    base = random_docs(120, seed=3)
    docs = base + [" ".join(d.split()[:-1]) for d in base[10:60]]  # planted near-copies
    texts = pl.Series(docs)
    b, r = lsh_params(0.7, 128)
    ours = candidate_pairs(
        signatures_t(hash_shingles(texts, mode="compat"), 128), b, r, active=hash_shingles(texts).counts > 0
    )
    lsh = MinHashLSH(threshold=0.7, num_perm=128)
    sketches = [datasketch_minhash(d) for d in docs]
    for i, m in enumerate(sketches):
        if not m.is_empty():
            lsh.insert(i, m)
    theirs = {
        (min(i, j), max(i, j))
        for i, m in enumerate(sketches)
        if not m.is_empty()
        for j in lsh.query(m)
        if j != i
    }
    assert {tuple(p) for p in ours.tolist()} == theirs
    assert len(theirs) >= 40


def test_exact_jaccard_matches_python_sets():
    docs = random_docs(80, seed=5)
    texts = pl.Series(docs)
    sh = hash_shingles(texts, 5, mode="compat")
    pairs = np.array([(i, j) for i in range(0, 80, 3) for j in range(i + 1, 80, 7)])
    words = word_lists(texts)
    expected = []
    for i, j in pairs:
        a, b = set(shingle_strings(words[i], 5)), set(shingle_strings(words[j], 5))
        expected.append(len(a & b) / len(a | b) if a | b else 0.0)
    np.testing.assert_allclose(jaccard(sh, pairs), expected)


@pytest.mark.parametrize("mode", ["fast", "compat"])
def test_near_duplicates_found_exactly(mode):
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(5000)]
    originals = [" ".join(rng.choice(vocab) for _ in range(80)) for _ in range(200)]
    copies = []
    for d in originals[:40]:
        w = d.split()
        w[rng.randrange(80)] = "changed"  # one substitution: Jaccard about 0.88
        copies.append(" ".join(w))
    nd = near_duplicates(pl.Series(originals + copies), threshold=0.8, mode=mode)
    assert {tuple(p) for p in nd.pairs.tolist()} == {(i, 200 + i) for i in range(40)}
    assert (nd.similarity >= 0.8).all()


def test_fast_mode_is_deterministic_and_handles_empty_corpus():
    texts = pl.Series(random_docs(50))
    np.testing.assert_array_equal(signatures(texts), signatures(texts))
    assert signatures(pl.Series([], dtype=pl.String)).shape == (0, 128)
    assert near_duplicates(pl.Series(["", ""])).pairs.shape == (0, 2)
