"""The curation steps as `Step`s (flows/curate/step.py): each names itself, says what it removes, holds
its settings, and runs the library function of flows/curate that does the work.

The flow (flows/curate/flow.py) runs them as Prefect tasks through flows/curate/step_tasks.py; the task
names here are the ones the Prefect UI, the flows' `tasks` states and the tests know.

Not a flow: the curation flow's steps, kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from flows.config import CleanConfig, CurateConfig, MinhashConfig, PassRateConfig
from flows.curate import embed as embedder
from flows.curate.answers import extract_answers
from flows.curate.clean import clean
from flows.curate.contamination import decontaminate
from flows.curate.dedup import embedding_dedup, exact_dedup, minhash_dedup, separate_from
from flows.curate.minhash import Sketch
from flows.curate.passrate import passrate_filter
from flows.curate.result import StepResult
from flows.curate.scale.report import from_clusters
from flows.policy import make_sampler


@dataclass(frozen=True)
class Clean:
    name = "clean"
    removes = "broken encoding or LaTeX, multiple choice that cannot be made open-ended, proofs"
    retry = True  # the optional rewriter is an endpoint
    c: CleanConfig

    def run(self, rows: pl.DataFrame) -> StepResult:
        return clean(rows, endpoint=self.c.rewrite.client() if self.c.rewrite.url else None)


@dataclass(frozen=True)
class ExactDedup:
    """Run over shards partitioned by the normalised text, so that equal texts meet in one shard."""

    name = "exact-dedup"
    removes = "the same prompt after normalisation, keeping the first"
    retry = False

    def run(self, rows: pl.DataFrame) -> StepResult:
        return exact_dedup(rows)


@dataclass(frozen=True)
class MinhashSketch:
    """MinHash LSH's map half: the signatures of a shard (what they depend on, and nothing else)."""

    name = "minhash-sketch"
    removes = "nothing (signatures for minhash-dedup)"
    retry = False
    num_perm: int
    shingle_size: int
    mode: str

    def run(self, shard: pl.DataFrame) -> Sketch:
        return Sketch.of(shard["prompt"], self.num_perm, self.shingle_size, self.mode)


@dataclass(frozen=True)
class MinhashDedup:
    """Sketches per shard, then LSH banding and clustering once over the whole set."""

    name = "minhash-dedup"
    removes = "near-duplicate prompts (MinHash LSH over word shingles), keeping the first of a cluster"
    retry = False
    c: MinhashConfig

    @property
    def mapper(self) -> MinhashSketch:
        return MinhashSketch(self.c.num_perm, self.c.shingle_size, self.c.mode)

    def reduce(self, rows: pl.DataFrame, parts: list) -> StepResult:
        c = self.c
        res = minhash_dedup(
            rows, c.threshold, c.num_perm, c.shingle_size, mode=c.mode, sketch=Sketch.concat(parts)
        )
        from_clusters(res.clusters).check(c.max_cluster or None)
        return res


@dataclass(frozen=True)
class MinhashDedupOnDask:
    """The same step with every stage on the flow's Dask cluster (flows/curate/scale): signatures per
    partition, buckets shuffled, edges verified and clustered on the workers; the same result.

    Run from the flow's process (flows/curate/step_tasks.py: `inline`), which only plans and waits:
    a task on a one-thread worker would hold the thread the shuffles' tasks need there."""

    name = "minhash-dedup"
    removes = MinhashDedup.removes
    retry = False
    c: MinhashConfig
    partitions: int
    work: str  # scratch folder every worker can see (under M1_HOME)

    def run(self, rows: pl.DataFrame) -> StepResult:
        # lazy: optional extra [dist] (dask, distributed)
        from prefect.context import FlowRunContext

        from flows.curate.scale.engine import dedup_frame

        c = self.c
        return dedup_frame(
            FlowRunContext.get().task_runner.client,
            rows,
            Path(self.work),
            self.partitions,
            threshold=c.threshold,
            num_perm=c.num_perm,
            shingle_size=c.shingle_size,
            mode=c.mode,
            max_cluster=c.max_cluster or None,
        )


@dataclass(frozen=True)
class Embed:
    """Embedding dedup's map half: a shard's prompt embeddings (the threshold is the reduce's alone)."""

    name = "embed"
    removes = "nothing (embeddings for embedding-dedup)"
    retry = False

    def run(self, shard: pl.DataFrame) -> np.ndarray:
        return embedder.embed(shard["prompt"])


@dataclass(frozen=True)
class EmbeddingDedup:
    """Embeddings per shard, then the neighbour search and clustering once over the whole set."""

    name = "embedding-dedup"
    removes = "semantic near-duplicates (embedding cosine), keeping the first of a cluster"
    retry = False
    threshold: float
    mapper = Embed()

    def reduce(self, rows: pl.DataFrame, parts: list) -> StepResult:
        return embedding_dedup(rows, self.threshold, embeddings=np.concatenate(parts))


@dataclass(frozen=True)
class SeparateSFT:
    name = "sft-separation"
    removes = "prompts that near-duplicate an SFT item (MinHash), so RL does not train on them again"
    retry = False
    sft: pl.DataFrame
    c: MinhashConfig

    def run(self, rows: pl.DataFrame) -> StepResult:
        c = self.c
        return separate_from(
            rows,
            self.sft,
            method="minhash",
            threshold=c.threshold,
            num_perm=c.num_perm,
            shingle_size=c.shingle_size,
        )


@dataclass(frozen=True)
class Decontaminate:
    name = "decontaminate"
    removes = "prompts matching a benchmark item (word n-grams, optionally embeddings)"
    retry = False
    benchmarks: dict[str, pl.DataFrame]
    c: CurateConfig

    def run(self, rows: pl.DataFrame) -> StepResult:
        c = self.c
        return decontaminate(
            rows,
            self.benchmarks,
            ngram=c.contamination.ngram,
            embedding_threshold=c.embedding.threshold if c.embedding.enabled else None,
        )


@dataclass(frozen=True)
class AnswerCheck:
    name = "answer-check"
    removes = "math items whose reference has no final answer that parses"
    retry = False

    def run(self, rows: pl.DataFrame) -> StepResult:
        return extract_answers(rows)


@dataclass(frozen=True)
class PassRate:
    """Section 4.1's filter: `policy_id` is the policy's fingerprint (a retrained model at the same
    path is a new cache key)."""

    name = "pass-rate"
    removes = "items the policy always or never solves (pass rate outside (low, high))"
    retry = True  # the policy may be an endpoint
    c: PassRateConfig
    default_policy: str | None
    policy_id: str
    verifiers: dict[str, str] = field(default_factory=dict)
    plugin_dirs: list[str] = field(default_factory=list)

    def run(self, rows: pl.DataFrame) -> StepResult:
        c = self.c
        sampler = make_sampler(c.policy, default_checkpoint=self.default_policy, template="{prompt}\n")
        return passrate_filter(
            rows,
            sampler,
            k=c.k,
            low=c.low,
            high=c.high,
            verifiers=self.verifiers,
            plugin_dirs=self.plugin_dirs,
        )
