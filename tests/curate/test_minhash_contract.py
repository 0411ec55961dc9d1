"""The MinHash LSH module's contract, stage by stage: shingles, signatures, banding, candidates,
exact verification and clustering, each checked on inputs whose answer is known by hand or by
datasketch (the reference the module claims to follow)."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from datasketch import MinHash, MinHashLSH
from datasketch.hashfunc import sha1_hash32
from datasketch.lsh import _optimal_param

from flows.curate.minhash import (
    EMPTY,
    RECALL_WEIGHTS,
    Shingles,
    Sketch,
    candidate_pairs,
    cluster_representatives,
    fmix32,
    hash_shingles,
    jaccard,
    lsh_params,
    near_duplicates,
    permutations,
    signatures,
    signatures_t,
)
from tests.curate.helpers import graded_corpus

BLOCK = 1 << 17  # the module's block of shingles per signature pass; the corpora below straddle it


def pairs_of(arr: np.ndarray) -> list[tuple[int, int]]:
    return [tuple(p) for p in arr.tolist()]


def reference_sig_t(sh: Shingles, num_perm: int, seed: int) -> np.ndarray:
    """Per document, the minimum over its shingles of ``a_k * h + b_k mod 2^32`` (EMPTY if none)."""
    a, b = permutations(num_perm, seed)
    out = np.full((num_perm, sh.n_docs), EMPTY, dtype=np.uint32)
    for d in range(sh.n_docs):
        h = sh.hashes[sh.offsets[d] : sh.offsets[d + 1]]
        if len(h):
            out[:, d] = (h[None, :] * a[:, None] + b[:, None]).min(axis=1)
    return out


def datasketch_minhash(shingles: list[str], num_perm: int, seed: int) -> MinHash:
    m = MinHash(num_perm=num_perm, seed=seed)
    m.update_batch([s.encode("utf-8") for s in shingles])
    return m


# --- shingles ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fast", "compat"])
def test_shingle_counts_and_offsets_per_document(mode):
    texts = pl.Series(["", "a b", "a b c d e", "a, b c d e f g!", None, "   ", "?!", "one"])
    sh = hash_shingles(texts, 5, mode=mode)
    assert sh.n_docs == 8
    np.testing.assert_array_equal(sh.counts, [0, 1, 1, 3, 0, 0, 0, 1])
    np.testing.assert_array_equal(sh.offsets, [0, 0, 1, 2, 5, 5, 5, 5, 6])
    assert sh.hashes.dtype == np.uint32 and len(sh.hashes) == 6


@pytest.mark.parametrize("mode", ["fast", "compat"])
def test_a_text_shorter_than_the_shingle_size_is_one_shingle_of_all_its_words(mode):
    short = hash_shingles(pl.Series(["Lorem ipsum dolor"]), 5, mode=mode)
    exact = hash_shingles(pl.Series(["lorem ipsum dolor"]), 3, mode=mode)  # the same three words as a 3-gram
    np.testing.assert_array_equal(short.hashes, exact.hashes)
    other = hash_shingles(pl.Series(["lorem ipsum"]), 5, mode=mode)
    assert other.hashes[0] != short.hashes[0]


@pytest.mark.parametrize("mode", ["fast", "compat"])
def test_equal_shingles_hash_equally_across_documents_and_distinct_ones_differ(mode):
    sh = hash_shingles(pl.Series(["x a b c d e", "a b c d e y", "a b c d e"]), 5, mode=mode)
    doc0, doc1, doc2 = (sh.hashes[sh.offsets[i] : sh.offsets[i + 1]] for i in range(3))
    assert doc0[1] == doc1[0] == doc2[0]  # the shared shingle "a b c d e"
    assert len({doc0[0], doc0[1], doc1[1]}) == 3


def test_compat_shingle_hashes_are_fmix32_of_datasketch_sha1_of_the_utf8_shingle():
    texts = pl.Series(["Ωmega naïve 日本語 x1 y_2 zeta", "solo"])
    sh = hash_shingles(texts, 5, mode="compat")
    expected = [
        sha1_hash32("ωmega naïve 日本語 x1 y_2".encode()),
        sha1_hash32("naïve 日本語 x1 y_2 zeta".encode()),
        sha1_hash32(b"solo"),
    ]
    np.testing.assert_array_equal(sh.offsets, [0, 2, 3])
    np.testing.assert_array_equal(sh.hashes, fmix32(np.array(expected, dtype=np.uint32)))


def test_fast_shingle_hashes_rarely_collide():
    """50,000 distinct one-word shingles: a sound 32-bit hash gives about 0.3 collisions."""
    words = [f"w{i}" for i in range(50_000)]
    h = hash_shingles(pl.Series([" ".join(words)]), 1).hashes
    assert len(h) == 50_000
    assert len(h) - len(np.unique(h)) <= 3


@pytest.mark.parametrize("fn", [hash_shingles, signatures, near_duplicates])
@pytest.mark.parametrize("mode", ["FAST", "minhash"])
def test_unknown_mode_is_rejected_word_for_word(fn, mode):
    msg = f"unknown MinHash mode {mode!r} (use fast or compat)"
    with pytest.raises(ValueError, match=f"^{re.escape(msg)}$"):
        fn(pl.Series(["a b c"]), mode=mode)


# --- signatures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 7, 123456])
@pytest.mark.parametrize("num_perm", [1, 5, 128])
def test_permutations_are_datasketchs_for_the_same_seed(seed, num_perm):
    a, b = permutations(num_perm, seed)
    theirs = MinHash(num_perm=num_perm, seed=seed).permutations
    np.testing.assert_array_equal(a, theirs[0])
    np.testing.assert_array_equal(b, theirs[1])
    assert a.dtype == b.dtype == np.uint32 and (a % 2 == 1).all()


def test_compat_signatures_equal_datasketch_for_another_seed_and_num_perm():
    texts = ["the quick brown fox jumps over the lazy dog", "", "hello world", "a b c d e f"]
    from flows.curate.text import shingle_strings, word_lists

    words = word_lists(pl.Series(texts))
    ours = signatures(pl.Series(texts), num_perm=24, shingle_size=3, mode="compat", seed=42)
    theirs = np.stack([datasketch_minhash(shingle_strings(w, 3), 24, 42).digest() for w in words])
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours[1], np.full(24, EMPTY))  # an empty text: datasketch's empty MinHash


def test_seed_and_num_perm_change_signatures():
    texts = pl.Series(["the quick brown fox jumps over the lazy dog", "hello world"])
    base = signatures(texts, num_perm=64, seed=1)
    assert base.shape == (2, 64)
    assert (signatures(texts, num_perm=64, seed=2) != base).mean() > 0.9
    assert signatures(texts, num_perm=32, seed=1).shape == (2, 32)


def test_default_signature_arguments():
    texts = pl.Series(["the quick brown fox jumps over the lazy dog again", "hello world"])
    explicit = signatures(texts, num_perm=128, shingle_size=5, mode="fast", seed=1)
    np.testing.assert_array_equal(signatures(texts), explicit)
    sk = Sketch.of(texts)
    np.testing.assert_array_equal(sk.sig_t, explicit.T)
    np.testing.assert_array_equal(sk.shingles.hashes, hash_shingles(texts, 5, "fast").hashes)


def test_sketch_of_is_the_shingles_and_signatures_of_the_texts():
    texts = pl.Series(["the quick brown fox jumps over", "", "hello world", "the quick brown fox"])
    sk = Sketch.of(texts, num_perm=16, shingle_size=3, mode="compat", seed=9)
    sh = hash_shingles(texts, 3, mode="compat")
    np.testing.assert_array_equal(sk.shingles.offsets, sh.offsets)
    np.testing.assert_array_equal(sk.shingles.hashes, sh.hashes)
    np.testing.assert_array_equal(sk.sig_t, signatures(texts, 16, 3, "compat", 9).T)
    assert sk.sig_t.shape == (16, 4)


def test_signatures_of_a_corpus_larger_than_several_blocks_equal_the_per_document_minimum():
    """Documents before, across and after block boundaries, one longer than two blocks, empty ones
    between them, one-shingle ones, and a last document that spans a boundary."""
    rng = np.random.default_rng(0)

    def doc(n_words: int) -> str:
        return " ".join(f"t{x}" for x in rng.integers(0, 1 << 30, n_words))

    texts = [doc(3), "", doc(40_000), "solo", doc(2 * BLOCK + 5_000), "", doc(60_000), "hi there"]
    texts += [doc(500) for _ in range(30)] + ["", doc(BLOCK + 10)]
    sh = hash_shingles(pl.Series(texts), 1)
    assert sh.offsets[-1] > 3 * BLOCK
    np.testing.assert_array_equal(signatures_t(sh, 4, 3), reference_sig_t(sh, 4, 3))


@pytest.mark.parametrize("texts", [["one two three four five six"], ["", "one two three"], ["x", "", ""]])
def test_signatures_of_tiny_corpora_equal_the_per_document_minimum(texts):
    sh = hash_shingles(pl.Series(texts), 5)
    np.testing.assert_array_equal(signatures_t(sh, 8, 1), reference_sig_t(sh, 8, 1))


def test_a_corpus_of_only_empty_texts_has_only_empty_signatures():
    sig = signatures(pl.Series(["", "  ", "..."]), num_perm=8)
    np.testing.assert_array_equal(sig, np.full((3, 8), EMPTY))


# --- banding -------------------------------------------------------------------------------------


LSH_CASES = [
    (num_perm, threshold, weights)
    for num_perm in (2, 7, 32)
    for threshold in (0.1, 0.3, 0.95)
    for weights in ((0.5, 0.5), RECALL_WEIGHTS)
]
# Recall-weighted optima on a flat error curve, where a coarser integration picks a neighbouring b.
LSH_CASES += [(64, 0.1, RECALL_WEIGHTS), (128, 0.05, RECALL_WEIGHTS)]


@pytest.mark.parametrize(("num_perm", "threshold", "weights"), LSH_CASES)
def test_lsh_params_match_datasketch_for_any_weights_and_extreme_thresholds(num_perm, threshold, weights):
    assert lsh_params(threshold, num_perm, weights) == _optimal_param(threshold, num_perm, *weights)


def test_recall_weighting_uses_more_bands_than_balanced():
    balanced, recall = lsh_params(0.8, 128), lsh_params(0.8, 128, RECALL_WEIGHTS)
    assert recall[0] > balanced[0]
    assert recall[0] * recall[1] <= 128 and balanced[0] * balanced[1] <= 128


# --- candidate pairs -----------------------------------------------------------------------------


def distinct_sig_t(num_perm: int, n_docs: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(1 << 32, size=num_perm * n_docs, replace=False).astype(np.uint32).reshape(num_perm, -1)


def test_a_pair_is_a_candidate_iff_it_agrees_on_every_row_of_some_band():
    sig = distinct_sig_t(7, 6)  # 3 bands of 2 rows; row 6 is beyond the bands
    sig[2:4, 1] = sig[2:4, 0]  # docs 0 and 1 agree on all of band 1
    sig[[0, 2, 4], 3] = sig[[0, 2, 4], 2]  # docs 2 and 3 agree on one row of every band
    sig[6, 4] = sig[6, 2]  # docs 2 and 4 agree only beyond the last band
    sig[2:4, 5] = sig[0:2, 2]  # doc 5's band 1 equals doc 2's band 0: different bands never match
    assert pairs_of(candidate_pairs(sig, 3, 2)) == [(0, 1)]


def test_candidates_are_sorted_unique_pairs_i_less_than_j():
    sig = distinct_sig_t(8, 7)
    for d in (1, 4, 6):  # identical in every band: found in each band, reported once
        sig[:, d] = sig[:, 6]
    sig[4:6, 3] = sig[4:6, 0]
    cand = candidate_pairs(sig, 4, 2)
    assert cand.dtype == np.int64 and cand.shape == (4, 2)
    assert pairs_of(cand) == [(0, 3), (1, 4), (1, 6), (4, 6)]


def test_inactive_documents_are_never_candidates():
    sig = distinct_sig_t(4, 5)
    sig[:, [1, 2, 4]] = sig[:, [0]]
    active = np.array([True, False, True, True, True])
    assert pairs_of(candidate_pairs(sig, 2, 2, active=active)) == [(0, 2), (0, 4), (2, 4)]


def test_no_bands_means_no_candidates():
    cand = candidate_pairs(distinct_sig_t(4, 3), 0, 4)
    assert cand.shape == (0, 2) and cand.dtype == np.int64


def test_buckets_up_to_64_documents_give_all_pairs_and_larger_ones_a_star_on_the_lowest_index():
    sig = distinct_sig_t(4, 300, seed=1)
    all_pairs = list(range(2, 2 + 2 * 64, 2))  # 64 documents with one signature
    star = list(range(131, 131 + 65 * 2, 2))  # 65 documents with another
    sig[:, all_pairs] = sig[:, [all_pairs[0]]]
    sig[:, star] = sig[:, [star[-1]]]
    got = set(pairs_of(candidate_pairs(sig, 2, 2)))
    expected = {(a, b) for i, a in enumerate(all_pairs) for b in all_pairs[i + 1 :]}
    expected |= {(star[0], b) for b in star[1:]}
    assert len(expected) == 64 * 63 // 2 + 64
    assert got == expected


def test_band_keys_carry_the_whole_first_row_into_the_second():
    """Rows crafted so that a key cut to its top 35 bits between rows would send both documents to one
    bucket: with the full 64-bit state they differ, as their first rows do."""
    sig = np.array([[1, 9], [5, 2384589285]], dtype=np.uint32)
    assert candidate_pairs(sig, 1, 2).shape == (0, 2)


def test_one_row_bands_never_join_distinct_values():
    sig = distinct_sig_t(1, 60_000, seed=2)
    assert candidate_pairs(sig, 1, 1).shape == (0, 2)
    sig2 = distinct_sig_t(2, 30_000, seed=3)
    assert candidate_pairs(sig2, 2, 1).shape == (0, 2)


# --- exact Jaccard -------------------------------------------------------------------------------


def test_jaccard_values_by_hand():
    texts = pl.Series(["a b c", "b c d", "a a a b", "a b", "", "", "solo", "solo", "x y z w", "last"])
    sh = hash_shingles(texts, 1, mode="compat")  # one-word shingles: the sets are the word sets
    pairs = np.array([(0, 1), (1, 0), (2, 3), (0, 3), (3, 0), (4, 5), (4, 0), (0, 4), (6, 7), (0, 8), (5, 4)])
    expected = [0.5, 0.5, 1.0, 2 / 3, 2 / 3, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    np.testing.assert_allclose(jaccard(sh, pairs), expected, rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("error")
def test_jaccard_with_empty_sets_is_zero_without_warnings():
    sh = hash_shingles(pl.Series(["", "a b", "", "c d e", "a b c"] * 40), 1)
    pairs = np.array([(0, 2) if k % 2 else (1, 4) for k in range(300)])
    sim = jaccard(sh, pairs)
    np.testing.assert_array_equal(sim[1::2], np.zeros(150))
    np.testing.assert_allclose(sim[::2], np.full(150, 2 / 3), rtol=0, atol=1e-12)


def test_jaccard_of_no_pairs_is_empty():
    sim = jaccard(hash_shingles(pl.Series(["a b c"]), 1), np.empty((0, 2), dtype=np.int64))
    assert sim.shape == (0,) and sim.dtype == np.float64


# --- near_duplicates -----------------------------------------------------------------------------


def test_near_duplicates_defaults():
    texts = pl.Series(graded_corpus())
    got = near_duplicates(texts)
    want = near_duplicates(
        texts, threshold=0.8, num_perm=128, shingle_size=5, mode="fast", seed=1, verify=True, params=None
    )
    np.testing.assert_array_equal(got.shingles.hashes, want.shingles.hashes)
    np.testing.assert_array_equal(got.candidates, want.candidates)
    np.testing.assert_array_equal(got.pairs, want.pairs)
    np.testing.assert_array_equal(got.similarity, want.similarity)
    assert len(got.pairs) > 0 and len(got.candidates) > len(got.pairs)


def test_unverified_near_duplicates_are_datasketchs_lsh_query_results():
    from flows.curate.text import shingle_strings, word_lists

    docs = graded_corpus(seed=5)
    texts = pl.Series(docs)
    nd = near_duplicates(texts, threshold=0.7, mode="compat", verify=False)
    lsh = MinHashLSH(threshold=0.7, num_perm=128)
    minhashes = [datasketch_minhash(shingle_strings(w, 5), 128, 1) for w in word_lists(texts)]
    for i, m in enumerate(minhashes):
        lsh.insert(i, m)
    theirs = {(min(i, j), max(i, j)) for i, m in enumerate(minhashes) for j in lsh.query(m) if j != i}
    assert set(pairs_of(nd.pairs)) == theirs
    np.testing.assert_array_equal(nd.pairs, nd.candidates)
    np.testing.assert_allclose(nd.similarity, jaccard(nd.shingles, nd.candidates))
    assert (nd.similarity < 0.7).any()  # unverified: LSH false positives are reported too


def test_verified_near_duplicates_band_for_recall_and_keep_pairs_reaching_the_threshold():
    texts = pl.Series(graded_corpus(seed=3))
    sk = Sketch.of(texts, num_perm=64, shingle_size=4, mode="compat", seed=3)
    nd = near_duplicates(sk, threshold=0.6)
    bands, rows = lsh_params(0.6, 64, RECALL_WEIGHTS)
    expected = candidate_pairs(sk.sig_t, bands, rows, active=sk.shingles.counts > 0)
    np.testing.assert_array_equal(nd.candidates, expected)
    sim = jaccard(sk.shingles, expected)
    np.testing.assert_array_equal(nd.pairs, expected[sim >= 0.6])
    np.testing.assert_array_equal(nd.similarity, sim[sim >= 0.6])
    assert 0 < len(nd.pairs) < len(nd.candidates)


def test_a_sketch_gives_the_same_result_as_its_texts():
    texts = pl.Series(graded_corpus(seed=4))
    sk = Sketch.of(texts, num_perm=64, shingle_size=3, mode="compat", seed=5)
    from_sketch = near_duplicates(sk, threshold=0.5)
    from_texts = near_duplicates(texts, threshold=0.5, num_perm=64, shingle_size=3, mode="compat", seed=5)
    np.testing.assert_array_equal(from_sketch.candidates, from_texts.candidates)
    np.testing.assert_array_equal(from_sketch.pairs, from_texts.pairs)
    np.testing.assert_array_equal(from_texts.shingles.hashes, sk.shingles.hashes)
    np.testing.assert_array_equal(from_texts.shingles.offsets, sk.shingles.offsets)


def test_explicit_band_params_override_the_threshold_choice():
    texts = pl.Series(graded_corpus(seed=6))
    one_band = near_duplicates(texts, threshold=0.3, verify=False, params=(1, 128))
    assert one_band.candidates.shape == (0, 2)  # only identical signatures share the single band
    many = near_duplicates(texts, threshold=0.3, verify=False, params=(128, 1))
    assert len(many.candidates) > 100


def test_empty_texts_are_never_candidates_but_identical_short_texts_are_duplicates():
    nd = near_duplicates(pl.Series(["", "hello world", "", "Hello, world!", "   ", "x"]), threshold=0.9)
    assert pairs_of(nd.candidates) == [(1, 3)]
    assert pairs_of(nd.pairs) == [(1, 3)]
    np.testing.assert_array_equal(nd.similarity, [1.0])


# --- clustering ----------------------------------------------------------------------------------


def test_clusters_are_connected_components_represented_by_their_lowest_index():
    pairs = np.array([(3, 5), (0, 3), (4, 2), (6, 4), (8, 7)])
    rep = cluster_representatives(10, pairs)
    np.testing.assert_array_equal(rep, [0, 1, 2, 0, 2, 0, 2, 7, 7, 9])
    assert rep.dtype == np.int64


def test_without_pairs_every_document_represents_itself():
    rep = cluster_representatives(4, np.empty((0, 2), dtype=np.int64))
    np.testing.assert_array_equal(rep, [0, 1, 2, 3])
    assert rep.dtype == np.int64
