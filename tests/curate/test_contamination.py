"""n-gram contamination removes exactly the planted benchmark leaks and says which item each matched."""

from __future__ import annotations

import random

import polars as pl

from flows.curate.contamination import decontaminate

VOCAB = [f"v{i}" for i in range(4000)]


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCAB, k=n))


def test_planted_leaks_removed_with_their_benchmark_item():
    rng = random.Random(0)
    bench = pl.DataFrame(
        {"id": [f"aime#{i}" for i in range(10)], "prompt": [sentence(rng, 30) for _ in range(10)]}
    )
    short = pl.DataFrame({"prompt": ["What is 2 plus 2", sentence(rng, 25)]})  # no id column: ids made
    clean = [sentence(rng, 40) for _ in range(30)]
    b3 = bench["prompt"][3].split()
    leaks = [
        "Prefix words here. " + " ".join(b3[5:18]).upper() + " and more words",  # exactly 13 words, case
        bench["prompt"][7],  # verbatim
        "Q: what is 2 plus 2? Answer it.",  # a whole short benchmark item inside the row
    ]
    near_miss = "Intro " + " ".join(b3[0:12]) + " outro"  # only 12 consecutive words
    df = pl.DataFrame({"id": [f"x{i}" for i in range(34)], "prompt": clean + leaks + [near_miss]})
    res = decontaminate(df, {"aime": bench, "toy": short}, ngram=13)
    assert res.removed["id"].to_list() == ["x30", "x31", "x32"]
    m = res.matches.sort("id")
    assert m["benchmark_id"].to_list() == ["aime#3", "aime#7", "toy#0"]
    assert m["benchmark"].to_list() == ["aime", "aime", "toy"]
    assert m["method"].to_list() == ["13-gram"] * 3
    assert m["score"][1] == 1.0 and 0 < m["score"][0] < 0.2
    assert "13-gram overlap with aime:aime#3" in res.removed["reason"][0]
    assert res.kept.height == 31


def test_configurable_n_and_files(tmp_path):
    bench = tmp_path / "bench.jsonl"
    bench.write_text('{"id": "b1", "prompt": "the cat sat on the mat today"}\n')
    df = pl.DataFrame({"id": ["a", "b", ""], "prompt": ["a cat sat on the mat", "the dog sat on a mat", ""]})
    res = decontaminate(df, [bench], ngram=4)
    assert res.removed["id"].to_list() == ["a"]
    assert res.matches["benchmark"].to_list() == ["bench"]
    assert decontaminate(df, [bench], ngram=13).removed.height == 0


def test_unicode_empty_and_very_long_documents():
    rng = random.Random(1)
    bench_text = "Soit ƒ une fonction définie sur ℝ telle que ƒ(x) = x² − 3x + 2 ; trouvez ses racines réelles s'il vous plaît"
    bench = pl.DataFrame({"id": ["fr#1"], "prompt": [bench_text]})
    long_clean = sentence(rng, 50_000)
    long_leak = sentence(rng, 30_000) + " " + bench_text.upper() + " " + sentence(rng, 30_000)
    df = pl.DataFrame(
        {
            "id": ["empty", "none", "long", "leak", "uni"],
            "prompt": ["", None, long_clean, long_leak, "Soit ƒ une fonction définie sur ℝ"],
        }
    )
    res = decontaminate(df, {"fr": bench})
    assert res.removed["id"].to_list() == ["leak"]
    assert res.matches["score"].to_list() == [1.0]
