"""Data curation steps: pure functions on polars frames, each returning a StepResult.

The Prefect flow (flows/curate/flow.py) and the CLI (`m1 curate ...`) are thin wrappers around these.
The flow runs them as `Step`s (steps.py; the protocol in step.py), each a Prefect task through step_tasks.py.
"""

from flows.curate.answers import extract_answers
from flows.curate.clean import clean
from flows.curate.contamination import decontaminate
from flows.curate.dedup import embedding_dedup, exact_dedup, minhash_dedup, separate_from
from flows.curate.ingest import load_items, read_table
from flows.curate.passrate import passrate_filter
from flows.curate.result import StepResult

__all__ = [
    "StepResult",
    "clean",
    "decontaminate",
    "embedding_dedup",
    "exact_dedup",
    "extract_answers",
    "load_items",
    "minhash_dedup",
    "passrate_filter",
    "read_table",
    "separate_from",
]
