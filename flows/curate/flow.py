"""The curation flow: ingest -> clean -> exact dedup -> MinHash dedup (-> embedding dedup) -> SFT
separation -> decontamination -> answer check (-> pass rate), then the dataset store.

Thin by design: every step is a `Step` of flows/curate/steps.py (a library function of flows/curate
with its name and settings), run as a Prefect task over shards by flows/curate/step_tasks.py.
Row-wise steps map over row-range shards; exact dedup maps over shards partitioned by the hash of the
normalised text (so equal texts meet in one shard); MinHash and embedding dedup map the expensive half
(signatures, embeddings) and reduce the cheap half (banding, neighbour search, clustering) once over the
whole set. A hidden `_row` column carries the global input order, so "the first row of a cluster wins"
means the same thing for any number of shards and on any task runner.

Tasks cache on their source code and the content of their inputs (flows/cache.py; files by
content hash), with results persisted under M1_HOME/cache: a rerun with the same inputs and
parameters resumes from cache instead of redoing.

Evidence datasets (clusters, contamination matches, pass rates) are written first and the curated
dataset last, naming their versions as parents: a run interrupted anywhere leaves every dataset at a
complete version, and the curated dataset never points at evidence that does not exist.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.artifacts import artifact_key
from flows.config import DataConfig, PipelineConfig, SourceConfig
from flows.curate import guard
from flows.curate.guard import Span, reason_kind
from flows.curate.ingest import Ingested, check_source, load_items, read_benchmark, read_table
from flows.curate.result import StepResult
from flows.curate.scale.report import from_clusters
from flows.curate.step_tasks import inline, map_reduce, mapped
from flows.curate.steps import (
    AnswerCheck,
    Clean,
    Decontaminate,
    EmbeddingDedup,
    ExactDedup,
    MinhashDedup,
    MinhashDedupOnDask,
    PassRate,
    SeparateSFT,
)
from flows.curate.text import normalized
from flows.data.synthetic_math import generate_for, load_benchmark
from flows.datasets import CURATED, dataset_name
from flows.errors import ConfigError
from flows.lineage import RELEASE, config_inputs, file_digest, reuse_or_build
from flows.runner import CACHED, ROW, Tasks, fingerprint, on_runner
from flows.schema import ITEM_COLUMNS, QUARANTINE_REASON, validate_items
from flows.store import DatasetStore
from verifiers.scoring import DEFAULT_VERIFIERS


@task(name="ingest", **CACHED)
def ingest_task(spec: SourceConfig, content: str) -> Ingested:
    return read_source(spec)


@task(name="generate", **CACHED)
def generate_task(cfg: DataConfig) -> Ingested:
    valid, bad = validate_items(generate_for(cfg))
    return Ingested(valid, bad, 0, valid.height + bad.height)


def sources(config: PipelineConfig) -> list[SourceConfig]:
    if config.curate.sources:
        return config.curate.sources
    if config.data.input_path:
        return [SourceConfig(path=config.data.input_path)]
    return []


def read_source(spec: SourceConfig) -> Ingested:
    return load_items(
        spec.path,
        source=spec.name,
        mapping=spec.mapping,
        domain=spec.domain,
        task=spec.task,
        split=spec.split,
        preset=spec.preset,
    )


def preflight(config: PipelineConfig, pass_rate: bool = True) -> None:
    """Read curation's inputs once, so that a bad file, mapping or setting fails in the first seconds
    with one line, before the Prefect server starts or anything is written: every source (as
    `check_source` judges it), the benchmarks, the SFT set and the pass-rate policy. The flow checks the
    same again (deployments start it without this)."""
    c = config.curate
    for spec in sources(config):
        check_source(read_source(spec), spec.path, c.max_removed_share)
    benchmarks(config.data)
    if c.sft_path:
        read_table(c.sft_path, strict=True)
    if pass_rate and c.pass_rate.enabled and not c.pass_rate.policy.configured:
        raise ConfigError(PASS_RATE_POLICY)


PASS_RATE_POLICY = (
    "curate.pass_rate needs a policy: set curate.pass_rate.policy.checkpoint or .endpoint.url "
    "(in `m1 run` the SFT warm-start model is the default)"
)


def curation_inputs(config: PipelineConfig, pass_rate: bool = True) -> dict:
    """What the curated dataset is built from (flows/lineage.py): the settings curation reads, and its
    source, benchmark and SFT files by content."""
    cache = DatasetStore(config.home).root / "cache"
    paths = [s.path for s in sources(config)] + [b.path for b in config.data.benchmarks]
    paths += [config.curate.sft_path] if config.curate.sft_path else []
    settings = config_inputs("curated", config)
    if pass_rate and config.curate.pass_rate.enabled:  # filtered here too (`m1 curate run`)
        settings |= config_inputs("pass-rate", config)
    return {"config": settings, "files": {p: file_digest(p, cache) for p in paths}, "release": RELEASE}


@flow(name="m1-curate", flow_run_name="{config.name}-curate", log_prints=True)
def curate_flow(config: PipelineConfig = PipelineConfig(), pass_rate: bool = True) -> dict:  # noqa: B008
    """Curate RL items into the dataset store; returns the curated dataset's manifest (as a dict), why
    it was built (``built_because``), whether this run reused it, and the final state of every task run.

    Nothing runs when the curated dataset's latest build was made from the same inputs (settings and
    files by content): its recorded result is returned. Otherwise the steps run as a subflow on the
    configured task runner (local threads, or Dask through prefect-dask), with task results persisted in
    the store's cache folder; both settings travel with the tasks to Dask workers. Deployments run this
    flow as it is. ``pass_rate=False`` leaves pass-rate filtering to a later `pass_rate_flow` (the DAG
    filters with its own SFT model).
    """
    store = DatasetStore(config.home)
    build = lambda: on_runner(curate_steps, config.runner, store.root)(config, pass_rate)  # noqa: E731
    name = dataset_name(config.name, CURATED)
    inputs = curation_inputs(config, pass_rate)
    return reuse_or_build(store, name, curate_flow.name, inputs, build, get_run_logger())


@flow(name="m1-curate-steps", flow_run_name="{config.name}-curate-steps", log_prints=True)
def curate_steps(config: PipelineConfig, pass_rate: bool = True) -> dict:
    """The curation steps themselves (see the module docstring)."""
    logger = get_run_logger()
    c = config.curate
    store = DatasetStore(config.home)
    tasks = Tasks()
    inputs = [tasks.one(ingest_task, s, fingerprint(s.path)) for s in sources(config)] or [
        tasks.one(generate_task, config.data)
    ]
    spans, start = [], 0
    for spec, got in zip(sources(config) or [None], inputs, strict=True):
        if spec is None:
            span = Span("the bundled generator", 0, got.items.height)
        else:
            span = check_source(got, spec.path, c.max_removed_share)
        spans.append(Span(span.label, start, start + got.items.height, span.columns, span.mapping))
        start += got.items.height
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
    mappings = [got.record(spec.path) for spec, got in zip(sources(config), inputs, strict=False)]
    for spec, got in zip(sources(config), inputs, strict=False):
        logger.info("%s: columns %s", spec.path, got.describe_mapping())

    results: list[StepResult] = []
    df = items
    n = config.runner.shards

    def record(res: StepResult, guarded: bool = True) -> pl.DataFrame:
        """Keep the step's result; a guarded step that empties a source fails the run (flows/curate/guard.py)."""
        results.append(res)
        logger.info(
            "%s: %d -> %d (%s)", res.count.step, res.count.rows_in, res.count.rows_out, res.count.reason
        )
        if guarded:
            for span in spans:
                reasons = res.removed.filter(span.mask(res.removed[ROW]))[QUARANTINE_REASON].to_list()
                rows_in = int(span.mask(df[ROW]).sum())
                guard.check(span, res.count.step, rows_in, reasons, c.max_removed_share)
        return res.kept

    if c.clean.enabled:
        df = record(mapped(tasks, Clean(c.clean), df, n))
    df = record(mapped(tasks, ExactDedup(), df, n, by=normalized(pl.col("prompt"))))
    if config.runner.kind == "dask":  # every stage on the workers (flows/curate/scale)
        scratch = str(store.root / "scratch" / f"{config.name}-minhash")
        df = record(inline(tasks, MinhashDedupOnDask(c.minhash, n, scratch), df))
    else:
        df = record(map_reduce(tasks, MinhashDedup(c.minhash), df, n))
    if c.embedding.enabled:
        df = record(map_reduce(tasks, EmbeddingDedup(c.embedding.threshold), df, n))
    if c.sft_path:
        df = record(mapped(tasks, SeparateSFT(read_table(c.sft_path, strict=True), c.minhash), df, n))
    df = record(mapped(tasks, Decontaminate(benchmarks(config.data), c), df, n))
    df = record(mapped(tasks, AnswerCheck(), df, n))
    if c.pass_rate.enabled and pass_rate:
        if not c.pass_rate.policy.configured:
            raise ConfigError(PASS_RATE_POLICY)
        step = PassRate(c.pass_rate, None, c.pass_rate.policy.model_dump_json(), {}, config.plugin_dirs)
        df = record(mapped(tasks, step, df, n), guarded=False)  # kept share: the policy's

    per_source = [
        {
            "source": span.label,
            "rows read": got.rows_read,
            "quarantined at ingest": got.quarantined.height,
            "rows in": span.hi - span.lo,
            "rows out": int(span.mask(df[ROW]).sum()),
        }
        for span, got in zip(spans, inputs, strict=True)
    ]
    manifest = write_outputs(store, config, items, df, quarantine, results, mappings, per_source)
    logger.info("%d of %d tasks resumed from cache", tasks.cached, len(tasks.states))
    report(manifest.ref, results, quarantine, tasks.states)
    return {"manifest": json.loads(manifest.to_json()), "tasks": tasks.states}


