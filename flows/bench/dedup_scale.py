"""`m1 bench dedup --runner dask --docs 200000,2000000,...`: the distributed engine (flows/curate/scale) at
growing corpus sizes, beside datatrove's MinHash pipeline on the same corpus.

Per size: the bench corpus (`make_corpus`'s planted near-duplicates) written as Parquet shards of 100K
documents, each shard generated on its own (memory stays flat however large the corpus); then

- ours: `m1 curate dedup --method minhash --runner dask` in a fresh process (the driver), on a local
  cluster of `--workers` processes limited to `--memory-limit` each: wall seconds, the driver's peak RSS,
  each worker's peak RSS, the bytes its memory manager spilled to disk and the bytes P2P shuffles wrote;
- datatrove 0.10 (the anchor): its four MinHash stages (signatures, buckets, a one-task union-find
  cluster stage, filter) on its LocalPipelineExecutor with as many worker processes, the same word
  5-gram shingles (a `\\w+` word tokenizer, no other normalisation) and the same bands and rows as ours;
  it writes the kept documents, as ours does. Its peak is the largest of its processes' peaks.
- at the sizes up to `--check-docs`, the one-process engine too, and whether its clusters equal ours.

Time and memory growth per 10x and what 100M and 1B documents would take (extrapolated from the
two largest sizes measured) are printed below the table.

Not a flow: a benchmark (flows/bench), run through `m1 bench dedup`.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import resource
import shutil
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from flows.bench.load import LoadMeter, describe_start

SHARD_DOCS = 100_000
_WORD = re.compile(r"\w+")


def write_corpus(folder: Path, n_docs: int, make_corpus, seed: int = 0) -> Path:
    """`make_corpus`'s corpus of `n_docs` as Parquet shards, each made on its own (reused when complete)."""
    # heavy: polars; not at m1 start-up
    import polars as pl

    done = folder / "_COMPLETE"
    if done.exists() and done.read_text() == str(n_docs):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for k, start in enumerate(range(0, n_docs, SHARD_DOCS)):
        size = min(SHARD_DOCS, n_docs - start)
        c = make_corpus(size, seed=seed * 1_000_003 + k)
        ids = [f"d{start + i:010d}" for i in range(size)]
        pl.DataFrame({"id": ids, "prompt": c.texts}).write_parquet(
            folder / f"shard-{k:05d}.parquet", row_group_size=25_000
        )
    done.write_text(str(n_docs))
    return folder


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def _worker_stats(dask_worker) -> dict:
    """A worker's peak RSS and what it wrote to disk: spilled by its memory manager, and by P2P shuffles."""
    spill = shuffle = 0.0
    for key, value in dask_worker.digests_total.items():
        if isinstance(key, tuple) and key[-2:] == ("disk-write", "bytes"):
            if any("p2p" in str(part) or "shuffle" in str(part) for part in key[:-2]):
                shuffle += value
            else:
                spill += value
    return {"peak_mb": _peak_mb(), "spill_bytes": spill, "shuffle_disk_bytes": shuffle}


def run_ours(
    corpus: Path, out: Path, workers: int, memory_limit: str, partition_rows: int, result: Path
) -> None:
    """In a fresh process: the CLI's engine on a local cluster, timed, with everyone's peak memory."""
    # heavy: dask, distributed, polars; not at m1 start-up
    from flows.curate.scale.engine import Engine, Outputs, configured, dask_client
    from flows.curate.scale.sources import plan

    base = _peak_mb()
    t = time.perf_counter()
    with configured(), dask_client(workers, memory_limit, local_directory=str(out / "dask")) as client:
        engine = Engine(client, out / "work")
        res = engine.minhash(
            plan(corpus, partition_rows),
            Outputs(out / "kept", out / "clusters"),
            threshold=0.8,
            max_cluster=None,
        )
        seconds = time.perf_counter() - t
        stats = list(client.run(_worker_stats).values())
    result.write_text(
        json.dumps(
            {
                "seconds": seconds,
                "driver_mb": _peak_mb(),
                "driver_base_mb": base,
                "workers": stats,
                "kept": res.kept,
                "removed": res.removed,
                "rounds": res.rounds,
                "partitions": res.partitions,
                "stages": res.stages,
                "largest": res.report.largest[0].size if res.report.largest else 1,
            }
        )
    )


def run_local(corpus: Path, result: Path) -> None:
    """In a fresh process: the one-process engine on the whole corpus; its clusters for the check."""
    # heavy: polars; not at m1 start-up
    import polars as pl

    from flows.curate.dedup import minhash_dedup

    df = pl.read_parquet(corpus / "*.parquet")
    t = time.perf_counter()
    res = minhash_dedup(df, 0.8)
    seconds = time.perf_counter() - t
    res.clusters.write_parquet(result.with_suffix(".parquet"))
    result.write_text(json.dumps({"seconds": seconds, "peak_mb": _peak_mb()}))


