"""Data curation steps: pure functions on polars frames, each returning a StepResult.

The Prefect flow (flows/curate/flow.py) and the CLI (`m1 curate ...`) are thin wrappers around these.
"""

from flows.curate.answers import extract_answers
from flows.curate.contamination import decontaminate
from flows.curate.dedup import embedding_dedup, exact_dedup, minhash_dedup, separate_from
from flows.curate.result import StepResult

__all__ = [
    "StepResult",
    "decontaminate",
    "embedding_dedup",
    "exact_dedup",
    "extract_answers",
    "minhash_dedup",
    "separate_from",
]
