"""Each dedup step removes exactly the planted duplicates and nothing else."""

from __future__ import annotations

import random

import polars as pl
import pytest

from flows.curate.dedup import exact_dedup, minhash_dedup, separate_from


def distinct_docs(n: int, seed: int = 0, words: int = 40) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"tok{i}" for i in range(3000)] + ["ünï", "日本", "Ωμέγα", "naïve"]
    return [" ".join(rng.choice(vocab) for _ in range(words)) for _ in range(n)]


def frame(prompts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"id": [f"r{i}" for i in range(len(prompts))], "prompt": prompts})


def test_exact_dedup_removes_only_normalised_copies():
    docs = distinct_docs(30)
    long_doc = " ".join(distinct_docs(1, seed=9, words=20000))
    prompts = docs + [long_doc, "", "", "   ", "Ｆｕｌｌ ｗｉｄｔｈ", "café au lait"]
    planted = [
        "  " + docs[0].upper() + "\n",  # case and spacing
        docs[1].replace(" ", "\t  "),  # whitespace runs
        "full width",  # NFKC folds full-width forms
        long_doc + " ",
        "cafe\u0301 au lait",  # decomposed é: NFKC composes it
    ]
    df = frame(prompts + planted)
    res = exact_dedup(df)
    planted_ids = {f"r{len(prompts) + i}" for i in range(len(planted))}
    assert set(res.removed["id"]) == planted_ids
    assert res.kept.height == len(prompts)  # empty strings are not duplicates of each other
    assert res.count.rows_in == df.height and res.count.removed == len(planted)
    reason = res.removed.filter(pl.col("id") == f"r{len(prompts)}")["reason"][0]
    assert reason.startswith("exact duplicate of r0")
    cl = dict(zip(res.clusters["id"], res.clusters["cluster"], strict=True))
    assert cl[f"r{len(prompts) + 2}"] == f"r{len(docs) + 4}" and cl["r5"] == "r5"
    assert res.clusters.height == df.height


@pytest.mark.parametrize("mode", ["fast", "compat"])
def test_minhash_dedup_removes_only_planted_near_duplicates(mode):
    docs = distinct_docs(60, seed=1)
    near = []
    for d in docs[:10]:
        w = d.split()
        w[20] = "edited"  # one word: Jaccard (36-5)/(36+5) ~ 0.76 on 5-gram shingles
        near.append(" ".join(w) + " !!")
    far = [
        " ".join(d.split()[:20]) + " " + " ".join(distinct_docs(1, seed=99, words=20)) for d in docs[10:15]
    ]
    df = frame(docs + ["", "short", "short"] + near + far)
    res = minhash_dedup(df, threshold=0.7, mode=mode)
    n = len(docs) + 3
    # "short" twice is a near-duplicate too (Jaccard 1): exact dedup would have taken it first.
    assert set(res.removed["id"]) == {f"r{i}" for i in range(n, n + 10)} | {"r62"}
    first = res.removed.filter(pl.col("id") == f"r{n}")["reason"][0]
    assert first.startswith("near-duplicate of r0 (jaccard 0.7")


def test_minhash_chain_is_one_cluster_kept_once():
    base = distinct_docs(1, seed=4, words=100)[0].split()
    chain = [" ".join(base[:k] + ["x"] + base[k:]) for k in (0, 30, 60)]  # each close to the next
    res = minhash_dedup(frame([" ".join(base), *chain]), threshold=0.8)
    assert res.kept["id"].to_list() == ["r0"]
    assert set(res.clusters["cluster"]) == {"r0"}


def test_separation_drops_rl_items_duplicating_sft_items():
    sft_docs = distinct_docs(20, seed=2)
    rl_docs = distinct_docs(20, seed=3)
    copies = [sft_docs[3], sft_docs[7].upper()]
    rl = frame(rl_docs + copies + [rl_docs[0]])  # an RL-internal duplicate stays: dedup's job
    sft = pl.DataFrame({"id": [f"r{i}" for i in range(20)], "prompt": sft_docs})  # ids overlap RL ids
    for method in ("exact", "minhash"):
        res = separate_from(rl, sft, method=method, threshold=0.8)
        assert set(res.removed["id"]) == {"r20", "r21"}, method
        assert "duplicate of sft item r3" in res.removed["reason"][0]
    assert res.kept.height == 21


@pytest.mark.parametrize("exact_limit", [50_000, 10])
def test_similar_pairs_matches_brute_force(monkeypatch, exact_limit):
    import numpy as np

    from flows.curate import embed

    monkeypatch.setattr(embed, "EXACT_LIMIT", exact_limit)  # 10: the HNSW path
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 16)).astype(np.float32)
    x[150:170] = x[:20] + 0.05 * rng.normal(size=(20, 16)).astype(np.float32)  # planted neighbours
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pairs, sims = embed.similar_pairs(x, 0.9)
    sim = x @ x.T
    i, j = np.nonzero(np.triu(sim >= 0.9, 1))
    assert {tuple(p) for p in pairs.tolist()} == set(zip(i.tolist(), j.tolist(), strict=True))
    np.testing.assert_allclose(sims, sim[pairs[:, 0], pairs[:, 1]], rtol=1e-5)
