"""Deduplication steps: exact (normalised text), MinHash LSH near-duplicates, embedding similarity, and
strict separation of RL items from an SFT set.

Every step keeps the first row of each cluster (input order, so concatenating sources in priority
order decides who wins) and reports, for every removed row, which kept row it duplicates.

Not a flow: curation steps, kept beside the flow that runs them (flows/curate/flow.py).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from flows.curate import embed as embedder
from flows.curate.minhash import Mode, Sketch, cluster_representatives, jaccard, near_duplicates
from flows.curate.result import StepResult, split_by_reason
from flows.curate.text import normalized
from flows.schema import require_columns


def labelled(
    df: pl.DataFrame,
    id_column: str,
    cluster: pl.Series,
    kept: np.ndarray,
    similarity: np.ndarray,
    step: str,
    summary: str,
    what: str,
    measure: str,
) -> StepResult:
    """The step's result from each row's cluster (the id of its cluster's kept row), whether it is that
    row, and its similarity to it: the one place that words a dedup step's clusters and reasons (the
    one-process steps below, and the distributed engine per partition)."""
    clusters = pl.DataFrame({"id": df[id_column], "cluster": cluster, "kept": kept, "similarity": similarity})
    reason = clusters.select(
        pl.when(pl.col("kept"))
        .then(None)
        .otherwise(pl.format(f"{what} of {{}} ({measure} {{}})", "cluster", pl.col("similarity").round(3)))
    ).to_series()
    return split_by_reason(df, reason, step, summary, clusters=clusters)


def _result(
    df: pl.DataFrame, id_column: str, rep: np.ndarray, similarity: np.ndarray, wording: tuple
) -> StepResult:
    """`labelled` from each row's representative position (`wording`: step, summary, what, measure)."""
    kept = rep == np.arange(df.height)
    return labelled(df, id_column, df[id_column].gather(rep), kept, similarity, *wording)


EXACT = (
    "exact-dedup",
    "same text after normalisation (NFKC, case, whitespace)",
    "exact duplicate",
    "normalised",
)


def minhash_wording(threshold: float, num_perm: int, shingle_size: int) -> tuple[str, str, str, str]:
    """MinHash dedup's step name, summary and reason words (`labelled`'s last four arguments)."""
    return (
        "minhash-dedup",
        f"near-duplicates: word {shingle_size}-gram Jaccard >= {threshold} "
        f"(MinHash LSH, {num_perm} permutations)",
        "near-duplicate",
        "jaccard",
    )


def exact_dedup(df: pl.DataFrame, text_column: str = "prompt", id_column: str = "id") -> StepResult:
    """Drop rows whose text equals an earlier row's after NFKC, case folding and whitespace collapsing.

    Empty texts are not duplicates of each other: `clean` rejects them with their own reason.
    """
    require_columns(df, [text_column, id_column], where="exact_dedup input")
    key = df.select(normalized(pl.col(text_column)).alias("k"))["k"]
    idx = pl.Series("i", np.arange(df.height, dtype=np.int64))
    first = pl.DataFrame({"k": key, "i": idx}).select(pl.col("i").first().over("k"))["i"].to_numpy()
    empty = (key.is_null() | (key == "")).to_numpy()
    rep = np.where(empty, np.arange(df.height), first)
    return _result(df, id_column, rep, np.ones(df.height), EXACT)


def minhash_dedup(
    df: pl.DataFrame,
    threshold: float = 0.8,
    num_perm: int = 128,
    shingle_size: int = 5,
    text_column: str = "prompt",
    id_column: str = "id",
    mode: Mode = "fast",
    verify: bool = True,
    seed: int = 1,
    sketch: Sketch | None = None,
) -> StepResult:
    """Drop near-duplicates: MinHash LSH candidates whose exact word-shingle Jaccard reaches `threshold`
    (with `verify`; without it every LSH candidate counts, as in datasketch). Clusters are connected
    components; each removed row's reason gives its Jaccard with the row kept for its cluster.
    A precomputed `sketch` of the rows (e.g. concatenated from shards) skips hashing."""
    require_columns(df, [text_column, id_column], where="minhash_dedup input")
    nd = near_duplicates(
        sketch if sketch is not None else df[text_column].cast(pl.String),
        threshold,
        num_perm,
        shingle_size,
        mode,
        seed,
        verify,
    )
    rep = cluster_representatives(df.height, nd.pairs)
    similarity = np.ones(df.height)
    moved = np.flatnonzero(rep != np.arange(df.height))
    if len(moved):
        similarity[moved] = jaccard(nd.shingles, np.stack([rep[moved], moved], axis=1))
    return _result(df, id_column, rep, similarity, minhash_wording(threshold, num_perm, shingle_size))