def benchmarks(cfg: DataConfig) -> dict[str, pl.DataFrame]:
    """The bundled tiny benchmark (its leaks are planted in the generated data) plus the configured ones."""
    return {"tiny_benchmark": load_benchmark()} | {
        b.label: read_benchmark(b.path, b.mapping, label=b.label, preset=b.preset) for b in cfg.benchmarks
    }


def write_outputs(
    store: DatasetStore,
    config: PipelineConfig,
    items: pl.DataFrame,
    kept: pl.DataFrame,
    quarantine: pl.DataFrame,
    results: list[StepResult],
    mappings: list[dict] | None = None,
    per_source: list[dict] | None = None,
):
    """Evidence first, the curated dataset last (the commit point, naming the evidence as parents)."""
    name = dataset_name(config.name, CURATED)
    unused = DataConfig.GENERATOR if sources(config) else set()  # own data: the generator did not run
    params = config.data.model_dump(exclude=unused) | config.curate.model_dump(mode="json")
    if mappings:
        params["source_columns"] = mappings  # how each source's columns were read, inferred ones marked
    if per_source:
        params["per_source"] = per_source  # rows read, quarantined at ingest, in and out, per source
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
            kinds = Counter(reason_kind(why or "") for why in r.removed[QUARANTINE_REASON].to_list())
            lines += [f"- {kind}: {count}" for kind, count in kinds.most_common(5)]
        if r.clusters is not None and r.count.step.endswith("dedup"):
            lines += [f"- {line.strip()}" for line in from_clusters(r.clusters).lines()]
        lines.append("")
    create_markdown_artifact("\n".join(lines), key="curation-report", description=f"Curation of {ref}")


