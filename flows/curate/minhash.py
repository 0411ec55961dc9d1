"""MinHash LSH near-duplicate detection, vectorised over the whole corpus with numpy.

datasketch builds one MinHash object per document and one dict insert per band; here every stage runs
on flat arrays of all documents at once:

1. tokens: polars extracts the word tokens of every document in one native pass;
2. shingle hashes: `fast` mode hashes each token with polars' native 64-bit hash, combines n
   consecutive token hashes into a 64-bit shingle hash with shifted array slices (no per-shingle
   Python call) and folds it to 32 bits; `compat` mode hashes each shingle's UTF-8 bytes with
   datasketch's `sha1_hash32`, so signatures equal datasketch's bit for bit;
3. signatures: datasketch's affine32 scheme (MurmurHash3 fmix32 once per shingle, then
   ``a_k * h + b_k mod 2^32`` with datasketch's seeded `a`, `b`), one permutation at a time over a
   cache-sized block of shingles, reduced per document with `np.minimum.reduceat`;
4. banding: each band's r values are mixed into a 64-bit bucket key for all documents at once, and
   equal keys are found by sorting; (b, r) minimise datasketch's false positive/negative areas, weighted
   towards recall when candidates are verified (a false positive then costs only its check);
5. verification: each candidate pair's exact Jaccard on the shingle sets (sorted arrays + binary
   search), so pairs the LSH lets through below the threshold are not reported;
6. clustering: connected components of the verified pairs (scipy's union-find-equivalent).

`fast` hashes are stable within one polars version (polars documents its hash as such). They are
never persisted: signatures are recomputed from text on every run.

Not a flow: the MinHash dedup step's engine, kept beside the curation flow that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from flows.curate.text import GOLDEN64, fmix64, ngram_hashes, shingle_strings, word_lists

Mode = Literal["fast", "compat"]
EMPTY = np.uint32(0xFFFFFFFF)  # a signature value no shingle reached (datasketch's empty MinHash)
_BLOCK = 1 << 17  # shingles per block: the uint32 scratch buffer stays in L2 cache
_MAX_ALL_PAIRS_BUCKET = 64  # larger LSH buckets (boilerplate) are linked as a star, not all pairs
# With exact verification a false positive costs one Jaccard computation while a false negative is a
# missed duplicate, so the banding favours recall; without verification, datasketch's even weighting.
RECALL_WEIGHTS = (0.05, 0.95)
BALANCED_WEIGHTS = (0.5, 0.5)


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser, exactly as datasketch's affine32 pre-mix."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def permutations(num_perm: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's affine32 permutation parameters (`a` odd), drawn the same way from the same seed."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


@dataclass
class Shingles:
    """Every document's shingle hashes (fmix32-mixed, uint32): doc i owns hashes[offsets[i]:offsets[i+1]]."""

    offsets: np.ndarray
    hashes: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


def hash_shingles(texts: pl.Series, shingle_size: int = 5, mode: Mode = "fast") -> Shingles:
    """Word `shingle_size`-gram shingles of every text, hashed; a text shorter than that is one shingle."""
    if mode == "compat":
        return _compat_shingles(texts, shingle_size)
    if mode != "fast":
        raise ValueError(f"unknown MinHash mode {mode!r} (use fast or compat)")
    offsets, h = ngram_hashes(texts, shingle_size)
    h = fmix64(h)  # avalanche the polynomial before folding it to 32 bits
    return Shingles(offsets, fmix32((h ^ (h >> np.uint64(32))).astype(np.uint32)))


def _compat_shingles(texts: pl.Series, shingle_size: int) -> Shingles:
    # heavy: datasketch
    from datasketch.hashfunc import sha1_hash32

    per_doc = [shingle_strings(w, shingle_size) for w in word_lists(texts)]
    counts = np.fromiter((len(s) for s in per_doc), dtype=np.int64, count=len(per_doc))
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    raw = np.fromiter(
        (sha1_hash32(s.encode("utf-8")) for doc in per_doc for s in doc),
        dtype=np.uint32,
        count=int(offsets[-1]),
    )
    return Shingles(offsets, fmix32(raw))


def signatures_t(sh: Shingles, num_perm: int = 128, seed: int = 1) -> np.ndarray:
    """MinHash signatures, permutation-major: shape (num_perm, n_docs), uint32.

    Empty documents keep the all-EMPTY signature, as an empty datasketch MinHash does.
    """
    a, b = permutations(num_perm, seed)
    n = sh.n_docs
    out = np.full((num_perm, n), EMPTY, dtype=np.uint32)
    nonempty = np.flatnonzero(sh.counts > 0)
    if len(nonempty) == 0:
        return out
    doc_starts = sh.offsets[nonempty]
    # Split documents into blocks of about _BLOCK shingles (a document never straddles two blocks).
    cuts = sorted_unique(np.searchsorted(doc_starts, np.arange(0, sh.offsets[-1], _BLOCK), side="left"))
    cuts = np.append(cuts, len(nonempty))
    buf = np.empty(min(int(sh.offsets[-1]), _BLOCK * 2), dtype=np.uint32)
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        if lo == hi:
            continue
        s0 = doc_starts[lo]
        s1 = sh.offsets[nonempty[hi - 1] + 1]
        h = sh.hashes[s0:s1]
        if len(buf) < len(h):
            buf = np.empty(len(h), dtype=np.uint32)
        scratch = buf[: len(h)]
        local = doc_starts[lo:hi] - s0
        docs = nonempty[lo:hi]
        for k in range(num_perm):
            np.multiply(h, a[k], out=scratch)
            np.add(scratch, b[k], out=scratch)
            out[k, docs] = np.minimum.reduceat(scratch, local)
    return out


