"""Small helpers shared by the curation tests."""

from __future__ import annotations

import json
import random


def write_jsonl(path, rows: list[dict]):
    """Write dicts as JSON lines (UTF-8, one object per line); returns the path."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def removed_reasons(res) -> dict[str, str]:
    """id -> reason of the rows a step removed."""
    return dict(zip(res.removed["id"], res.removed["reason"], strict=True))


def graded_corpus(seed: int = 11, originals: int = 6) -> list[str]:
    """Originals plus copies with 1..30 of 60 words replaced: pairs at every Jaccard from ~0.9 to ~0."""
    rng = random.Random(seed)
    vocab = [f"v{i}" for i in range(3000)]
    docs = []
    for _ in range(originals):
        base = [rng.choice(vocab) for _ in range(60)]
        docs.append(" ".join(base))
        for k in range(1, 31):
            w = list(base)
            for pos in rng.sample(range(60), k):
                w[pos] = rng.choice(vocab)
            docs.append(" ".join(w))
    return docs
