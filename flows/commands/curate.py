"""`m1 curate ...`: each curation step on a file, and the whole curation flow.

Inputs are JSONL or Parquet (or a `datasets` folder); a missing id column gets ids assigned (and said
so). Outputs are written atomically, as Parquet (or JSONL when the name ends in .jsonl).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.atomic import atomic_path
from flows.commands.pipeline import SetOpt
from flows.errors import InputError
from flows.logs import run_flow

if TYPE_CHECKING:
    import polars as pl

    from flows.curate.result import StepResult

app = typer.Typer(no_args_is_help=True)
console = Console(stderr=True, soft_wrap=True)  # one line per message, also in logs

Input = Annotated[Path, typer.Option("--input", "-i", help="JSONL, Parquet or datasets folder.")]
Output = Annotated[Path, typer.Option("--output", "-o", help="Kept rows (.parquet or .jsonl).")]
TextColumn = Annotated[str, typer.Option("--text-column", help="Column holding the text.")]
IdColumn = Annotated[str, typer.Option("--id-column", help="Column holding row ids (assigned when absent).")]
Removed = Annotated[
    Path | None, typer.Option("--removed", help="Also write the removed rows with a reason column.")
]


def read_input(path: Path, id_column: str, need: list[str]) -> pl.DataFrame:
    # heavy: polars; not at m1 start-up
    from flows.curate.scale.sources import fill_ids, read_all

    df = read_all(path)
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)} (has: {', '.join(df.columns) or 'none'})"
        )
    df, filled, was_missing = fill_ids(df, id_column, path.stem)
    if was_missing:
        console.print(
            f"{path}: no {id_column!r} column: assigned ids to {df.height} rows ({path.stem}-000000...)"
        )
    elif filled:
        console.print(f"{path}: assigned ids to {filled} rows with an empty {id_column!r}")
    return df


def write(df: pl.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        if path.suffix in (".jsonl", ".ndjson", ".json"):
            df.write_ndjson(tmp)
        else:
            df.write_parquet(tmp)


def finish(res: StepResult, output: Path, removed: Path | None, **evidence: Path | None) -> None:
    write(res.kept, output)
    if removed is not None:
        write(res.removed, removed)
    for field, path in evidence.items():
        if path is not None:
            write(getattr(res, field), path)
    c = res.count
    console.print(
        f"[bold]{c.step}[/]: {c.rows_in} in, {c.rows_out} kept, {c.removed} removed ({c.reason}) -> {output}",
        highlight=False,
    )


def parse_map(pairs: list[str] | None) -> dict[str, str]:
    """``--map canonical=column`` pairs (`m1 curate ingest`, `m1 verify`)."""
    mapping = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"--map {item!r}: expected field=column, e.g. prompt=problem")
        mapping[key.strip()] = value.strip()
    return mapping


@app.command("ingest")
def ingest(
    input: Input,
    name: Annotated[str, typer.Option("--name", "-n", help="Dataset name in the store.")],
    map_: Annotated[
        list[str] | None, typer.Option("--map", help="canonical=column, e.g. prompt=problem (repeatable).")
    ] = None,
    source: Annotated[str | None, typer.Option(help="Source name (default: the file name).")] = None,
    domain: Annotated[str, typer.Option(help="Domain of rows without one.")] = "math",
    split: Annotated[str | None, typer.Option(help="Split of a datasets folder with several.")] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help="The file's public schema: gsm8k, math, numina, humaneval, mbpp, apps, codecontests, "
            "swebench (default: detected from the columns)."
        ),
    ] = None,
    max_removed_share: Annotated[
        float,
        typer.Option(min=0, max=1, help="Quarantining more of the rows than this is an error (1: never)."),
    ] = 0.9,
) -> None:
    """Read a file into canonical RL items in the dataset store; bad rows are quarantined with a reason.
    The file passes the source checks of `m1 run` first, and nothing is written when it fails one: a
    file with no rows or no valid item, rows mostly quarantined (a column read wrongly), math items
    with no reference (the answer column not found)."""
    # heavy: polars; not at m1 start-up
    from flows.curate.ingest import check_source, load_items
    from flows.store import DatasetStore, StepCount

    mapping = parse_map(map_)
    got = load_items(input, source=source, mapping=mapping, domain=domain, split=split, preset=preset)
    check_source(got, str(input), max_removed_share)
    manifest = DatasetStore().write(
        name,
        got.items,
        quarantine=got.quarantined,
        params={"input": str(input), **got.record(str(input))},
        steps=[
            StepCount("ingest", got.rows_read, got.items.height, "broken lines and invalid rows quarantined")
        ],
    )
    console.print(f"{input}: columns {got.describe_mapping()}", highlight=False)
    console.print(
        f"{input}: {got.rows_read} rows read, {got.items.height} items, {got.quarantined.height} "
        f"quarantined, {got.ids_assigned} ids assigned -> {manifest.ref}",
        highlight=False,
    )


@app.command("dedup")
def dedup(
    input: Annotated[
        Path,
        typer.Option(
            "--input", "-i", help="JSONL, Parquet, a folder of Parquet shards or a datasets folder."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Kept rows: a .parquet (or .jsonl) file, or a folder of parts."),
    ],
    clusters: Annotated[
        Path, typer.Option("--clusters", help="Every input id with its cluster id (file or folder of parts).")
    ],
    method: Annotated[str, typer.Option("--method", help="exact | minhash | embedding")] = "minhash",
    threshold: Annotated[
        float | None,
        typer.Option(help="Jaccard (minhash, default 0.8) or cosine (embedding, default 0.95) threshold."),
    ] = None,
    text_column: TextColumn = "prompt",
    id_column: IdColumn = "id",
    num_perm: Annotated[int, typer.Option(help="MinHash permutations.")] = 128,
    shingle_size: Annotated[int, typer.Option(help="Word n-gram size of MinHash shingles.")] = 5,
    mode: Annotated[
        str, typer.Option(help="MinHash hashing: fast, or compat (datasketch-identical).")
    ] = "fast",
    removed: Removed = None,
    runner: Annotated[
        str, typer.Option(help="local (one process) or dask (a local cluster, or --dask-address).")
    ] = "local",
    workers: Annotated[int, typer.Option(min=1, help="Worker processes of the local Dask cluster.")] = 2,
    memory_limit: Annotated[
        str | None,
        typer.Option(help="Memory of each local Dask worker, e.g. 1GB (it spills to disk before)."),
    ] = None,
    dask_address: Annotated[
        str | None, typer.Option(help="Scheduler of an existing Dask cluster, e.g. tcp://host:8786.")
    ] = None,
    partition_rows: Annotated[
        int, typer.Option(min=1, help="Rows per Dask partition (Parquet row groups are never split).")
    ] = 50_000,
    max_cluster: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="A cluster of more rows fails, naming it (default curate.minhash.max_cluster; 0: no limit).",
        ),
    ] = None,
    work_dir: Annotated[
        Path | None,
        typer.Option(
            help="Scratch folder of the Dask runner (default: beside --output; shared by all workers)."
        ),
    ] = None,
) -> None:
    """Remove duplicates: one row per cluster is kept (the first). `--runner dask` gives the same clusters
    as `--runner local`, with no stage on the driver."""
    # heavy: polars, pydantic; not at m1 start-up
    from flows.config import MinhashConfig
    from flows.curate.dedup import embedding_dedup, exact_dedup, minhash_dedup
    from flows.curate.scale.report import from_clusters

    if method not in ("exact", "minhash", "embedding"):
        raise InputError(f"--method: {method!r} is not one of exact, minhash, embedding")
    if mode not in ("fast", "compat"):
        raise InputError(f"--mode: {mode!r} is not one of fast, compat")
    if runner not in ("local", "dask"):
        raise InputError(f"--runner: {runner!r} is not one of local, dask")
    if threshold is not None and not 0 < threshold <= 1:
        raise InputError(f"--threshold: {threshold} is not in (0, 1]")
    limit = MinhashConfig().max_cluster if max_cluster is None else max_cluster
    if runner == "dask":
        if method == "embedding":
            raise InputError(
                "--runner dask: embedding dedup runs on one machine (--runner local); exact and minhash scale out"
            )
        return _dedup_on_dask(
            input,
            output,
            clusters,
            removed,
            method,
            threshold or 0.8,
            text_column,
            id_column,
            num_perm,
            shingle_size,
            mode,
            workers,
            memory_limit,
            dask_address,
            partition_rows,
            limit or None,
            work_dir,
        )
    df = read_input(input, id_column, [text_column])
    if method == "exact":
        res = exact_dedup(df, text_column, id_column)
    elif method == "minhash":
        res = minhash_dedup(df, threshold or 0.8, num_perm, shingle_size, text_column, id_column, mode=mode)
    else:
        res = embedding_dedup(df, threshold or 0.95, text_column, id_column)
    report = from_clusters(res.clusters)
    report.check(limit or None, res.count.step)
    for path, frame in ((output, res.kept), (clusters, res.clusters), (removed, res.removed)):
        if path is not None:
            write(frame, path if path.suffix else _one_part(path))
    c = res.count
    console.print(
        f"[bold]{c.step}[/]: {c.rows_in} in, {c.rows_out} kept, {c.removed} removed ({c.reason}) -> {output}",
        highlight=False,
    )
    for line in report.lines():
        console.print(line, highlight=False)


def _one_part(folder: Path) -> Path:
    """A folder output of the one-process runner: one part, as the Dask runner's folders hold several."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: exists and is not a folder (give a .parquet or .jsonl name for a file)")
    for stale in folder.glob("part-*.parquet"):  # an earlier run's parts would be read with this one's
        stale.unlink()
    return folder / "part-00000.parquet"


