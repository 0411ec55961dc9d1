"""What the distributed dedup engine does to one partition: pure functions of pandas frames (Dask's
partitions), numpy inside, each the partition-sized half of a stage of flows/curate/minhash.py.

Frames that travel between stages (all int64 rows are global input rows):

- sets: ``row, id, set``: a document's distinct shingle hashes (the fmix32-mixed uint32 values of
  `hash_shingles`, sorted) as one binary blob, for every document with at least one shingle. Written
  once per input partition; every later stage that needs a document's shingles is routed to it.
- bands: ``band, key, row``: the LSH bucket key of every (band, document), shuffled by key.
- edges: ``i, j`` (i < j): candidate pairs, then the pairs whose exact Jaccard reaches the threshold.
- removed: ``v, id, m, cluster, similarity``: each row that is not the first of its cluster, its id,
  its cluster's first row `m` and that row's id, and its similarity to that row.

Signatures are computed from the distinct shingles: a minimum over a multiset equals the minimum over
its set, so they equal the one-process engine's bit for bit, and so do the buckets and the pairs.

Not a flow: the partition functions of flows/curate/scale/engine.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa

from flows.curate.minhash import Shingles, band_keys, bucket_pairs, jaccard, signatures_t, sorted_unique

BLOB = pd.ArrowDtype(pa.large_binary())
TEXT = pd.ArrowDtype(pa.large_string())
SETS = {"row": "int64", "id": TEXT, "set": BLOB}
BANDS = {"band": "int32", "key": "uint64", "row": "int64"}
EDGES = {"i": "int64", "j": "int64"}
REMOVED = {"v": "int64", "id": TEXT, "m": "int64", "cluster": TEXT, "similarity": "float64"}


def empty(schema: dict) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in schema.items()})


def frame(schema: dict, **columns) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(columns[c], dtype=t) for c, t in schema.items()})


# --- sets ----------------------------------------------------------------------------------------


def sets_frame(rows: np.ndarray, ids: pl.Series, sh: Shingles) -> pd.DataFrame:
    """Each document's distinct shingle hashes as a blob, for the documents that have shingles."""
    n = sh.n_docs
    doc = np.repeat(np.arange(n, dtype=np.uint64), sh.counts)
    keys = sorted_unique((doc << np.uint64(32)) | sh.hashes.astype(np.uint64))
    counts = np.bincount((keys >> np.uint64(32)).astype(np.int64), minlength=n)
    active = np.flatnonzero(counts)
    offsets = np.zeros(len(active) + 1, dtype=np.int64)
    np.cumsum(counts[active] * 4, out=offsets[1:])
    data = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    blobs = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(active), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    return pd.DataFrame(
        {
            "row": rows[active].astype(np.int64),
            "id": pd.Series(
                pa.array(ids.cast(pl.String).gather(active).to_arrow(), pa.large_string()), dtype=TEXT
            ),
            "set": pd.Series(pd.arrays.ArrowExtensionArray(blobs), dtype=BLOB),
        }
    )


