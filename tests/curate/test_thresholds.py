"""Boundaries of the curation thresholds: a pair at exactly the similarity threshold, and a benchmark
item of exactly n words.

Semantics pinned here (they are the docstrings' "reaches"/">="): a pair whose similarity *equals* the
threshold is a duplicate, in MinHash dedup (exact Jaccard of the shingle sets), in SFT separation and in
embedding dedup (cosine); a benchmark item of exactly n words is one n-gram and is caught whole.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from flows.curate.contamination import decontaminate, ngram_matches
from flows.curate.dedup import embedding_dedup, minhash_dedup, separate_from
from flows.curate.minhash import near_duplicates
from flows.errors import InputError

WORDS = [f"word{i}" for i in range(40)]
# 9 words: 5 word 5-gram shingles; its first 8 words: 4 of them. Jaccard = 4/5 = 0.8, exactly the
# float 0.8 (IEEE division is correctly rounded), so ">=" and ">" give different answers.
LONG = " ".join(WORDS[:9])
SHORT = " ".join(WORDS[:8])
OTHER = " ".join(WORDS[20:35])


def frame(prompts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"id": [f"r{i}" for i in range(len(prompts))], "prompt": prompts})


@pytest.mark.parametrize("mode", ["fast", "compat"])
def test_jaccard_exactly_at_threshold_is_a_near_duplicate(mode):
    texts = pl.Series([LONG, OTHER, SHORT])
    at = near_duplicates(texts, threshold=0.8, mode=mode)
    assert at.pairs.tolist() == [[0, 2]] and at.similarity.tolist() == [0.8]
    # Just above 0.8 the same LSH candidate is checked and rejected: the boundary is the verification's.
    above = near_duplicates(texts, threshold=math.nextafter(0.8, 1.0), mode=mode)
    assert [0, 2] in above.candidates.tolist() and above.pairs.tolist() == []

    res = minhash_dedup(frame([LONG, OTHER, SHORT]), threshold=0.8, mode=mode)
    assert res.removed["id"].to_list() == ["r2"]
    assert res.removed["reason"][0] == "near-duplicate of r0 (jaccard 0.8)"
    assert minhash_dedup(frame([LONG, OTHER, SHORT]), threshold=0.81, mode=mode).removed.height == 0


def test_separation_at_exactly_the_threshold_drops_the_rl_item():
    sft = pl.DataFrame({"id": ["s0"], "prompt": [LONG]})
    rl = frame([OTHER, SHORT])
    res = separate_from(rl, sft, method="minhash", threshold=0.8)
    assert res.removed["id"].to_list() == ["r1"]
    assert res.removed["reason"][0] == "duplicate of sft item s0 (minhash 0.8)"
    assert separate_from(rl, sft, method="minhash", threshold=0.81).removed.height == 0


def test_cosine_exactly_at_threshold_is_a_semantic_duplicate():
    # Unit vectors whose inner product is exactly 0.5 in float32. faiss's range search is strict (ip > r)
    # and casts r to float32, so a float64 step below the threshold used to drop this pair.
    v = np.zeros((3, 4), dtype=np.float32)
    v[0, 0] = 1.0
    v[1, 1] = 1.0
    v[2, 0], v[2, 2] = 0.5, math.sqrt(0.75)
    assert float(v[0] @ v[2]) == 0.5
    df = frame(["a", "b", "c"])
    res = embedding_dedup(df, threshold=0.5, embeddings=v)
    assert res.removed["id"].to_list() == ["r2"]
    assert res.removed["reason"][0] == "semantic duplicate of r0 (cosine 0.5)"
    # Cosines are float32: the next threshold up that they can tell apart is one float32 step.
    above = float(np.nextafter(np.float32(0.5), np.float32(1)))
    assert embedding_dedup(df, threshold=above, embeddings=v).removed.height == 0


N = 13
BENCH_13 = " ".join(WORDS[:N])  # exactly n words: one n-gram, no shorter-item special case


def test_benchmark_item_of_exactly_n_words_is_caught_whole():
    bench = pl.DataFrame({"id": ["b13"], "prompt": [BENCH_13]})
    df = frame(
        [
            "Question: " + BENCH_13 + " - answer it",  # contains the whole item
            BENCH_13,  # is the item: a row of exactly n words has exactly one n-gram
            " ".join(WORDS[: N - 1]) + " extra " + WORDS[N - 1],  # all n words, but not consecutive
            " ".join(WORDS[1 : N + 5]),  # n-1 of its words (and more): no n-gram in common
        ]
    )
    res = decontaminate(df, {"bench": bench}, ngram=N)
    assert res.removed["id"].to_list() == ["r0", "r1"]
    assert res.matches["score"].to_list() == [1.0, 1.0]
    assert res.matches["method"].to_list() == [f"{N}-gram"] * 2


@pytest.mark.parametrize("length", [N - 1, N, N + 1])
def test_item_lengths_around_n_score_their_share_of_ngrams(length):
    """Lengths n-1 (whole-item match), n (one n-gram) and n+1 (two n-grams): a row holding only the
    first n words scores 1, 1 and 1/2; a row holding only the first n-1 words matches only the short item."""
    item = " ".join(WORDS[:length])
    rows = pl.Series([" ".join(WORDS[:N]), " ".join(WORDS[: N - 1]), "unrelated " * 20])
    row, brow, score = ngram_matches(rows, pl.Series([item]), n=N)
    if length == N - 1:
        assert row.tolist() == [0, 1] and score.tolist() == [1.0, 1.0]
    elif length == N:
        assert row.tolist() == [0] and score.tolist() == [1.0]
    else:
        assert row.tolist() == [0] and score.tolist() == [0.5]
    assert brow.tolist() == [0] * len(row)


def test_embedding_dedup_defaults_empty_texts_and_its_step_record():
    """Default threshold 0.95; blank texts (equal vectors: the empty string's embedding) are never
    semantic duplicates, as `clean` rejects them with their own reason; the step names itself."""
    v = np.zeros((5, 4), dtype=np.float32)
    v[0, 0] = 1.0
    v[1, 0], v[1, 1] = 0.96, math.sqrt(1 - 0.96**2)  # cosine 0.96 with row 0: a duplicate at 0.95
    v[2, 2] = v[3, 2] = v[4, 2] = 1.0  # three blank texts with one vector
    df = frame(["a", "a'", "", "   ", None])
    res = embedding_dedup(df, embeddings=v)
    assert res.removed["id"].to_list() == ["r1"]
    assert res.count.step == "embedding-dedup"
    assert res.count.reason == "semantic duplicates: embedding cosine >= 0.95"
    with pytest.raises(InputError, match=r"^embedding_dedup input: missing column\(s\) prompt"):
        embedding_dedup(pl.DataFrame({"id": ["a"]}), embeddings=v[:1])


def test_a_broken_benchmark_file_is_an_error_not_a_smaller_benchmark(tmp_path):
    """Skipping a benchmark's broken line would silently stop checking against that item."""
    bench = tmp_path / "bench.jsonl"
    bench.write_text('{"id": "b1", "prompt": "the cat sat on the mat today"}\n{"id": "b2", "prompt": \n')
    df = frame(["a cat sat on the mat"])
    with pytest.raises(InputError, match="bench.jsonl: line 2"):
        decontaminate(df, [bench], ngram=4)