def _dedup_on_dask(
    input: Path,
    output: Path,
    clusters: Path,
    removed: Path | None,
    method: str,
    threshold: float,
    text_column: str,
    id_column: str,
    num_perm: int,
    shingle_size: int,
    mode: str,
    workers: int,
    memory_limit: str | None,
    dask_address: str | None,
    partition_rows: int,
    max_cluster: int | None,
    work_dir: Path | None,
) -> None:
    """`m1 curate dedup --runner dask`: the engine of flows/curate/scale on a local or existing cluster."""
    # heavy: dask, distributed, polars; not at m1 start-up
    import shutil
    import tempfile

    from flows.curate.scale.engine import Engine, Outputs, configured, dask_client
    from flows.curate.scale.sources import plan
    from flows.progress import bars, rich_progress

    source = plan(input, partition_rows)
    if not source.parts:
        raise InputError(f"{input}: no rows")
    if dask_address and (workers != 2 or memory_limit):
        console.print(
            "--workers and --memory-limit are ignored with --dask-address (the cluster has its own)"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".m1-dedup-", dir=work_dir or output.parent))
    try:
        with configured(), dask_client(workers, memory_limit, dask_address, str(work / "dask")) as client:
            console.print(
                f"{input}: {source.rows:,} rows in {len(source.parts)} partitions; Dask dashboard: "
                f"{client.dashboard_link}",
                highlight=False,
            )
            with bars(console) as progress:
                engine = Engine(client, work, progress=lambda name: rich_progress(progress, name))
                out = Outputs(output, clusters, removed)
                if method == "exact":
                    res = engine.exact(
                        source, out, text_column=text_column, id_column=id_column, max_cluster=max_cluster
                    )
                else:
                    res = engine.minhash(
                        source,
                        out,
                        text_column=text_column,
                        id_column=id_column,
                        threshold=threshold,
                        num_perm=num_perm,
                        shingle_size=shingle_size,
                        mode=mode,
                        max_cluster=max_cluster,
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if res.ids_filled:
        console.print(
            f"{input}: assigned ids to {res.ids_filled} rows ({source.stem}-000000...)", highlight=False
        )
    console.print(
        f"[bold]{res.step}[/]: {res.rows} in, {res.kept} kept, {res.removed} removed ({res.summary}) -> {output}",
        highlight=False,
    )
    console.print(
        "stages: "
        + ", ".join(f"{name} {seconds:.1f}s" for name, seconds in res.stages)
        + (f"; {res.rounds} components rounds" if res.rounds else ""),
        highlight=False,
    )
    for line in res.report.lines():
        console.print(line, highlight=False)


@app.command("decontaminate")
def decontaminate(
    input: Input,
    benchmark: Annotated[list[Path], typer.Option("--benchmark", "-b", help="Benchmark file (repeatable).")],
    output: Output,
    matches: Annotated[
        Path, typer.Option("--matches", help="Removed id, benchmark, benchmark id, method, score.")
    ],
    ngram: Annotated[int, typer.Option(help="n of the word n-gram overlap.")] = 13,
    embedding_threshold: Annotated[
        float | None, typer.Option(help="Also remove rows this cosine-close to a benchmark item.")
    ] = None,
    text_column: TextColumn = "prompt",
    id_column: IdColumn = "id",
    benchmark_text_column: Annotated[
        str, typer.Option(help="Text column of the benchmark files.")
    ] = "prompt",
    removed: Removed = None,
) -> None:
    """Remove rows overlapping benchmark items; say which item each removed row matched."""
    # heavy: polars; not at m1 start-up
    from flows.curate.contamination import decontaminate as run
    from flows.curate.ingest import read_table

    if ngram < 1:
        raise InputError(f"--ngram: must be at least 1, got {ngram}")
    df = read_input(input, id_column, [text_column])
    benches = {b.stem: read_table(b, strict=True) for b in benchmark}
    res = run(
        df,
        benches,
        ngram=ngram,
        embedding_threshold=embedding_threshold,
        text_column=text_column,
        id_column=id_column,
        benchmark_text_column=benchmark_text_column,
    )
    finish(res, output, removed, matches=matches)


@app.command("clean")
def clean(
    input: Input,
    output: Output,
    endpoint: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible URL (…/v1) to rewrite multiple choice as open-ended."),
    ] = None,
    model: Annotated[str, typer.Option(help="Model name at --endpoint.")] = "",
    id_column: IdColumn = "id",
    removed: Removed = None,
) -> None:
    """Drop empty, garbled, broken-LaTeX, multi-part, proof and binary items; reformulate multiple choice."""
    # heavy: polars; not at m1 start-up
    from flows.curate.clean import clean as run
    from verifiers.endpoint import Endpoint

    df = read_input(input, id_column, ["prompt", "reference"])
    finish(run(df, Endpoint(url=endpoint, model=model) if endpoint else None), output, removed)


