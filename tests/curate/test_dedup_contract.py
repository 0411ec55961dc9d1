"""The dedup steps' contract with their callers: word-for-word reasons, the cluster evidence frame, step
names and summaries, default and custom column names, which row of a cluster is kept, and SFT separation's
evidence. Embedding dedup gets precomputed unit vectors (or a stand-in embedder), never the model."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from flows.curate import embed as embed_module
from flows.curate.dedup import embedding_dedup, exact_dedup, separate_from
from flows.errors import InputError

WORDS = [f"word{i}" for i in range(40)]
LONG = " ".join(WORDS[:9])  # 5 word 5-grams
SHORT = " ".join(WORDS[:8])  # 4 of them: Jaccard with LONG is exactly 0.8
OTHER = " ".join(WORDS[20:35])

CLUSTER_SCHEMA = pl.Schema(
    {"id": pl.String, "cluster": pl.String, "kept": pl.Boolean, "similarity": pl.Float64}
)


def frame(prompts: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame({"id": [f"r{i}" for i in range(len(prompts))], "prompt": prompts})


def unit(*coords: float, dim: int = 4) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[: len(coords)] = coords
    return v / np.linalg.norm(v)


def test_exact_dedup_reports_every_row_with_its_cluster_and_the_reason_word_for_word():
    df = frame(["Hello  World", "a different text", "hello world", "HELLO WORLD\n", "a  different TEXT"])
    res = exact_dedup(df)
    assert res.clusters.schema == CLUSTER_SCHEMA
    assert res.clusters.rows() == [
        ("r0", "r0", True, 1.0),
        ("r1", "r1", True, 1.0),
        ("r2", "r0", False, 1.0),
        ("r3", "r0", False, 1.0),
        ("r4", "r1", False, 1.0),
    ]
    assert res.kept.rows() == [("r0", "Hello  World"), ("r1", "a different text")]
    assert res.removed.columns == ["id", "prompt", "reason"]
    assert res.removed.select("id", "reason").rows() == [
        ("r2", "exact duplicate of r0 (normalised 1.0)"),
        ("r3", "exact duplicate of r0 (normalised 1.0)"),
        ("r4", "exact duplicate of r1 (normalised 1.0)"),
    ]
    assert res.count.step == "exact-dedup"
    assert res.count.reason == "same text after normalisation (NFKC, case, whitespace)"
    assert (res.count.rows_in, res.count.rows_out) == (5, 2)


def test_exact_dedup_keeps_null_and_blank_texts_for_clean_to_reject():
    df = frame([None, None, "", "   ", "", "x", "x"])
    res = exact_dedup(df)
    assert res.kept["id"].to_list() == ["r0", "r1", "r2", "r3", "r4", "r5"]
    assert res.clusters["cluster"].to_list() == ["r0", "r1", "r2", "r3", "r4", "r5", "r5"]
    assert res.clusters["kept"].to_list() == [True] * 6 + [False]


def test_exact_dedup_uses_the_named_text_and_id_columns_and_keeps_other_columns():
    df = pl.DataFrame(
        {
            "key": ["k1", "k2", "k3"],
            "prompt": ["same", "same", "same"],  # not the text column here: ignored
            "text": ["one", "two", "ONE"],
            "score": [1, 2, 3],
        }
    )
    res = exact_dedup(df, text_column="text", id_column="key")
    assert res.kept.columns == ["key", "prompt", "text", "score"]
    assert res.kept["key"].to_list() == ["k1", "k2"]
    assert res.removed.row(0, named=True) == {
        "key": "k3",
        "prompt": "same",
        "text": "ONE",
        "score": 3,
        "reason": "exact duplicate of k1 (normalised 1.0)",
    }
    assert res.clusters.rows() == [("k1", "k1", True, 1.0), ("k2", "k2", True, 1.0), ("k3", "k1", False, 1.0)]


def test_exact_dedup_names_itself_and_the_missing_column():
    with pytest.raises(
        InputError, match=r"^exact_dedup input: missing column\(s\) prompt \(has: id, text\)$"
    ):
        exact_dedup(pl.DataFrame({"id": ["a"], "text": ["x"]}))
    with pytest.raises(InputError, match=r"^exact_dedup input: missing column\(s\) key \(has: id, prompt\)$"):
        exact_dedup(frame(["x"]), id_column="key")


def test_embedding_dedup_keeps_the_first_row_and_reports_cosine_with_the_kept_row():
    # r1 is close to r0; r2 is close to r1 but not to r0: one cluster, represented by r0, and r2's
    # reported cosine is the one with r0 (the row it is removed for), rounded to 3 decimals.
    v = np.stack(
        [
            unit(1.0, 0.0),
            unit(math.cos(0.3), math.sin(0.3)),
            unit(math.cos(0.6), math.sin(0.6)),
            unit(0.0, 0.0, 1.0),
        ]
    )
    df = pl.DataFrame({"uid": ["a", "b", "c", "d"], "body": ["t0", "t1", "t2", "t3"]})
    res = embedding_dedup(df, threshold=0.9, text_column="body", id_column="uid", embeddings=v)
    cos_ab, cos_ac = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert cos_ac < 0.9 <= cos_ab
    assert res.kept["uid"].to_list() == ["a", "d"]
    assert res.removed.select("uid", "reason").rows() == [
        ("b", "semantic duplicate of a (cosine 0.955)"),  # cos 0.3 = 0.95534
        ("c", "semantic duplicate of a (cosine 0.825)"),  # cos 0.6 = 0.82534
    ]
    assert res.clusters.schema == CLUSTER_SCHEMA
    assert res.clusters.select("id", "cluster", "kept").rows() == [
        ("a", "a", True),
        ("b", "a", False),
        ("c", "a", False),
        ("d", "d", True),
    ]
    np.testing.assert_allclose(res.clusters["similarity"].to_numpy(), [1.0, cos_ab, cos_ac, 1.0], rtol=1e-6)
    assert res.count.reason == "semantic duplicates: embedding cosine >= 0.9"
    assert (res.count.rows_in, res.count.rows_out) == (4, 2)


def test_embedding_dedup_never_matches_a_null_text_even_with_a_duplicate_vector():
    v = np.stack([unit(1.0), unit(1.0), unit(0.0, 1.0)])
    res = embedding_dedup(frame(["text", None, "other"]), embeddings=v)
    assert res.removed.height == 0 and res.clusters["kept"].all()


def test_embedding_dedup_embeds_the_text_column_when_no_vectors_are_given(monkeypatch):
    calls = []

    def fake_embed(texts, batch_size):
        calls.append((texts.to_list(), batch_size))
        return np.stack([unit(1.0), unit(0.0, 1.0), unit(1.0)])

    monkeypatch.setattr(embed_module, "embed", fake_embed)
    df = pl.DataFrame({"id": ["a", "b", "c"], "q": ["x", "y", "x again"]})
    res = embedding_dedup(df, text_column="q")
    assert calls == [(["x", "y", "x again"], 64)]  # default batch size
    assert res.removed["reason"].to_list() == ["semantic duplicate of a (cosine 1.0)"]
    embedding_dedup(df, text_column="q", batch_size=8)
    assert calls[-1][1] == 8


def test_separation_defaults_to_minhash_at_jaccard_0_8_inclusive():
    sft = pl.DataFrame({"id": ["s0", "s1"], "prompt": [OTHER, LONG]})
    res = separate_from(frame([SHORT, "an unrelated question about something else entirely"]), sft)
    assert res.removed.select("id", "reason").rows() == [("r0", "duplicate of sft item s1 (minhash 0.8)")]
    assert res.count.step == "sft-separation"
    assert res.count.reason == "duplicates of sft items (minhash, threshold 0.8)"
    assert (res.count.rows_in, res.count.rows_out) == (2, 1)


def test_separation_evidence_names_the_reference_item_or_the_rows_own_cluster():
    sft = pl.DataFrame({"id": ["s0", "s1", "s2"], "prompt": ["alpha", "beta", "gamma"]})
    rl = frame(["delta", "Beta", "delta ", "epsilon"])
    res = separate_from(rl, sft, method="exact", reference_name="train-set")
    assert res.removed.columns == ["id", "prompt", "reason"]
    assert res.removed.select("id", "reason").rows() == [("r1", "duplicate of train-set item s1 (exact 1.0)")]
    assert res.kept["id"].to_list() == ["r0", "r2", "r3"]  # RL-internal duplicates are dedup's job
    assert res.clusters.schema == CLUSTER_SCHEMA
    assert res.clusters.rows() == [
        ("r0", "r0", True, 1.0),
        ("r1", "s1", False, 1.0),
        ("r2", "r0", True, 1.0),
        ("r3", "r3", True, 1.0),
    ]
    assert res.count.step == "train-set-separation"
    assert res.count.reason == "duplicates of train-set items (exact, threshold 0.8)"


@pytest.mark.parametrize("text,ref", [("ALPHA", "s0"), ("gamma", "s2")])
def test_separation_of_a_single_row_matching_one_of_several_reference_items(text, ref):
    sft = pl.DataFrame({"id": ["s0", "s1", "s2"], "prompt": ["alpha", "beta", "gamma"]})
    res = separate_from(frame([text]), sft, method="exact")
    assert res.clusters.rows() == [("r0", ref, False, 1.0)]
    assert res.removed["reason"].to_list() == [f"duplicate of sft item {ref} (exact 1.0)"]


def test_separation_numbers_reference_rows_without_ids_and_uses_custom_columns():
    sft = pl.DataFrame({"body": ["first", "second"]})
    rl = pl.DataFrame({"key": ["a", "b"], "body": ["third", "SECOND"]})
    res = separate_from(rl, sft, method="exact", text_column="body", id_column="key")
    assert res.removed.select("key", "reason").rows() == [("b", "duplicate of sft item #1 (exact 1.0)")]
    assert res.clusters.rows() == [("a", "a", True, 1.0), ("b", "#1", False, 1.0)]


def test_separation_from_an_empty_reference_keeps_everything():
    empty = pl.DataFrame({"id": [], "prompt": []}, schema={"id": pl.String, "prompt": pl.String})
    rl = frame(["x", "x", "y"])
    res = separate_from(rl, empty, method="exact")
    assert res.kept["id"].to_list() == ["r0", "r1", "r2"] and res.removed.height == 0
    assert res.clusters.rows() == [("r0", "r0", True, 1.0), ("r1", "r0", True, 1.0), ("r2", "r2", True, 1.0)]


def test_separation_by_embedding_rounds_the_cosine_to_three_decimals():
    sft = pl.DataFrame({"id": ["s0"], "prompt": ["a"]})
    rl = frame(["b", "c"])
    v = np.stack([unit(1.0), unit(math.cos(0.3), math.sin(0.3)), unit(0.0, 1.0)])  # sft first, then rl
    res = separate_from(rl, sft, method="embedding", threshold=0.9, embeddings=v)
    assert res.removed.select("id", "reason").rows() == [("r0", "duplicate of sft item s0 (embedding 0.955)")]
    assert res.clusters.rows() == [("r0", "s0", False, 0.955), ("r1", "r1", True, 1.0)]
    assert res.count.reason == "duplicates of sft items (embedding, threshold 0.9)"


def test_separation_errors_name_the_input_the_reference_and_the_method():
    sft = pl.DataFrame({"id": ["s0"], "prompt": ["a"]})
    with pytest.raises(InputError, match=r"^separate_from input: missing column\(s\) prompt \(has: id\)$"):
        separate_from(pl.DataFrame({"id": ["a"]}), sft)
    with pytest.raises(InputError, match=r"^bench reference: missing column\(s\) prompt \(has: id\)$"):
        separate_from(frame(["a"]), pl.DataFrame({"id": ["s0"]}), reference_name="bench")
    with pytest.raises(
        ValueError, match=r"^unknown dedup method 'fuzzy' \(use exact, minhash or embedding\)$"
    ):
        separate_from(frame(["a"]), sft, method="fuzzy")