class WordTokens:
    """datatrove word tokenizer with our shingles' words: `\\w+` runs (the text is already lower case)."""

    language = "en"

    def word_tokenize(self, text: str) -> list[str]:
        return _WORD.findall(text)

    def sent_tokenize(self, text: str) -> list[str]:
        return [text]

    def span_tokenize(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in _WORD.finditer(text)]


def xxh64(text: str) -> int:
    """datatrove's default shingle hash (xxhash64 of the UTF-8 n-gram)."""
    # heavy: xxhash (datatrove's dependency); not at m1 start-up
    import xxhash

    return xxhash.xxh64_intdigest(text.encode("utf-8"))


def run_datatrove(corpus: Path, out: Path, workers: int, bands: int, rows: int, result: Path) -> None:
    """In a fresh process: datatrove's four MinHash stages on its local executor."""
    # heavy: datatrove (bench extra); not at m1 start-up
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter
    from datatrove.utils.text import TextNormConfig
    from datatrove.utils.word_tokenizers import WordTokenizer

    tokens = type("Tokens", (WordTokens, WordTokenizer), {})()
    norm = TextNormConfig(
        lowercase=True,
        norm_whitespace=False,
        remove_punctuation=False,
        norm_unicode_diacritics=False,
        norm_numbers=False,
    )
    config = MinhashConfig(n_grams=5, num_buckets=bands, hashes_per_bucket=rows, norm_config=norm)
    shards = len(list(corpus.glob("*.parquet")))

    def reader():
        return ParquetReader(str(corpus), text_key="prompt", id_key="id", glob_pattern="*.parquet")

    signatures = MinhashDedupSignature(str(out / "sigs"), config=config, language=tokens)
    signatures._hash_func = xxh64  # datatrove 0.10's xxhash64 passes str, which xxhash 4 refuses

    logs = out / "logs"
    stages = [
        ([reader(), signatures], shards),
        ([MinhashDedupBuckets(str(out / "sigs"), str(out / "buckets"), config=config)], bands),
        ([MinhashDedupCluster(str(out / "buckets"), str(out / "remove_ids"), config=config)], 1),
        ([reader(), MinhashDedupFilter(str(out / "remove_ids")), ParquetWriter(str(out / "kept"))], shards),
    ]
    t = time.perf_counter()
    for k, (pipeline, tasks) in enumerate(stages):
        LocalPipelineExecutor(
            pipeline, tasks=tasks, workers=min(workers, tasks), logging_dir=str(logs / f"stage{k}")
        ).run()
    seconds = time.perf_counter() - t
    removed = sum(_count_removed(f) for f in (out / "remove_ids").glob("*.remove"))
    result.write_text(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": max(_peak_mb(), _peak_mb(resource.RUSAGE_CHILDREN)),
                "removed": removed,
            }
        )
    )


def _count_removed(path: Path) -> int:
    return path.stat().st_size // 4  # datatrove writes one uint32 document index per removed document


