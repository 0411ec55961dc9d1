"""Programmatic math word problems with answers, and planted defects for the curation filters.

The generator is the pipeline's bundled dataset: it makes distinct problems (any two share less than
`MAX_CLEAN_JACCARD` of their word 5-gram shingles and no 13-gram with the benchmark), then plants
exact duplicates, near-duplicates, benchmark leaks and unparseable references, and records which
filter should remove each planted row (`metadata.planted`). Tests assert that every filter removes
exactly those rows.

The families climb a difficulty ladder (`metadata.difficulty`, 1-5): flows/data/word_problems.py
describes it and generates the problems.

Not a flow: the bundled math data `m1 run` curates when the user brings none.
"""

from __future__ import annotations

import json
import random
import re
from importlib import resources
from typing import TYPE_CHECKING

import polars as pl

from flows.data.word_problems import TEMPLATES, Problem
from flows.schema import ITEM_COLUMNS

if TYPE_CHECKING:
    from flows.config import DataConfig

MAX_CLEAN_JACCARD = 0.35  # far below any near-dup threshold worth using
NEAR_DUP_MIN_JACCARD = 0.8


def ngrams(text: str, n: int = 13) -> set[tuple[str, ...]]:
    """Word n-grams of the lower-cased text (none when it has fewer than n words)."""
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """Word n-gram shingles; a text shorter than n words is one shingle of all its words."""
    return ngrams(text, n) or {tuple(re.findall(r"\w+", text.lower()))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def distinct_problems(n: int, rng: random.Random, avoid: list[str] = ()) -> list[Problem]:
    """n problems, pairwise far apart in shingle space and sharing no 13-gram with `avoid`."""
    out: list[Problem] = []
    sh: list[set] = []
    banned = set().union(*(ngrams(t) for t in avoid)) if avoid else set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 200 * n:
            raise RuntimeError("could not generate enough distinct problems; lower n")
        p = rng.choice(TEMPLATES)(rng)
        s = shingles(p.prompt)
        if banned & ngrams(p.prompt) or any(jaccard(s, t) > MAX_CLEAN_JACCARD for t in sh):
            continue
        out.append(p)
        sh.append(s)
    return out


def _near_duplicate(p: Problem, rng: random.Random) -> str:
    """Edit one or two words far from each other: changes a few shingles, keeps Jaccard high."""
    words = p.prompt.split(" ")
    for _ in range(20):
        w = words.copy()
        i = rng.randrange(len(w))
        w[i] = {"the": "a", "and": "and then", "a": "one"}.get(w[i].lower(), w[i] + ",")
        text = " ".join(w)
        if (
            jaccard(shingles(text), shingles(p.prompt)) >= NEAR_DUP_MIN_JACCARD
            and text.lower() != p.prompt.lower()
        ):
            return text
    raise RuntimeError("no near-duplicate edit kept the Jaccard high enough")


def _item(
    i: int,
    prompt: str,
    reference: str,
    answer,
    planted: str | None,
    of: str | None = None,
    difficulty: int | None = None,
) -> dict:
    meta = {"answer": str(answer), "planted": planted}
    if difficulty is not None:
        meta["difficulty"] = difficulty
    if of:
        meta["duplicate_of"] = of
    return {
        "id": f"math-{i:05d}",
        "source": "synthetic-math",
        "domain": "math",
        "task": "word_problem",
        "prompt": prompt,
        "reference": reference,
        "metadata": json.dumps(meta, sort_keys=True),
    }


def load_benchmark() -> pl.DataFrame:
    """The bundled tiny 'benchmark' (a held-out test set the training data must not contain)."""
    path = resources.files("flows.data").joinpath("tiny_benchmark.jsonl")
    return pl.read_ndjson(str(path))


def generate(
    n_problems: int,
    n_exact_duplicates: int = 0,
    n_near_duplicates: int = 0,
    n_benchmark_leaks: int = 0,
    n_unparseable: int = 0,
    seed: int = 0,
    benchmark: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The bundled RL dataset: clean problems plus planted rows, shuffled, in the canonical schema."""
    rng = random.Random(seed)
    benchmark = load_benchmark() if benchmark is None else benchmark
    bench_prompts = benchmark["prompt"].to_list()
    problems = distinct_problems(n_problems, rng, avoid=bench_prompts)
    rows = [
        _item(i, p.prompt, p.solution, p.answer, None, difficulty=p.difficulty)
        for i, p in enumerate(problems)
    ]
    rng.shuffle(rows)
    nxt = len(rows)
    for src in rng.sample(range(len(problems)), min(n_exact_duplicates, len(problems))):
        p = problems[src]
        # Same text up to case and spacing: exact dedup normalises both.
        rows.append(
            _item(
                nxt,
                "  " + p.prompt.upper() + " ",
                p.solution,
                p.answer,
                "exact",
                f"math-{src:05d}",
                p.difficulty,
            )
        )
        nxt += 1
    for src in rng.sample(range(len(problems)), min(n_near_duplicates, len(problems))):
        p = problems[src]
        rows.append(
            _item(nxt, _near_duplicate(p, rng), p.solution, p.answer, "near", f"math-{src:05d}", p.difficulty)
        )
        nxt += 1
    for b in rng.sample(range(benchmark.height), min(n_benchmark_leaks, benchmark.height)):
        row = benchmark.row(b, named=True)
        rows.append(_item(nxt, row["prompt"], row["solution"], row["answer"], "leak", row["id"]))
        nxt += 1
    for p in distinct_problems(n_unparseable, rng, avoid=bench_prompts + [q.prompt for q in problems]):
        reference = "We cannot read the diagram, so the result depends on the missing figure."
        rows.append(_item(nxt, p.prompt, reference, "", "unparseable"))
        nxt += 1
    # Planted rows come after every original, so keep-first dedup keeps the originals.
    planted = rows[len(problems) :]
    rng.shuffle(planted)
    return pl.DataFrame(rows[: len(problems)] + planted, schema=ITEM_COLUMNS)


def generate_for(cfg: DataConfig) -> pl.DataFrame:
    """The dataset a DataConfig describes: its size, its planted rows and its seed."""
    return generate(
        cfg.n_problems,
        cfg.n_exact_duplicates,
        cfg.n_near_duplicates,
        cfg.n_benchmark_leaks,
        cfg.n_unparseable,
        seed=cfg.seed,
    )


def write_benchmark(path, n: int = 40, seed: int = 2024) -> None:
    """Regenerate the bundled benchmark file (kept in the repo; run once by hand)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i, p in enumerate(distinct_problems(n, rng)):
            fh.write(
                json.dumps(
                    {
                        "id": f"tinybench#{i}",
                        "prompt": p.prompt,
                        "solution": p.solution,
                        "answer": str(p.answer),
                    }
                )
                + "\n"
            )
