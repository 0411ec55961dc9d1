"""Gaps found by a mutmut run over flows/curate: behaviour no other test pinned down. LaTeX escapes,
minhash_dedup's own contract (defaults, names, `verify`, `seed`, `sketch`) and the MinHash stages'
defaults."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from datasketch import MinHash, MinHashLSH

from flows.curate import minhash as minhash_module
from flows.curate.clean import latex_problem
from flows.curate.dedup import minhash_dedup
from flows.curate.minhash import (
    Sketch,
    cluster_representatives,
    hash_shingles,
    permutations,
    signatures_t,
)
from flows.curate.text import shingle_strings, word_lists
from flows.errors import InputError
from tests.curate.helpers import graded_corpus

WORDS = [f"word{i}" for i in range(40)]
LONG = " ".join(WORDS[:9])  # 5 word 5-grams
SHORT = " ".join(WORDS[:8])  # 4 of them: Jaccard with LONG is exactly 0.8
OTHER = " ".join(WORDS[20:35])


def frame(prompts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"id": [f"r{i}" for i in range(len(prompts))], "prompt": prompts})


# --- clean: LaTeX escapes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The empty set is $\\{\\}$.",  # was read as "$$": an unbalanced display delimiter
        "Is $\\{$ an opening brace?",
        "Is $\\}$ a closing brace?",
    ],
)
def test_escaped_braces_alone_in_inline_math_do_not_make_a_double_dollar(text):
    assert latex_problem(text) is None


@pytest.mark.parametrize("text", ["Pay \\$$5 more.", "The set \\{$5\\} has one price."])
def test_an_escape_reads_as_a_space_so_money_beside_it_is_still_money(text):
    # "$5" is money only after a space or the start and before a space or punctuation
    assert latex_problem(text) is None


# --- minhash_dedup's contract -------------------------------------------------------------------------


def test_minhash_dedup_names_itself_when_a_column_is_missing():
    with pytest.raises(
        InputError, match=r"^minhash_dedup input: missing column\(s\) prompt \(has: id, text\)$"
    ):
        minhash_dedup(pl.DataFrame({"id": ["a"], "text": ["x"]}))


def test_minhash_dedup_defaults_step_name_and_summary():
    # Defaults: Jaccard >= 0.8 on word 5-grams, 128 permutations; SHORT sits exactly at 0.8 with LONG.
    res = minhash_dedup(frame([LONG, OTHER, SHORT]))
    assert res.removed.select("id", "reason").rows() == [("r2", "near-duplicate of r0 (jaccard 0.8)")]
    assert res.count.step == "minhash-dedup"
    assert res.count.reason == "near-duplicates: word 5-gram Jaccard >= 0.8 (MinHash LSH, 128 permutations)"


def test_unverified_minhash_dedup_removes_what_datasketchs_lsh_joins():
    """verify=False counts every LSH candidate, as datasketch does; the default seed is datasketch's (1),
    so the borderline candidates are the same ones."""
    docs = graded_corpus(seed=5, originals=4)
    res = minhash_dedup(frame(docs), threshold=0.7, mode="compat", verify=False)
    lsh = MinHashLSH(threshold=0.7, num_perm=128)
    minhashes = []
    for i, words in enumerate(word_lists(pl.Series(docs))):
        m = MinHash(num_perm=128)  # datasketch's default seed
        m.update_batch([s.encode("utf-8") for s in shingle_strings(words, 5)])
        lsh.insert(i, m)
        minhashes.append(m)
    pairs = np.array(
        sorted({(min(i, j), max(i, j)) for i, m in enumerate(minhashes) for j in lsh.query(m) if j != i})
    )
    rep = cluster_representatives(len(docs), pairs)
    assert res.clusters["cluster"].to_list() == [f"r{r}" for r in rep]
    # unverified: some removed rows are below the threshold with their kept row
    assert (res.clusters.filter(~pl.col("kept"))["similarity"] < 0.7).any()


def test_minhash_dedup_uses_a_given_sketch_without_hashing_the_rows(monkeypatch):
    df = frame([LONG, OTHER, SHORT])
    sketch = Sketch.of(df["prompt"])

    def no_hashing(*args, **kwargs):
        raise AssertionError("the rows were hashed although a sketch was given")

    monkeypatch.setattr(minhash_module, "hash_shingles", no_hashing)
    res = minhash_dedup(df, sketch=sketch)
    assert res.removed["id"].to_list() == ["r2"]


# --- MinHash stages' defaults -------------------------------------------------------------------------


def test_hash_shingles_defaults_to_fast_word_5_grams():
    texts = pl.Series(["a b c d e f", "one two three"])
    sh = hash_shingles(texts)
    np.testing.assert_array_equal(sh.counts, [2, 1])  # a 6-word text has two 5-grams
    np.testing.assert_array_equal(sh.hashes, hash_shingles(texts, 5, "fast").hashes)


def test_permutations_and_signatures_default_to_datasketchs_minhash():
    # datasketch's MinHash() defaults: 128 permutations, seed 1
    a, b = permutations(128)
    theirs = MinHash()
    np.testing.assert_array_equal(a, theirs.permutations[0])
    np.testing.assert_array_equal(b, theirs.permutations[1])
    texts = ["the quick brown fox jumps over the lazy dog", "hello world"]
    sig_t = signatures_t(hash_shingles(pl.Series(texts), 5, "compat"))
    want = []
    for words in word_lists(pl.Series(texts)):
        m = MinHash()
        m.update_batch([s.encode("utf-8") for s in shingle_strings(words, 5)])
        want.append(m.digest())
    np.testing.assert_array_equal(sig_t.T, np.stack(want))
