"""decontaminate's contract: the matches frame, benchmark ids and sources, n-gram scores, reasons, summary.

Texts are built from numbered words (w0 w1 ...) so every shared n-gram is planted on purpose. The
embedding path runs with a stand-in `embed` (fixed unit vectors per text): the real model is covered by
the slow tests in test_embedding.py.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from flows.curate import embed as embed_module
from flows.curate.contamination import MATCH_SCHEMA, decontaminate, ngram_matches
from flows.errors import InputError
from flows.store import StepCount
from tests.curate.helpers import write_jsonl


def words(start: int, count: int) -> str:
    """`count` distinct numbered words: words(3, 2) == "w3 w4"."""
    return " ".join(f"w{i}" for i in range(start, start + count))


def items(**prompts: str) -> pl.DataFrame:
    return pl.DataFrame({"id": list(prompts), "prompt": list(prompts.values())})


def match_rows(res) -> list[tuple]:
    return res.matches.sort("id").rows()


def test_matches_frame_reasons_and_summary_with_default_settings():
    bench = {
        "quiz": pl.DataFrame(
            {"id": ["q-17", "q-42"], "prompt": [words(0, 13), words(100, 16)]}  # 1 and 4 13-grams
        )
    }
    df = items(
        x0=words(500, 30),
        x1="Intro: " + words(0, 13).upper() + ", the end.",  # the whole 13-word item
        x2="see " + words(100, 13) + " done",  # 1 of q-42's 4 13-grams
        x3=words(100, 15),  # 3 of them
    )
    res = decontaminate(df, bench)  # default n = 13, ids from the "id" column
    assert res.matches.schema == pl.Schema(MATCH_SCHEMA)
    assert match_rows(res) == [
        ("x1", "quiz", "q-17", "13-gram", 1.0),
        ("x2", "quiz", "q-42", "13-gram", 0.25),
        ("x3", "quiz", "q-42", "13-gram", 0.75),
    ]
    assert res.removed.columns == ["id", "prompt", "reason"]
    assert res.removed.select("id", "reason").rows() == [
        ("x1", "13-gram overlap with quiz:q-17 (score 1.00)"),
        ("x2", "13-gram overlap with quiz:q-42 (score 0.25)"),
        ("x3", "13-gram overlap with quiz:q-42 (score 0.75)"),
    ]
    assert res.kept.to_dicts() == [{"id": "x0", "prompt": words(500, 30)}]
    assert res.count == StepCount("decontaminate", 4, 1, "benchmark contamination (13-gram overlap)")


def test_benchmark_ids_come_from_the_id_column_as_text_or_from_name_and_position():
    bench = {
        "toy": pl.DataFrame({"prompt": [words(0, 5), words(10, 5), words(20, 5)]}),  # no id column
        "num": pl.DataFrame({"id": [7, 8], "prompt": [words(30, 5), words(40, 5)]}),  # integer ids
    }
    df = items(a="x " + words(20, 5), b=words(40, 5) + " y", c=words(60, 5))
    res = decontaminate(df, bench, ngram=5)
    assert [r[:3] for r in match_rows(res)] == [("a", "toy", "toy#2"), ("b", "num", "8")]
    assert res.removed["reason"].to_list() == [
        "5-gram overlap with toy:toy#2 (score 1.00)",
        "5-gram overlap with num:8 (score 1.00)",
    ]


def test_benchmark_files_are_named_by_their_stem_and_match_like_frames(tmp_path):
    with_ids = [{"id": "a-1", "prompt": words(0, 8)}, {"id": "a-2", "prompt": words(10, 8)}]
    without_ids = [{"prompt": words(20, 8)}, {"prompt": words(30, 8)}]
    write_jsonl(tmp_path / "algebra.jsonl", with_ids)
    write_jsonl(tmp_path / "geo.jsonl", without_ids)
    df = items(p=words(10, 8), q="and " + words(30, 8), r=words(50, 8))

    from_files = decontaminate(df, [tmp_path / "algebra.jsonl", str(tmp_path / "geo.jsonl")], ngram=8)
    from_frames = decontaminate(
        df, {"algebra": pl.DataFrame(with_ids), "geo": pl.DataFrame(without_ids)}, ngram=8
    )
    assert match_rows(from_files) == [
        ("p", "algebra", "a-2", "8-gram", 1.0),
        ("q", "geo", "geo#1", "8-gram", 1.0),
    ]
    assert match_rows(from_frames) == match_rows(from_files)


def test_a_broken_line_in_a_benchmark_file_is_an_error_not_a_skipped_item(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps({"id": "b1", "prompt": words(0, 8)}) + "\n{not json\n")
    with pytest.raises(InputError, match="line 2"):
        decontaminate(items(a=words(0, 8)), [path], ngram=8)


def test_custom_text_and_id_columns_on_both_sides():
    df = pl.DataFrame({"uid": ["u1", "u2"], "question": [words(0, 6), words(50, 6)], "prompt": ["", ""]})
    bench = {"exam": pl.DataFrame({"qid": ["E9"], "problem": [words(0, 6)], "id": ["not-this"]})}
    res = decontaminate(
        df,
        bench,
        ngram=6,
        text_column="question",
        id_column="uid",
        benchmark_text_column="problem",
        benchmark_id_column="qid",
    )
    assert res.matches.rows() == [("u1", "exam", "E9", "6-gram", 1.0)]
    assert res.kept["uid"].to_list() == ["u2"]


def test_missing_columns_are_named_with_where_they_are_missing():
    with pytest.raises(InputError, match=r"^decontaminate input: missing column\(s\) id \(has: prompt\)$"):
        decontaminate(pl.DataFrame({"prompt": ["a"]}), {"toy": items(b="a")})
    with pytest.raises(InputError, match=r"^benchmark toy: missing column\(s\) prompt \(has: id, text\)$"):
        decontaminate(items(a="a"), {"toy": pl.DataFrame({"id": ["b"], "text": ["a"]})})


def test_items_shorter_than_n_match_whole_and_an_item_of_exactly_n_words_is_one_ngram():
    bench = items(one="Avogadro", three="w1 w2 w3", five=words(10, 5))
    df = items(
        r0="what is the avogadro constant",  # the whole one-word item
        r1="w0 w1 w2 w3 w4",  # the whole three-word item
        r2="w1 w2 and w3",  # its words, not consecutive
        r3="say " + words(10, 5) + " now",  # the five-word item, whole
        r4=words(10, 4) + " w99 w14",  # four of its five words in a row: not an n-gram of it
    )
    res = decontaminate(df, {"b": bench}, ngram=5)
    assert match_rows(res) == [
        ("r0", "b", "one", "5-gram", 1.0),
        ("r1", "b", "three", "5-gram", 1.0),
        ("r3", "b", "five", "5-gram", 1.0),
    ]
    assert res.kept["id"].to_list() == ["r2", "r4"]


def test_n_sets_how_many_consecutive_words_must_be_shared():
    bench = {"b": items(b0=words(0, 20))}
    df = items(three=words(0, 3) + " x", four="x " + words(5, 4))
    assert decontaminate(df, bench, ngram=4).removed["id"].to_list() == ["four"]
    assert decontaminate(df, bench, ngram=3).removed["id"].to_list() == ["three", "four"]
    res = decontaminate(df, bench, ngram=5)
    assert res.removed.height == 0
    assert res.count.reason == "benchmark contamination (5-gram overlap)"


def test_each_row_names_the_benchmark_item_it_shares_the_largest_share_with():
    # b1 is 13 words found inside b0 (30 words, 18 13-grams): r1 holds b1 whole, so b1 (1.0) beats b0.
    bench = {"b": items(b0=words(0, 30), b1=words(10, 13))}
    df = items(r0=words(0, 13), r1="x " + words(10, 13) + " y", r2=words(100, 20))
    res = decontaminate(df, bench)
    assert match_rows(res) == [
        ("r0", "b", "b0", "13-gram", 1 / 18),
        ("r1", "b", "b1", "13-gram", 1.0),
    ]
    rows, brows, scores = ngram_matches(df["prompt"], bench["b"]["prompt"])  # default n = 13
    assert rows.tolist() == [0, 1] and brows.tolist() == [0, 1]
    np.testing.assert_allclose(scores, [1 / 18, 1.0])


def test_score_counts_distinct_ngrams_so_a_verbatim_copy_scores_one():
    bench = {"b": items(rep="a b a b a b")}  # 2-grams: ab ba ab ba ab, two distinct
    df = items(copy="a b a b a b", half="x a b y")
    res = decontaminate(df, bench, ngram=2)
    assert match_rows(res) == [("copy", "b", "rep", "2-gram", 1.0), ("half", "b", "rep", "2-gram", 0.5)]


def test_no_match_gives_empty_integer_index_arrays():
    empty = ngram_matches(pl.Series(["x y", "!!"]), pl.Series(["", "?!"]), n=2)  # no benchmark words
    no_hit = ngram_matches(pl.Series(["x y", "!!"]), pl.Series(["p q r"]), n=2)
    for rows, brows, scores in (empty, no_hit):
        assert (len(rows), len(brows), len(scores)) == (0, 0, 0)
        assert rows.dtype.kind == brows.dtype.kind == "i" and scores.dtype.kind == "f"


def test_benchmarks_without_words_remove_nothing():
    res = decontaminate(items(a="x y", b="!!"), {"b": items(e="", p="?!", n=None)}, ngram=2)
    assert res.removed.height == 0 and res.kept.height == 2


def _fail_embed(texts):
    raise AssertionError("the embedding model was loaded with nothing to compare")


@pytest.mark.parametrize("benchmarks", [{}, []])
def test_no_benchmarks_keeps_every_row_without_loading_the_model(monkeypatch, benchmarks):
    monkeypatch.setattr(embed_module, "embed", _fail_embed)
    df = items(a=words(0, 20), b="")
    res = decontaminate(df, benchmarks, embedding_threshold=0.9)
    assert res.kept.equals(df)
    assert res.removed.height == 0 and res.removed.schema == pl.Schema({**df.schema, "reason": pl.String})
    assert res.matches.height == 0 and res.matches.schema == pl.Schema(MATCH_SCHEMA)
    assert res.count == StepCount(
        "decontaminate", 2, 2, "benchmark contamination (13-gram overlap, embedding cosine >= 0.9)"
    )


def test_empty_input_frame_gives_empty_frames_without_loading_the_model(monkeypatch):
    monkeypatch.setattr(embed_module, "embed", _fail_embed)
    df = pl.DataFrame(schema={"id": pl.String, "prompt": pl.String})
    res = decontaminate(df, {"b": items(b0=words(0, 13))}, embedding_threshold=0.9)
    assert res.kept.height == res.removed.height == res.matches.height == 0
    assert res.removed.schema == pl.Schema({"id": pl.String, "prompt": pl.String, "reason": pl.String})
    assert res.matches.schema == pl.Schema(MATCH_SCHEMA)
    assert res.count == StepCount(
        "decontaminate", 0, 0, "benchmark contamination (13-gram overlap, embedding cosine >= 0.9)"
    )


def test_a_benchmark_without_rows_removes_nothing_and_keeps_the_matches_schema():
    res = decontaminate(items(a=words(0, 13)), {"empty": pl.DataFrame(schema={"prompt": pl.String})})
    assert res.kept["id"].to_list() == ["a"]
    assert res.matches.height == 0 and res.matches.schema == pl.Schema(MATCH_SCHEMA)


def test_an_empty_benchmark_next_to_others_is_allowed():
    empty = pl.DataFrame(schema={"prompt": pl.String})
    res = decontaminate(
        items(a=words(0, 13), b=words(50, 13)), {"empty": empty, "quiz": items(q1=words(0, 13))}
    )
    assert match_rows(res) == [("a", "quiz", "q1", "13-gram", 1.0)]


def test_embedding_hits_at_the_threshold_and_ngram_hits_win(monkeypatch):
    s = float(np.sqrt(0.75))
    vectors = {
        words(0, 13): [1, 0, 0, 0],  # benchmark row 0
        "paraphrase target": [0, 1, 0, 0],  # benchmark row 1
        "n-gram copy " + words(0, 13): [0, 1, 0, 0],  # also cosine 1 with row 1: the n-gram hit wins
        "at threshold": [0, 0.5, s, 0],  # cosine exactly 0.5 with row 1
        "below": [0, 0.4, 0, float(np.sqrt(0.84))],
        "unrelated": [0, 0, 0, 1],
    }

    def fake_embed(texts: pl.Series) -> np.ndarray:
        return np.array([vectors[t] for t in texts.to_list()], dtype=np.float32).reshape(-1, 4)

    monkeypatch.setattr(embed_module, "embed", fake_embed)
    bench = {"quiz": items(b0=words(0, 13), b1="paraphrase target")}
    df = items(r0="n-gram copy " + words(0, 13), r1="at threshold", r2="below", r3="unrelated")
    res = decontaminate(df, bench, embedding_threshold=0.5)
    assert match_rows(res) == [
        ("r0", "quiz", "b0", "13-gram", 1.0),
        ("r1", "quiz", "b1", "embedding", 0.5),
    ]
    assert res.removed["reason"].to_list() == [
        "13-gram overlap with quiz:b0 (score 1.00)",
        "embedding cosine with quiz:b1 (score 0.50)",
    ]
    assert res.kept["id"].to_list() == ["r2", "r3"]
    assert res.count.reason == "benchmark contamination (13-gram overlap, embedding cosine >= 0.5)"
