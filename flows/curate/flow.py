"""The curation flow: ingest -> clean -> exact dedup -> MinHash dedup (-> embedding dedup) -> SFT
separation -> decontamination -> answer check (-> pass rate), then the dataset store.

Thin by design: every step is a library function of flows/curate run as a Prefect task over shards.
Row-wise steps map over row-range shards; exact dedup maps over shards partitioned by the hash of the
normalised text (so equal texts meet in one shard); MinHash and embedding dedup map the expensive half
(signatures, embeddings) and reduce the cheap half (banding, neighbour search, clustering) once over the
whole set. A hidden `_row` column carries the global input order, so "the first row of a cluster wins"
means the same thing for any number of shards and on any task runner.

Tasks cache on their source code and the content of their inputs (flows/curate/cache.py; files by
content hash), with results persisted under M1_HOME/cache: a rerun with the same inputs and
parameters resumes from cache instead of redoing.

Evidence datasets (clusters, contamination matches, pass rates) are written first and the curated
dataset last, naming their versions as parents: a run interrupted anywhere leaves every dataset at a
complete version, and the curated dataset never points at evidence that does not exist.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.config import CurateConfig, DataConfig, PipelineConfig, SourceConfig
from flows.curate.cache import CONTENT
from flows.curate.ingest import Ingested, load_items, read_table
from flows.curate.result import StepResult, merge_results
from flows.curate.text import normalized
from flows.schema import ITEM_COLUMNS, QUARANTINE_REASON
from flows.store import DatasetStore

ROW = "_row"
CACHED = {"cache_policy": CONTENT, "persist_result": True}


def fingerprint(path: str | Path) -> str:
    """Content hash of a file or folder, so a cached step reruns when its input changes."""
    path = Path(path)
    digest = hashlib.sha256()
    for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if f.is_file():
            digest.update(f.name.encode())
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


@task(name="ingest", **CACHED)
def ingest_task(spec: SourceConfig, content: str) -> Ingested:
    return load_items(
        spec.path,
        source=spec.name,
        mapping=spec.mapping,
        domain=spec.domain,
        task=spec.task,
        split=spec.split,
    )


@task(name="generate", **CACHED)
def generate_task(cfg: DataConfig) -> Ingested:
    from flows.data.synthetic_math import generate_for
    from flows.schema import validate_items

    valid, bad = validate_items(generate_for(cfg))
    return Ingested(valid, bad, 0, valid.height + bad.height)


@task(name="clean", **CACHED)
def clean_task(shard: pl.DataFrame, endpoint: str | None, model: str) -> StepResult:
    from flows.curate.clean import clean
    from flows.curate.llm import Endpoint

    return clean(shard, endpoint=Endpoint(endpoint, model) if endpoint else None)


@task(name="exact-dedup", **CACHED)
def exact_task(shard: pl.DataFrame) -> StepResult:
    from flows.curate.dedup import exact_dedup

    return exact_dedup(shard)


@task(name="minhash-sketch", **CACHED)
def sketch_task(shard: pl.DataFrame, c: CurateConfig):
    from flows.curate.minhash import Sketch

    return Sketch.of(shard["prompt"], c.minhash_num_perm, c.shingle_size, c.minhash_mode)


@task(name="minhash-dedup", **CACHED)
def minhash_task(df: pl.DataFrame, sketches: list, c: CurateConfig) -> StepResult:
    from flows.curate.dedup import minhash_dedup
    from flows.curate.minhash import Sketch

    return minhash_dedup(
        df,
        c.minhash_threshold,
        c.minhash_num_perm,
        c.shingle_size,
        mode=c.minhash_mode,
        sketch=Sketch.concat(sketches),
    )


@task(name="embed", **CACHED)
def embed_task(shard: pl.DataFrame):
    from flows.curate.embed import embed

    return embed(shard["prompt"])


@task(name="embedding-dedup", **CACHED)
def embedding_task(df: pl.DataFrame, vectors: list, threshold: float) -> StepResult:
    import numpy as np

    from flows.curate.dedup import embedding_dedup

    return embedding_dedup(df, threshold, embeddings=np.concatenate(vectors))


@task(name="sft-separation", **CACHED)
def separate_task(shard: pl.DataFrame, sft: pl.DataFrame, c: CurateConfig) -> StepResult:
    from flows.curate.dedup import separate_from

    return separate_from(
        shard,
        sft,
        method="minhash",
        threshold=c.minhash_threshold,
        num_perm=c.minhash_num_perm,
        shingle_size=c.shingle_size,
    )


@task(name="decontaminate", **CACHED)
def decontaminate_task(
    shard: pl.DataFrame, benchmarks: dict[str, pl.DataFrame], c: CurateConfig
) -> StepResult:
    from flows.curate.contamination import decontaminate

    return decontaminate(
        shard,
        benchmarks,
        ngram=c.contamination_ngram,
        embedding_threshold=c.embedding_threshold if c.use_embeddings else None,
    )


@task(name="answer-check", **CACHED)
def answers_task(shard: pl.DataFrame) -> StepResult:
    from flows.curate.answers import extract_answers

    return extract_answers(shard)


@task(name="pass-rate", **CACHED)
def passrate_task(shard: pl.DataFrame, c: CurateConfig) -> StepResult:
    from flows.curate.passrate import passrate_filter

    return passrate_filter(
        shard, policy_sampler(c), k=c.pass_rate_k, low=c.pass_rate_low, high=c.pass_rate_high
    )


def policy_sampler(c: CurateConfig):
    from flows.curate.llm import Endpoint
    from flows.curate.passrate import EndpointSampler, EngineSampler
    from flows.errors import ConfigError

    if c.policy_checkpoint:
        return EngineSampler(c.policy_checkpoint, max_tokens=c.pass_rate_max_tokens)
    if c.policy_endpoint:
        return EndpointSampler(
            Endpoint(c.policy_endpoint, c.policy_model), api=c.policy_api, max_tokens=c.pass_rate_max_tokens
        )
    raise ConfigError("curate.pass_rate needs curate.policy_endpoint or curate.policy_checkpoint")


def sources(config: PipelineConfig) -> list[SourceConfig]:
    if config.curate.sources:
        return config.curate.sources
    if config.data.input_path:
        return [SourceConfig(path=config.data.input_path)]
    return []


def shards(df: pl.DataFrame, n: int, by: pl.Expr | None = None) -> list[pl.DataFrame]:
    """Row-range shards, or hash partitions of `by` (equal keys land in the same shard)."""
    n = max(1, min(n, df.height))
    if by is None:
        size = -(-df.height // n)
        return [df.slice(i * size, size) for i in range(n)]
    part = df.select((by.hash(seed=7) % n).alias("p"))["p"]
    return [df.filter(part == i) for i in range(n)]


class Tasks:
    """Submits tasks to the flow's task runner and records each run's final state (Cached or not)."""

    def __init__(self) -> None:
        self.states: list[tuple[str, str]] = []

    def map(self, step, items: list, *args) -> list:
        futures = step.map(items, *[unmapped(a) for a in args])
        results = [f.result() for f in futures]
        self.states += [(step.name, f.state.name) for f in futures]
        return results

    def one(self, step, *args):
        future = step.submit(*args)
        result = future.result()
        self.states.append((step.name, future.state.name))
        return result

    def mapped(self, step, df: pl.DataFrame, n: int, *args, by: pl.Expr | None = None) -> StepResult:
        return merge_results(self.map(step, shards(df, n, by), *args), order_by=ROW)


@flow(name="m1-curate", log_prints=True)
def curate_flow(config: PipelineConfig = PipelineConfig()) -> dict:  # noqa: B008 - the UI form default
    """Curate RL items into the dataset store; returns the curated dataset's manifest (as a dict) and
    the final state of every task run.

    The steps run as a subflow on the configured task runner (local threads, or Dask through
    prefect-dask), with task results persisted in the store's cache folder; both settings travel with
    the tasks to Dask workers. Deployments run this flow as it is.
    """
    steps = curate_steps.with_options(
        task_runner=task_runner(config.curate), result_storage=cache_storage(DatasetStore(config.home).root)
    )
    return steps(config)


def cache_storage(root: Path):
    """The store's cache folder as a saved storage block (Dask workers load it by reference)."""
    from prefect.filesystems import LocalFileSystem

    block = LocalFileSystem(basepath=str(root / "cache"))
    block.save(f"m1-cache-{hashlib.sha256(str(root).encode()).hexdigest()[:16]}", overwrite=True)
    return block