def shingles_of(blobs: pd.Series) -> Shingles:
    """The blobs of a `set` column back as Shingles (no copy of the hashes when they sit in one chunk)."""
    arr = pa.array(blobs.array, type=pa.large_binary())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return Shingles(np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint32))
    _, off_buf, data_buf = arr.buffers()
    off = np.frombuffer(off_buf, dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8)[off[0] : off[-1]].view(np.uint32)
    return Shingles((off - off[0]) // 4, data)


def pair_jaccard(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Exact Jaccard of the sets in `a` and `b`, row by row."""
    m = len(a)
    if m == 0:
        return np.empty(0, dtype=np.float64)
    sa, sb = shingles_of(a), shingles_of(b)
    both = Shingles(
        np.r_[sa.offsets, sb.offsets[1:] + sa.offsets[-1]], np.concatenate([sa.hashes, sb.hashes])
    )
    return jaccard(both, np.stack([np.arange(m), np.arange(m, 2 * m)], axis=1))


# --- bands and buckets ---------------------------------------------------------------------------


def band_frame(sets: pd.DataFrame, num_perm: int, bands: int, rows: int, seed: int) -> pd.DataFrame:
    """Every (band, document) of the partition with its bucket key: `candidate_pairs`' keys."""
    if len(sets) == 0:
        return empty(BANDS)
    sig = signatures_t(shingles_of(sets["set"]), num_perm, seed)
    docs = np.arange(len(sets), dtype=np.int64)
    keys = np.concatenate([band_keys(sig, b, rows, docs) for b in range(bands)])
    return frame(
        BANDS,
        band=np.repeat(np.arange(bands, dtype=np.int32), len(sets)),
        key=keys,
        row=np.tile(sets["row"].to_numpy(np.int64), bands),
    )


def bucket_edges(bands: pd.DataFrame) -> pd.DataFrame:
    """The candidate pairs of the buckets in this partition (a shuffle by key brought each whole)."""
    pairs = bucket_pairs(
        bands["row"].to_numpy(np.int64), bands["key"].to_numpy(np.uint64), bands["band"].to_numpy(np.int32)
    )
    return frame(EDGES, i=pairs[:, 0], j=pairs[:, 1])


# --- routing to where the shingles live ----------------------------------------------------------


def unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (a, b) pairs, sorted."""
    if len(a) == 0:
        return a, b
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    keep = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]
    return a[keep], b[keep]


def lookup(sets: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Positions in `sets` (sorted by row) of `rows`, each of which must be there."""
    have = sets["row"].to_numpy(np.int64)
    pos = np.searchsorted(have, rows)
    if len(rows) and (pos.max() >= len(have) or (have[pos] != rows).any()):
        raise ValueError("a routed row is not in its partition's shingle sets")
    return pos


def attach_first(edges: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """Candidate pairs routed to the partition of `i` (their index): distinct, with i's set."""
    i, j = unique_pairs(edges.index.to_numpy(np.int64), edges["j"].to_numpy(np.int64))
    return pd.DataFrame({"i": i, "j": j, "set_i": sets["set"].take(lookup(sets, i)).reset_index(drop=True)})


def verify(edges: pd.DataFrame, sets: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Candidate pairs with i's set, routed to the partition of `j` (their index): those whose exact
    Jaccard reaches the threshold."""
    j = edges.index.to_numpy(np.int64)
    sim = pair_jaccard(
        edges["set_i"].reset_index(drop=True), sets["set"].take(lookup(sets, j)).reset_index(drop=True)
    )
    keep = sim >= threshold
    return frame(EDGES, i=edges["i"].to_numpy(np.int64)[keep], j=j[keep])


def attach_rep(labels: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """(v, m) labels routed to the partition of the first row `m` (their index): with m's id and set."""
    m = labels.index.to_numpy(np.int64)
    pos = lookup(sets, m)
    return pd.DataFrame(
        {
            "v": labels["v"].to_numpy(np.int64),
            "m": m,
            "cluster": sets["id"].take(pos).reset_index(drop=True),
            "set_m": sets["set"].take(pos).reset_index(drop=True),
        }
    )


def rep_similarity(labels: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """Labels with m's set, routed to the partition of `v` (their index): v's id and its Jaccard with m."""
    v = labels.index.to_numpy(np.int64)
    pos = lookup(sets, v)
    sim = pair_jaccard(labels["set_m"].reset_index(drop=True), sets["set"].take(pos).reset_index(drop=True))
    return frame(
        REMOVED,
        v=v,
        id=sets["id"].take(pos).to_numpy(),
        m=labels["m"].to_numpy(np.int64),
        cluster=labels["cluster"].to_numpy(),
        similarity=sim,
    )


# --- exact dedup ---------------------------------------------------------------------------------

KEYS = {"key": TEXT, "row": "int64", "id": TEXT}


def exact_groups(keys: pd.DataFrame) -> pd.DataFrame:
    """Rows of equal normalised text (a shuffle by the text brought each group whole): every row but
    the first, with the first's row and id."""
    if len(keys) == 0:
        return empty(REMOVED)
    df = pl.from_pandas(keys).sort("row")
    first = df.group_by("key").agg(pl.col("row").first().alias("m"), pl.col("id").first().alias("cluster"))
    out = df.join(first, on="key").filter(pl.col("row") != pl.col("m"))
    return frame(
        REMOVED,
        v=out["row"].to_numpy(),
        id=out["id"].to_arrow(),
        m=out["m"].to_numpy(),
        cluster=out["cluster"].to_arrow(),
        similarity=np.ones(out.height),
    )