def filter_source(store: DatasetStore, name: str) -> str:
    """The version the pass-rate filter reads: the latest one a producer wrote (not one it filtered)."""
    latest = store.manifest(name)
    return latest.params.get("filtered_from", latest.ref)


def pass_rate_inputs(config: PipelineConfig, source: str, policy_id: str) -> dict:
    name, version = source.rsplit("@v", 1)
    return {
        "config": config_inputs("pass-rate", config),
        "datasets": {name: int(version)},
        "policy": policy_id,
        "release": RELEASE,
    }


def policy_identity(c, default_policy: str | None) -> str:
    """What samples the pass rates: the configured policy's settings, or the default checkpoint's id."""
    # heavy: torch, transformers
    from m1model.policy import checkpoint_id  # torch: only where a checkpoint samples

    return c.policy.model_dump_json() if c.policy.configured else checkpoint_id(Path(default_policy or ""))


@flow(name="m1-pass-rate", flow_run_name="{config.name}-pass-rate", log_prints=True)
def pass_rate_flow(config: PipelineConfig, datasets: list[str], default_policy: str | None = None) -> dict:
    """Section 4.1's pass-rate filter over datasets already in the store: each gets a new version keeping
    the items with low < pass rate < high, the rest in its quarantine, and `filtered_from` naming the
    version it filtered (the latest one its producer wrote). The policy is `curate.pass_rate.policy`,
    else ``default_policy`` (a checkpoint: in `m1 run`, the SFT warm start). Nothing runs for a dataset
    whose filtered version was made from the same inputs (source version, policy, settings)."""
    store, logger = DatasetStore(config.home), get_run_logger()
    policy_id = policy_identity(config.curate.pass_rate, default_policy)
    inputs = {name: pass_rate_inputs(config, filter_source(store, name), policy_id) for name in datasets}
    todo = [name for name in datasets if store.reusable(name, "m1-pass-rate", inputs[name]) is None]
    out: dict = {"manifests": {}, "tasks": []}
    if todo:
        for name in todo:
            logger.info("%s: filtering (%s)", name, store.why_rebuilt(name, "m1-pass-rate", inputs[name]))
        out = on_runner(pass_rate_steps, config.runner, store.root)(config, todo, default_policy, policy_id)
        for name in todo:
            manifest = out["manifests"][name]
            store.record_built(
                name, "m1-pass-rate", manifest["version"], inputs[name], {"manifest": manifest}
            )
    for name in datasets:
        record = store.reusable(name, "m1-pass-rate", inputs[name])
        store.make_latest(name, record["version"])
        if name not in todo:
            logger.info("%s@v%d: filtered from the same inputs before: reused", name, record["version"])
        out["manifests"][name] = record["result"]["manifest"]
    out["manifests"] = {name: out["manifests"][name] for name in datasets}
    return out