def _quietly(target, log: str, *args) -> None:
    """`target(*args)` with this process's and its children's output going to `log` (datatrove's and
    Dask's loggers print per task)."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    target(*args)


def _spawn(target, *args) -> dict:
    """Run `target(*args, result_path)` in a fresh process (its output in result_path.log) and return
    what it wrote."""
    result = Path(args[-1])
    log = str(result.with_suffix(".log"))
    proc = multiprocessing.get_context("spawn").Process(target=_quietly, args=(target, log, *args))
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        tail = Path(log).read_text(errors="replace")[-3000:] if Path(log).exists() else ""
        raise RuntimeError(
            f"{target.__name__} failed with exit code {proc.exitcode}; its output ends:\n{tail}"
        )
    return json.loads(result.read_text())


def bench_scale(
    console: Console,
    sizes: list[int],
    workers: int,
    memory_limit: str,
    partition_rows: int,
    work: Path,
    check_docs: int,
    anchor: bool,
    make_corpus,
) -> list[dict]:
    """Run both sides at every size and print the table; returns the measured rows."""
    # heavy: polars (lsh_params); not at m1 start-up
    from flows.curate.minhash import RECALL_WEIGHTS, lsh_params

    bands, rows = lsh_params(0.8, 128, RECALL_WEIGHTS)
    meter = LoadMeter()
    measured = []
    for n in sizes:
        with console.status(f"{n:,} documents: writing the corpus..."):
            corpus = write_corpus(work / f"corpus-{n}", n, make_corpus)
        scratch = work / f"run-{n}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        console.print(describe_start(f"before {n:,} documents"), highlight=False)
        with console.status(f"{n:,} documents: ours on Dask..."), meter.side(f"ours {n}"):
            ours = _spawn(
                run_ours,
                corpus,
                scratch / "ours",
                workers,
                memory_limit,
                partition_rows,
                scratch / "ours.json",
            )
        row = {"docs": n, "ours": ours}
        if anchor:
            with console.status(f"{n:,} documents: datatrove..."), meter.side(f"datatrove {n}"):
                row["datatrove"] = _spawn(
                    run_datatrove, corpus, scratch / "datatrove", workers, bands, rows, scratch / "dt.json"
                )
            shutil.rmtree(scratch / "datatrove", ignore_errors=True)
        if n <= check_docs:
            with console.status(f"{n:,} documents: the one-process engine, for the check..."):
                local = _spawn(run_local, corpus, scratch / "local.json")
            row["local"] = local | {
                "identical": _same_clusters(scratch / "ours" / "clusters", scratch / "local.parquet")
            }
        shutil.rmtree(scratch, ignore_errors=True)
        measured.append(row)
        console.print(_row_line(row), highlight=False)
    _print_table(console, measured, workers, memory_limit, bands, rows, meter)
    return measured


def _same_clusters(ours: Path, local: Path) -> bool:
    # heavy: polars; not at m1 start-up
    import polars as pl

    return pl.read_parquet(ours).equals(pl.read_parquet(local))


def _row_line(row: dict) -> str:
    o = row["ours"]
    line = f"{row['docs']:,} documents: ours {o['seconds']:.1f} s (driver {o['driver_mb']:.0f} MB)"
    if "datatrove" in row:
        line += f", datatrove {row['datatrove']['seconds']:.1f} s"
    if "local" in row:
        line += (
            f", one process {row['local']['seconds']:.1f} s, identical clusters: {row['local']['identical']}"
        )
    return line


def _mb(b: float) -> str:
    return f"{b / 2**20:,.0f}"


def _print_table(console, measured, workers, memory_limit, bands, rows, meter: LoadMeter) -> None:
    table = Table(
        title=f"MinHash dedup on Dask ({workers} workers, --memory-limit {memory_limit}), threshold 0.8, "
        f"{bands} bands x {rows} rows, word 5-grams; datatrove on the same corpus"
    )
    cols = [
        "docs",
        "seconds",
        "docs/s",
        "driver peak MB",
        "worker peak MB",
        "spilled MB",
        "shuffled to disk MB",
    ]
    cols += ["datatrove s", "datatrove docs/s", "datatrove peak MB", "ours × datatrove", "= one process"]
    for col in cols:
        table.add_column(col, justify="right")
    for row in measured:
        o, n = row["ours"], row["docs"]
        dt = row.get("datatrove")
        speed = meter.ratio(f"datatrove {n}", f"ours {n}", dt["seconds"] / o["seconds"]) if dt else ""
        table.add_row(
            f"{n:,}",
            f"{o['seconds']:.1f}",
            f"{n / o['seconds']:,.0f}",
            f"{o['driver_mb']:,.0f}",
            " / ".join(f"{w['peak_mb']:,.0f}" for w in o["workers"]),
            " / ".join(_mb(w["spill_bytes"]) for w in o["workers"]),
            " / ".join(_mb(w["shuffle_disk_bytes"]) for w in o["workers"]),
            f"{dt['seconds']:.1f}" if dt else "",
            f"{n / dt['seconds']:,.0f}" if dt else "",
            f"{dt['peak_mb']:,.0f}" if dt else "",
            speed,
            ("yes" if row["local"]["identical"] else "NO") if "local" in row else "",
        )
    console.print(table)
    for row in measured:
        o = row["ours"]
        line = f"{row['docs']:,}: {o['partitions']} partitions, {o['rounds']} components rounds, {o['removed']:,} removed"
        if "datatrove" in row:
            line += f" (datatrove, no Jaccard check: {row['datatrove']['removed']:,})"
        console.print(line, highlight=False)
        console.print(
            "  stages (s): " + ", ".join(f"{name} {s:.1f}" for name, s in o["stages"]), highlight=False
        )
    if len(measured) >= 2:
        a, b = measured[-2], measured[-1]
        scale = b["docs"] / a["docs"]
        t_ratio = b["ours"]["seconds"] / a["ours"]["seconds"]
        k = math.log(t_ratio) / math.log(scale)
        console.print(
            f"growth {a['docs']:,} -> {b['docs']:,} ({scale:.0f}x documents): time {t_ratio:.2f}x "
            f"(target <= {1.3 * scale:.0f}x), driver peak {b['ours']['driver_mb'] / a['ours']['driver_mb']:.2f}x "
            f"(target <= 1.3x); time ~ docs^{k:.2f}",
            highlight=False,
        )
        for target in (100_000_000, 1_000_000_000):
            if target > b["docs"]:
                est = b["ours"]["seconds"] * (target / b["docs"]) ** k
                linear = b["ours"]["seconds"] * target / b["docs"]
                console.print(
                    f"  {target:,} documents on these {workers} workers: {est / 3600:,.1f} h at that growth, "
                    f"{linear / 3600:,.1f} h if linear from {b['docs']:,} (fixed costs make small sizes' "
                    "growth look better than it stays)",
                    highlight=False,
                )
    console.print(meter.summary(), highlight=False)
    for row in measured:
        if "datatrove" in row and (why := meter.refusal(f"datatrove {row['docs']}", f"ours {row['docs']}")):
            console.print(f"ratio at {row['docs']:,} not reported: {why}", highlight=False)