def signatures(
    texts: pl.Series, num_perm: int = 128, shingle_size: int = 5, mode: Mode = "fast", seed: int = 1
) -> np.ndarray:
    """MinHash signatures, one row per text: shape (n_docs, num_perm), uint32.

    In `compat` mode row i equals ``datasketch.MinHash(num_perm, seed).update_batch(shingles_i).digest()``.
    """
    return signatures_t(hash_shingles(texts, shingle_size, mode), num_perm, seed).T


def lsh_params(threshold: float, num_perm: int, weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """Bands b and rows r minimising the weighted false-positive + false-negative area of the S-curve
    (datasketch's criterion; the integrals by the trapezoid rule over all (b, r) at once)."""
    bs, rs = zip(*[(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], strict=True)
    b = np.array(bs, dtype=np.float64)[:, None]
    r = np.array(rs, dtype=np.float64)[:, None]
    lo = np.linspace(0.0, threshold, 2001)[None, :]
    hi = np.linspace(threshold, 1.0, 2001)[None, :]
    fp = np.trapezoid(1 - (1 - lo**r) ** b, lo, axis=1)
    fn = np.trapezoid((1 - hi**r) ** b, hi, axis=1)
    best = int(np.argmin(weights[0] * fp + weights[1] * fn))
    return int(bs[best]), int(rs[best])


def band_keys(sig_t: np.ndarray, band: int, rows: int, docs: np.ndarray) -> np.ndarray:
    """One band's 64-bit bucket key for each of `docs`: its r signature values mixed into one key
    (seeded by the band's number, so the same values in two bands make two keys)."""
    key = np.full(len(docs), np.uint64(band), dtype=np.uint64)
    for row in sig_t[band * rows : (band + 1) * rows]:
        key = (key ^ row[docs].astype(np.uint64)) * GOLDEN64
        key ^= key >> np.uint64(29)
    return key


def candidate_pairs(sig_t: np.ndarray, bands: int, rows: int, active: np.ndarray | None = None) -> np.ndarray:
    """Pairs (i < j) of documents sharing at least one LSH bucket; shape (m, 2), int64, sorted, unique."""
    n = sig_t.shape[1]
    docs = np.arange(n, dtype=np.int64) if active is None else np.flatnonzero(active).astype(np.int64)
    found = [bucket_pairs(docs, band_keys(sig_t, band, rows, docs)) for band in range(bands)]
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.concatenate(found)
    return _unique_pairs(pairs, n)


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values. (numpy 2.4's np.unique is ~100x slower than a sort on large arrays.)"""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def bucket_pairs(docs: np.ndarray, key: np.ndarray, band: np.ndarray | None = None) -> np.ndarray:
    """The candidate pairs of LSH buckets: every pair of a bucket of up to _MAX_ALL_PAIRS_BUCKET
    documents, and the star from its first (lowest) document in a larger one; buckets of one make none.

    A bucket is the documents of one `key` (of one `band`, when bands are mixed in one call, as in a
    shuffled partition of the distributed engine). Documents are ordered within a bucket, so the pairs
    depend on the buckets alone, never on the order the documents arrive in."""
    if band is None:  # docs ascending (one band of the whole corpus): a stable sort keeps them so
        order = np.argsort(key, kind="stable") if _ascending(docs) else np.lexsort((docs, key))
        new = key[order][1:] != key[order][:-1]
    else:
        order = np.lexsort((docs, key, band))
        new = (key[order][1:] != key[order][:-1]) | (band[order][1:] != band[order][:-1])
    starts = np.flatnonzero(np.r_[True, new]) if len(order) else np.empty(0, dtype=np.int64)
    sizes = np.diff(np.r_[starts, len(order)])
    out = [np.empty((0, 2), dtype=np.int64)]
    for size in sorted_unique(sizes[sizes >= 2]):
        first = starts[sizes == size]
        members = docs[order[first[:, None] + np.arange(size)]]
        if size <= _MAX_ALL_PAIRS_BUCKET:
            i, j = np.triu_indices(size, 1)
            out.append(np.stack([members[:, i].ravel(), members[:, j].ravel()], axis=1))
        else:
            hub = np.repeat(members[:, :1], size - 1, axis=1)
            out.append(np.stack([hub.ravel(), members[:, 1:].ravel()], axis=1))
    return np.concatenate(out)


def _ascending(a: np.ndarray) -> bool:
    return bool(np.all(a[1:] >= a[:-1]))


def _unique_pairs(pairs: np.ndarray, n: int) -> np.ndarray:
    lo = np.minimum(pairs[:, 0], pairs[:, 1])
    hi = np.maximum(pairs[:, 0], pairs[:, 1])
    code = sorted_unique(lo * n + hi)
    return np.stack([code // n, code % n], axis=1)


def jaccard(sh: Shingles, pairs: np.ndarray) -> np.ndarray:
    """Exact Jaccard similarity of the shingle sets of each pair (i, j), vectorised over all pairs."""
    if len(pairs) == 0:
        return np.empty(0, dtype=np.float64)
    n = sh.n_docs
    involved = np.zeros(n, dtype=bool)
    involved[pairs.ravel()] = True
    take = np.repeat(involved, sh.counts)
    doc_of = np.repeat(np.arange(n, dtype=np.uint64), sh.counts)[take]
    keys = sorted_unique((doc_of << np.uint64(32)) | sh.hashes[take].astype(np.uint64))  # sets per doc
    set_size = np.bincount((keys >> np.uint64(32)).astype(np.int64), minlength=n)
    set_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(set_size, out=set_start[1:])
    # Probe the smaller set of each pair against the larger one.
    i, j = pairs[:, 0], pairs[:, 1]
    swap = set_size[i] > set_size[j]
    small, large = np.where(swap, j, i), np.where(swap, i, j)
    q_len = set_size[small]
    q_pair = np.repeat(np.arange(len(pairs)), q_len)
    q_start = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum(q_len, out=q_start[1:])
    elems = keys[
        np.repeat(set_start[small], q_len) + (np.arange(q_start[-1]) - np.repeat(q_start[:-1], q_len))
    ]
    query = (large[q_pair].astype(np.uint64) << np.uint64(32)) | (elems & np.uint64(0xFFFFFFFF))
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    inter = np.bincount(q_pair, weights=keys[pos] == query, minlength=len(pairs))
    union = set_size[i] + set_size[j] - inter
    return np.divide(inter, union, out=np.zeros(len(pairs)), where=union > 0)


@dataclass
class Sketch:
    """Shingle hashes and signatures of a set of documents: the per-shard (map) half of MinHash dedup."""

    shingles: Shingles
    sig_t: np.ndarray  # (num_perm, n_docs)

    @classmethod
    def of(
        cls, texts: pl.Series, num_perm: int = 128, shingle_size: int = 5, mode: Mode = "fast", seed: int = 1
    ) -> Sketch:
        sh = hash_shingles(texts, shingle_size, mode)
        return cls(sh, signatures_t(sh, num_perm, seed))

    @classmethod
    def concat(cls, parts: list[Sketch]) -> Sketch:
        counts = np.concatenate([p.shingles.counts for p in parts])
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(
            Shingles(offsets, np.concatenate([p.shingles.hashes for p in parts])),
            np.concatenate([p.sig_t for p in parts], axis=1),
        )


@dataclass
class NearDuplicates:
    shingles: Shingles
    candidates: np.ndarray  # LSH candidate pairs (i < j)
    pairs: np.ndarray  # the pairs reported as near-duplicates
    similarity: np.ndarray  # exact Jaccard of each reported pair


def near_duplicates(
    texts: pl.Series | Sketch,
    threshold: float = 0.8,
    num_perm: int = 128,
    shingle_size: int = 5,
    mode: Mode = "fast",
    seed: int = 1,
    verify: bool = True,
    params: tuple[int, int] | None = None,
) -> NearDuplicates:
    """Find near-duplicate pairs among texts (or a precomputed Sketch: the reduce half).

    With `verify`, a pair is reported only if its exact Jaccard reaches `threshold`; without it, every
    LSH candidate is reported (datasketch's semantics)."""
    sk = texts if isinstance(texts, Sketch) else Sketch.of(texts, num_perm, shingle_size, mode, seed)
    bands, rows = params or lsh_params(
        threshold, sk.sig_t.shape[0], RECALL_WEIGHTS if verify else BALANCED_WEIGHTS
    )
    cand = candidate_pairs(sk.sig_t, bands, rows, active=sk.shingles.counts > 0)
    sim = jaccard(sk.shingles, cand)
    keep = sim >= threshold if verify else np.ones(len(cand), dtype=bool)
    return NearDuplicates(sk.shingles, cand, cand[keep], sim[keep])


def cluster_representatives(n: int, pairs: np.ndarray) -> np.ndarray:
    """For each document, the first document (lowest index) of its connected component of pairs."""
    # heavy: scipy
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if len(pairs) == 0:
        return np.arange(n, dtype=np.int64)
    graph = coo_matrix((np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    first = np.full(labels.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n, dtype=np.int64))
    return first[labels]
