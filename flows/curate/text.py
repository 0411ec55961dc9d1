"""Text normalisation shared by the dedup and contamination steps, vectorised with polars.

Not a flow: text handling of the curation steps, kept beside them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

# Word tokens: Unicode letters, digits and underscore, case-folded. Punctuation and spacing never make
# two texts different for near-duplicate or contamination purposes.
WORD = r"\w+"


def normalized(expr: pl.Expr) -> pl.Expr:
    """Exact-dedup key: NFKC (full-width forms, ligatures), lower case, whitespace collapsed."""
    return expr.str.normalize("NFKC").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()


def word_tokens(texts: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """All documents' word tokens flattened, plus offsets: doc i owns tokens[offsets[i]:offsets[i+1]]."""
    lists = texts.fill_null("").str.to_lowercase().str.extract_all(WORD)
    lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = lists.explode().drop_nulls()
    return flat, offsets


def word_lists(texts: pl.Series) -> list[list[str]]:
    """Per-document word tokens as Python lists (for the bit-compatible and reference paths)."""
    return [t or [] for t in texts.fill_null("").str.to_lowercase().str.extract_all(WORD).to_list()]


def shingle_strings(words: list[str], n: int) -> list[str]:
    """Word n-gram shingles joined by one space; a document shorter than n is one shingle of itself."""
    if not words:
        return []
    if len(words) < n:
        return [" ".join(words)]
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]


GOLDEN64 = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier (golden ratio) for combining 64-bit hashes


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: an avalanching bijection on uint64."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def token_hashes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of every word token (polars' native hash) and the per-text offsets into them."""
    tokens, tok_off = word_tokens(texts)
    return tokens.hash(seed=0x5EED).to_numpy(), tok_off


def ngram_hashes(
    texts: pl.Series | tuple[np.ndarray, np.ndarray], n: int, short: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of every word n-gram of every text: doc i owns hashes[offsets[i]:offsets[i+1]].

    A hash is a polynomial in its token hashes (mod 2^64): equal n-grams hash equally and distinct
    ones collide with negligible probability; callers that need avalanche mix further (MinHash does).

    Each n-gram combines its n token hashes with shifted slices (no per-n-gram Python); pass the
    result of `token_hashes` instead of texts to reuse one tokenisation for several n. With `short`,
    a text of 1..n-1 words has one n-gram: all its words.
    """
    words, tok_off = token_hashes(texts) if isinstance(texts, pl.Series) else texts
    n_tok, lengths = len(words), np.diff(tok_off)
    counts = np.maximum(lengths - n + 1, 0)
    if short:
        counts = np.where((lengths > 0) & (lengths < n), 1, counts)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if offsets[-1] == 0:
        return offsets, np.empty(0, dtype=np.uint64)
    padded = np.concatenate([words, np.zeros(n, dtype=np.uint64)])
    window = np.zeros(n_tok, dtype=np.uint64)
    for k in range(n):
        window *= GOLDEN64
        window += padded[k : k + n_tok]
    # Windows that end inside their document start an n-gram: mark the last n-1 tokens of every
    # document invalid (a text shorter than n loses them all), then revive the first word of a short
    # text, whose one n-gram is recomputed from its own words below.
    valid = np.ones(n_tok, dtype=bool)
    for k in range(1, n):
        valid[tok_off[1:][lengths >= k] - k] = False
    is_short = (lengths > 0) & (lengths < n) if short else np.zeros(len(lengths), dtype=bool)
    valid[tok_off[:-1][is_short]] = True
    starts = np.flatnonzero(valid)
    h = window[starts]
    if is_short.any():
        first, length = tok_off[:-1][is_short], lengths[is_short]
        hs = np.zeros(len(first), dtype=np.uint64)
        for k in range(n - 1):
            hs = np.where(k < length, hs * GOLDEN64 + words[np.minimum(first + k, n_tok - 1)], hs)
        h[np.searchsorted(starts, first)] = hs
    return offsets, h