@app.command("answers")
def answers(input: Input, output: Output, id_column: IdColumn = "id", removed: Removed = None) -> None:
    """Extract answers from reference solutions; keep rows whose answer math-verify parses."""
    # heavy: polars; not at m1 start-up
    from flows.curate.answers import extract_answers

    finish(extract_answers(read_input(input, id_column, ["reference"])), output, removed)


@app.command("passrate")
def passrate(
    input: Input,
    output: Output,
    rates: Annotated[Path, typer.Option("--rates", help="Every row's pass rate.")],
    endpoint: Annotated[str | None, typer.Option(help="OpenAI-compatible URL (…/v1) of the policy.")] = None,
    model: Annotated[str, typer.Option(help="Model name at --endpoint.")] = "",
    api: Annotated[str, typer.Option(help="chat or completions")] = "chat",
    checkpoint: Annotated[
        Path | None, typer.Option(help="m1model checkpoint folder, sampled in process.")
    ] = None,
    k: Annotated[int, typer.Option("-k", "--k", help="Responses sampled per item.")] = 8,
    low: Annotated[float, typer.Option(help="Keep pass rate > low.")] = 0.0,
    high: Annotated[float, typer.Option(help="Keep pass rate < high.")] = 0.9,
    max_tokens: Annotated[int, typer.Option(help="Tokens per response.")] = 1024,
    id_column: IdColumn = "id",
    removed: Removed = None,
) -> None:
    """Sample k responses per item from a policy, verify them, keep low < pass rate < high."""
    # heavy: polars; not at m1 start-up
    from flows.config import EndpointConfig, PolicyConfig
    from flows.curate.passrate import passrate_filter
    from flows.policy import make_sampler

    if (endpoint is None) == (checkpoint is None):
        raise InputError("passrate: give exactly one policy: --endpoint URL or --checkpoint DIR")
    if api not in ("chat", "completions"):
        raise InputError(f"--api: {api!r} is not one of chat, completions")
    if checkpoint is not None and not (checkpoint / "config.json").exists():
        raise InputError(f"{checkpoint}: not a model checkpoint folder (no config.json)")
    df = read_input(input, id_column, ["prompt"])
    policy = PolicyConfig(
        checkpoint=str(checkpoint) if checkpoint else None,
        endpoint=EndpointConfig(url=endpoint, model=model, api=api),
        max_tokens=max_tokens,
    )
    sampler = make_sampler(policy)
    finish(
        passrate_filter(df, sampler, k=k, low=low, high=high, id_column=id_column),
        output,
        removed,
        rates=rates,
    )