def embedding_dedup(
    df: pl.DataFrame,
    threshold: float = 0.95,
    text_column: str = "prompt",
    id_column: str = "id",
    embeddings: np.ndarray | None = None,
    batch_size: int = 64,
) -> StepResult:
    """Drop rows whose sentence embedding has cosine similarity >= `threshold` with another row's.

    Neighbours come from a faiss index (flat inner product on unit vectors), never from all pairs at
    once in memory; pass precomputed `embeddings` to reuse them.
    """
    require_columns(df, [text_column, id_column], where="embedding_dedup input")
    vectors = embedder.embed(df[text_column], batch_size=batch_size) if embeddings is None else embeddings
    nonempty = (df[text_column].fill_null("").str.strip_chars() != "").to_numpy()
    pairs, sims = embedder.similar_pairs(vectors, threshold, active=nonempty)
    rep = cluster_representatives(df.height, pairs)
    moved = np.flatnonzero(rep != np.arange(df.height))
    similarity = np.ones(df.height)
    similarity[moved] = np.einsum("ij,ij->i", vectors[moved], vectors[rep[moved]])
    wording = (
        "embedding-dedup",
        f"semantic duplicates: embedding cosine >= {threshold}",
        "semantic duplicate",
        "cosine",
    )
    return _result(df, id_column, rep, similarity, wording)


def separate_from(
    df: pl.DataFrame,
    reference: pl.DataFrame,
    method: str = "minhash",
    threshold: float = 0.8,
    text_column: str = "prompt",
    id_column: str = "id",
    reference_name: str = "sft",
    **options,
) -> StepResult:
    """Drop rows of `df` that duplicate any row of `reference` (e.g. RL items already in the SFT set).

    Rows of `df` duplicating only each other are kept: that is the dedup steps' job.
    """
    require_columns(df, [text_column, id_column], where="separate_from input")
    require_columns(reference, [text_column], where=f"{reference_name} reference")
    ref_ids = (
        reference[id_column]
        if id_column in reference.columns
        else pl.Series([f"#{i}" for i in range(reference.height)])
    ).cast(pl.String)
    step = {"exact": exact_dedup, "minhash": minhash_dedup, "embedding": embedding_dedup}.get(method)
    if step is None:
        raise ValueError(f"unknown dedup method {method!r} (use exact, minhash or embedding)")
    # Reference rows first, so every cluster that contains one is represented by one; positions as ids
    # so that ids shared between the two sets cannot be confused.
    n_ref = reference.height
    both = pl.DataFrame(
        {
            "pos": np.arange(n_ref + df.height),
            "text": pl.concat([reference[text_column].cast(pl.String), df[text_column].cast(pl.String)]),
        }
    )
    kwargs = options if method == "exact" else {"threshold": threshold, **options}
    clusters = step(both, text_column="text", id_column="pos", **kwargs).clusters.slice(n_ref)
    rep = clusters["cluster"].to_numpy()
    hit = rep < n_ref
    ref_id = ref_ids.gather(np.where(hit, rep, 0)) if n_ref else pl.Series([""] * df.height)
    sim = clusters["similarity"].round(3)
    reason = pl.select(
        pl.when(pl.Series(hit)).then(
            pl.format(f"duplicate of {reference_name} item {{}} ({method} {{}})", ref_id, sim)
        )
    ).to_series()
    own = df[id_column].cast(pl.String)
    cluster = pl.select(
        pl.when(pl.Series(hit)).then(ref_id).otherwise(own.gather(np.where(hit, 0, rep - n_ref)))
    )
    evidence = pl.DataFrame(
        {"id": df[id_column], "cluster": cluster.to_series(), "kept": ~hit, "similarity": sim}
    )
    return split_by_reason(
        df,
        reason,
        f"{reference_name}-separation",
        f"duplicates of {reference_name} items ({method}, threshold {threshold})",
        clusters=evidence,
    )