def task_runner(c: CurateConfig):
    if c.runner == "dask":
        from prefect_dask import DaskTaskRunner

        if c.dask_address:
            return DaskTaskRunner(address=c.dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": 2, "threads_per_worker": 1})
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner()


@flow(name="m1-curate-steps", log_prints=True)
def curate_steps(config: PipelineConfig) -> dict:
    """The curation steps themselves (see the module docstring)."""
    logger = get_run_logger()
    c = config.curate
    store = DatasetStore(config.home)
    tasks = Tasks()
    inputs = [tasks.one(ingest_task, s, fingerprint(s.path)) for s in sources(config)] or [
        tasks.one(generate_task, config.data)
    ]
    items = pl.concat([i.items for i in inputs], how="vertical_relaxed").with_row_index(ROW)
    quarantine = pl.concat(
        [i.quarantined.with_columns(pl.lit("ingest").alias("step")) for i in inputs], how="vertical_relaxed"
    )
    logger.info(
        "ingested %d items from %d source(s); %d quarantined, %d ids assigned",
        items.height,
        len(inputs),
        quarantine.height,
        sum(i.ids_assigned for i in inputs),
    )

    results: list[StepResult] = []
    df = items
    n = c.shards

    def record(res: StepResult) -> pl.DataFrame:
        results.append(res)
        logger.info(
            "%s: %d -> %d (%s)", res.count.step, res.count.rows_in, res.count.rows_out, res.count.reason
        )
        return res.kept

    if c.clean:
        df = record(tasks.mapped(clean_task, df, n, c.rewrite_endpoint, c.rewrite_model))
    df = record(tasks.mapped(exact_task, df, n, by=normalized(pl.col("prompt"))))
    sketches = tasks.map(sketch_task, shards(df, n), c)
    df = record(tasks.one(minhash_task, df, sketches, c))
    if c.use_embeddings:
        vectors = tasks.map(embed_task, shards(df, n))
        df = record(tasks.one(embedding_task, df, vectors, c.embedding_threshold))
    if c.sft_path:
        sft = read_table(c.sft_path, strict=True)
        df = record(tasks.mapped(separate_task, df, n, sft, c))
    df = record(tasks.mapped(decontaminate_task, df, n, benchmarks(config.data), c))
    df = record(tasks.mapped(answers_task, df, n))
    if c.pass_rate:
        df = record(tasks.mapped(passrate_task, df, n, c))

    manifest = write_outputs(store, config, items, df, quarantine, results)
    cached = sum(state == "Cached" for _, state in tasks.states)
    logger.info("%d of %d tasks resumed from cache", cached, len(tasks.states))
    report(manifest.ref, results, quarantine, tasks.states)
    return {"manifest": json.loads(manifest.to_json()), "tasks": tasks.states}


def benchmarks(cfg: DataConfig) -> dict[str, pl.DataFrame]:
    from flows.data.synthetic_math import load_benchmark

    return {"tiny_benchmark": load_benchmark()} | {
        Path(p).stem: read_table(p, strict=True) for p in cfg.benchmark_paths
    }


def write_outputs(
    store: DatasetStore,
    config: PipelineConfig,
    items: pl.DataFrame,
    kept: pl.DataFrame,
    quarantine: pl.DataFrame,
    results: list[StepResult],
):
    """Evidence first, the curated dataset last (the commit point, naming the evidence as parents)."""
    name = f"{config.name}-curation"
    params = config.data.model_dump() | config.curate.model_dump(mode="json")
    evidence = {
        "clusters": [
            r.clusters.with_columns(pl.lit(r.count.step).alias("step"))
            for r in results
            if r.clusters is not None
        ],
        "matches": [r.matches for r in results if r.matches is not None],
        "pass-rates": [r.rates for r in results if r.rates is not None],
    }
    parents = []
    for kind, frames in evidence.items():
        if frames:
            m = store.write(f"{name}-{kind}", pl.concat(frames, how="vertical_relaxed"), params=params)
            parents.append(m.ref)
    removed = [
        r.removed.select(*ITEM_COLUMNS, QUARANTINE_REASON).with_columns(pl.lit(r.count.step).alias("step"))
        for r in results
    ]
    rejected = pl.concat(
        [quarantine.select(*ITEM_COLUMNS, QUARANTINE_REASON, "step"), *removed], how="vertical_relaxed"
    )
    return store.write(
        name,
        kept.drop(ROW),
        params=params,
        parents=parents,
        steps=[r.count for r in results],
        quarantine=rejected,
    )


def report(
    ref: str, results: list[StepResult], quarantine: pl.DataFrame, states: list[tuple[str, str]]
) -> None:
    """Stage report: rows in/out per step and the most common reasons, as Prefect artifacts."""
    rows = [
        {
            "step": r.count.step,
            "rows in": r.count.rows_in,
            "rows out": r.count.rows_out,
            "removed": r.count.removed,
            "why": r.count.reason,
        }
        for r in results
    ]
    create_table_artifact(rows, key="curation-steps", description=f"Curation steps of {ref}")
    cached = sum(state == "Cached" for _, state in states)
    lines = [
        f"# Curation report: {ref}",
        "",
        f"Quarantined at ingest: {quarantine.height}. Tasks resumed from cache: {cached} of {len(states)}.",
        "",
    ]
    for r in results:
        lines.append(f"## {r.count.step}: {r.count.rows_in} -> {r.count.rows_out} ({r.count.reason})")
        if r.removed.height:
            kinds = (
                r.removed.select(
                    pl.col(QUARANTINE_REASON).str.replace(r" (of|with) .*| \(.*", "").value_counts(sort=True)
                )
                .unnest(QUARANTINE_REASON)
                .head(5)
            )
            lines += [f"- {row[0]}: {row[1]}" for row in kinds.rows()]
        lines.append("")
    create_markdown_artifact("\n".join(lines), key="curation-report", description=f"Curation of {ref}")