@app.command("run")
def run(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Pipeline config (TOML/YAML/JSON).")
    ] = None,
    set_: SetOpt = None,
    runner: Annotated[str | None, typer.Option(help="local or dask (overrides runner.kind).")] = None,
) -> None:
    """The whole curation flow into the dataset store (a Prefect flow run with cached steps); nothing
    runs when the curated dataset was built from the same settings and files before."""
    # heavy: prefect, polars; not at m1 start-up
    from flows.config import load_config
    from flows.curate.flow import curate_flow, preflight
    from flows.curate.ingest import describe_mapping
    from flows.store import DatasetStore

    overrides = list(set_ or []) + ([f"runner.kind={runner}"] if runner else [])
    cfg = load_config(config, overrides)
    preflight(cfg)  # bad sources, mappings and settings fail here, before Prefect starts
    out = run_flow(curate_flow, cfg)
    manifest = out["manifest"]
    table = Table(title=f"{manifest['name']}@v{manifest['version']}: {manifest['rows']} items")
    for col in ("step", "in", "out", "removed", "why"):
        table.add_column(col, justify="left" if col in ("step", "why") else "right")
    for s in manifest["steps"]:
        table.add_row(s["step"], str(s["rows_in"]), str(s["rows_out"]), str(s["removed"]), s["reason"])
    Console().print(table)
    for source in manifest["params"].get("source_columns", []):
        cols = describe_mapping(
            source["mapping"], source["inferred"], source.get("preset"), source.get("detected", False)
        )
        console.print(f"{source['path']}: columns {cols}", highlight=False)
    store = DatasetStore(cfg.home).root
    if out["reused"]:
        console.print(
            f"unchanged: built from the same inputs before (built because: {out['built_because']}); nothing "
            f"ran; store: {store}",
            highlight=False,
            soft_wrap=True,
        )
        return
    cached = sum(state == "Cached" for _, state in out["tasks"])
    console.print(
        f"built because: {out['built_because']}; {cached} of {len(out['tasks'])} tasks resumed from cache; "
        f"store: {store}",
        highlight=False,
        soft_wrap=True,
    )