@flow(name="m1-pass-rate-steps", flow_run_name="{config.name}-pass-rate-steps", log_prints=True)
def pass_rate_steps(
    config: PipelineConfig, datasets: list[str], default_policy: str | None, policy_id: str
) -> dict:
    c = config.curate.pass_rate
    store = DatasetStore(config.home)
    tasks = Tasks()
    out = {}
    for name in datasets:
        source = filter_source(store, name)
        before = store.manifest(*_ref(source))
        df = store.read(*_ref(source)).with_row_index(ROW)
        step = PassRate(c, default_policy, policy_id, DEFAULT_VERIFIERS, config.plugin_dirs)
        res = mapped(tasks, step, df, config.runner.shards)
        old_quarantine = store.quarantine(*_ref(source))
        removed = res.removed.drop(ROW).with_columns(pl.lit("pass-rate").alias("step"))
        quarantine = pl.concat(
            [q for q in (old_quarantine, removed) if q is not None], how="diagonal_relaxed"
        )
        manifest = store.write(
            name,
            res.kept.drop(ROW),
            params=before.params | {"filtered_from": before.ref, "pass_rate": c.model_dump(mode="json")},
            parents=[before.ref, *before.parents],
            steps=[*before.steps, res.count],
            quarantine=quarantine,
        )
        get_run_logger().info(
            "%s: %d -> %d items (%s)", manifest.ref, res.count.rows_in, res.count.rows_out, res.count.reason
        )
        out[name] = json.loads(manifest.to_json())
    rows = [
        {
            "dataset": m["name"],
            "version": m["version"],
            "rows in": m["steps"][-1]["rows_in"],
            "rows out": m["rows"],
        }
        for m in out.values()
    ]
    create_table_artifact(
        rows,
        key=artifact_key(config.name, "pass-rate"),
        description=f"pass-rate filter over {c.k} samples per item",
    )
    return {"manifests": out, "tasks": tasks.states}


def _ref(ref: str) -> tuple[str, int]:
    name, version = ref.rsplit("@v", 1)
    return name, int(version)
