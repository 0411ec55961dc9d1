"""Near-duplicate (MinHash LSH) and exact dedup on Dask, with no stage on the driver and the same
clusters as the one-process engine (flows/curate/dedup.py) for any number of workers and partitions.

The stages (each one Dask computation, shown as a progress bar; a failure names its stage and, from a
partition function, the partition):

1. sketch: each worker reads its input partition (flows/curate/scale/sources.py), fills ids, hashes the
   shingles, and writes every document's distinct shingle hashes beside its row and id (`sets`, one
   Parquet file per input partition: "where the shingles live").
2. buckets: each sets partition's signatures and band keys; the keys go through Dask's P2P shuffle
   (on disk, not through the driver), and each shuffled partition turns its buckets into candidate pairs
   exactly as `candidate_pairs` does (all pairs of a small bucket, a star from the first row of a large one).
3. verify: candidates are routed (a P2P shuffle by input-row range) to the partition holding i's set,
   de-duplicated and given that set, then routed to j's partition, where their exact Jaccard is computed;
   pairs under the threshold are dropped. Every edge of a cluster is verified.
4. components: large-star / small-star rounds over the verified edges (flows/curate/scale/components.py);
   the smallest row of a component is its first in input order, hence the row it keeps.
5. clusters: each removed row's cluster id and similarity to the kept row, computed where the two sets
   live; then the cluster-size report and the `max_cluster` guard, from small aggregates.
6. write: each input partition is read again and written as Parquet parts of the kept rows, the clusters
   (every input id) and optionally the removed rows with their reasons, in input order.

Exact dedup shuffles (normalised text, row, id) by the text, and each group keeps its first row; stages 5
and 6 are the same. The driver holds the plan (a few numbers per partition) and one count per
components round, never a per-document structure.

Not a flow: the engine of `m1 curate dedup --runner dask` and of the curation flow's dedup steps on Dask.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from distributed import Client, LocalCluster, as_completed, futures_of

from flows.curate.dedup import EXACT, labelled, minhash_wording
from flows.curate.minhash import RECALL_WEIGHTS, hash_shingles, lsh_params
from flows.curate.result import StepResult
from flows.curate.scale import ops
from flows.curate.scale.components import connected_components
from flows.curate.scale.report import LARGEST, ClusterReport, Largest, histogram
from flows.curate.scale.sources import Part, Source, fill_ids, plan, read_part
from flows.curate.text import normalized
from flows.errors import InputError, M1Error
from flows.progress import ProgressFn
from flows.store import StepCount

STATS = {"partition": "int64", "rows": "int64", "active": "int64", "ids_filled": "int64"}
WRITTEN = {"partition": "int64", "rows": "int64", "kept": "int64", "removed": "int64", "ids_filled": "int64"}


class StageError(M1Error):
    """A stage failed: the message names the stage and, when a partition function raised, the partition."""


@dataclass(frozen=True)
class Staged:
    """A partition function that names its stage and partition when it fails (picklable for workers)."""

    stage: str
    fn: Callable
    kwargs: tuple = ()
    partition: bool = False  # pass the partition's number to `fn`

    def __call__(self, *frames, partition_info: dict | None = None):
        k = (partition_info or {}).get("number")
        where = f"partition {k}" if k is not None else "a partition"
        if frames and isinstance(frames[0], tuple) and len(frames[0]) == 2 and isinstance(frames[0][1], Part):
            k, part = frames[0]  # from_map's (number, part): name the file and rows too
            where = f"partition {k} ({part.path}, rows {part.start}-{part.start + part.rows - 1})"
        try:
            extra = {"partition": k} if self.partition else {}
            return self.fn(*frames, **extra, **dict(self.kwargs))
        except StageError:
            raise
        except Exception as exc:  # noqa: BLE001 - re-raised with the stage and partition named
            raise StageError(f"stage {self.stage}, {where}: {type(exc).__name__}: {exc}") from None


@dataclass
class Outputs:
    kept: Path
    clusters: Path
    removed: Path | None = None

    def items(self) -> list[tuple[str, Path]]:
        return [
            (k, p)
            for k, p in (("kept", self.kept), ("clusters", self.clusters), ("removed", self.removed))
            if p
        ]


@dataclass
class Result:
    step: str
    summary: str
    rows: int
    kept: int
    removed: int
    ids_filled: int
    partitions: int
    report: ClusterReport
    stages: list[tuple[str, float]] = field(default_factory=list)
    rounds: int = 0


@contextlib.contextmanager
def dask_client(
    workers: int = 2,
    memory_limit: str | None = None,
    address: str | None = None,
    local_directory: str | None = None,
) -> Iterator[Client]:
    """A client of the cluster at `address`, or of a local cluster of `workers` one-thread processes,
    each limited to `memory_limit` (spilling to `local_directory` before it fills)."""
    if address:
        with Client(address) as client:
            yield client
        return
    kwargs = {"local_directory": local_directory} if local_directory else {}
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            memory_limit=memory_limit or "auto",
            dashboard_address=":0",
            **kwargs,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class Engine:
    """Runs the stages on a Dask client, one progress bar per stage (`progress(name)` makes one)."""

    def __init__(self, client: Client, work_dir: Path, progress: Callable[[str], ProgressFn] | None = None):
        self.client = client
        self.work = Path(work_dir)
        self.progress = progress
        self.stages: list[tuple[str, float]] = []

    def persist(self, name: str, coll):
        """Materialise `coll` on the workers (spilled there under memory pressure), one bar tick per
        partition; a failure becomes a StageError naming the stage."""
        t = time.perf_counter()
        with self._named(name):
            coll = self.client.persist(coll)
            futures = futures_of(coll)
            bar = self.progress(name) if self.progress else None
            if bar:
                bar(0, len(futures))
            for k, f in enumerate(as_completed(futures), 1):
                if f.status == "error":
                    f.result()
                if bar:
                    bar(k, len(futures))
        self.stages.append((name, time.perf_counter() - t))
        return coll

    def compute(self, coll, name: str = "report"):
        """A small result (a count, a few rows) on the driver."""
        with self._named(name):
            if isinstance(coll, list):
                return self.client.gather(self.client.compute(coll))
            return self.client.compute(coll).result()

    @contextlib.contextmanager
    def _named(self, name: str) -> Iterator[None]:
        try:
            with self.client.as_current():  # dask-expr finds the client as the current one
                yield
        except M1Error:
            raise
        except Exception as exc:  # noqa: BLE001 - a shuffle's or the scheduler's failure: name the stage
            raise StageError(f"stage {name}: {type(exc).__name__}: {exc}") from None

    # --- shared stages ---------------------------------------------------------------------------

    def sets(self, source: Source) -> dd.DataFrame:
        paths = [str(self.work / "sets" / f"part-{k:05d}.parquet") for k in range(len(source.parts))]
        return dd.from_map(
            _read_sets, paths, meta=ops.empty(ops.SETS), divisions=source.divisions, enforce_metadata=False
        )

    def route(self, df: dd.DataFrame, column: str, source: Source) -> dd.DataFrame:
        """Rows of `df` to the partition of the input rows in `column` (a P2P shuffle by range)."""
        return df.set_index(column, divisions=list(source.divisions), shuffle_method="p2p")

    def report(self, removed: dd.DataFrame, rows: int) -> ClusterReport:
        """Cluster sizes from (m, v) of the removed rows: histogram and the largest, from small aggregates."""
        sizes = (
            removed[["m"]].assign(n=1).groupby("m").n.sum(split_out=removed.npartitions, shuffle_method="p2p")
        )
        sizes = self.persist("clusters: sizes", sizes.to_frame())
        hist, removed_rows, clusters, top = self.compute(
            [
                sizes.map_partitions(_bins, meta=pd.Series([], dtype="int64")),
                sizes.n.sum(),
                sizes.n.count(),
                sizes.map_partitions(_top, meta=_TOP_META),
            ],
            "clusters: sizes",
        )
        counts = {int(k): int(v) for k, v in (hist.groupby(level=0).sum() if len(hist) else hist).items()}
        if rows - removed_rows - clusters:
            counts[1] = int(rows - removed_rows - clusters)
        top = top.sort_values(["size", "m"], ascending=[False, True]).head(LARGEST)
        largest: list[Largest] = []
        if len(top):
            firsts = self.compute(
                removed[removed.m.isin(top["m"].tolist())].map_partitions(_first_members, meta=_FIRST_META),
                "clusters: largest",
            )
            firsts = firsts.sort_values("v").groupby("m").head(1).set_index("m")
            for m, size in zip(top["m"], top["size"], strict=True):
                row = firsts.loc[m]
                largest.append(Largest(str(row["cluster"]), int(size), [str(row["cluster"]), str(row["id"])]))
        return ClusterReport(rows=rows, removed=int(removed_rows), histogram=counts, largest=largest)

    def write(
        self, removed: dd.DataFrame, source: Source, out: Outputs, id_column: str, wording: tuple
    ) -> pd.DataFrame:
        dirs = {name: str(_parts_dir(path)) for name, path in out.items()}
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)
            Path(d).mkdir(parents=True)
        fmt = {
            name: "jsonl" if path.suffix in (".jsonl", ".ndjson", ".json") else "parquet"
            for name, path in out.items()
        }
        write = Staged(
            "write",
            write_part,
            (
                ("parts", source.parts),
                ("id_column", id_column),
                ("stem", source.stem),
                ("wording", wording),
                ("dirs", tuple(dirs.items())),
                ("fmt", tuple(fmt.items())),
            ),
            partition=True,
        )
        written = self.persist("write", removed.map_partitions(write, meta=ops.empty(WRITTEN)))
        stats = self.compute(written, "write")
        for name, path in out.items():
            _finish(Path(dirs[name]), path, fmt[name])
        return stats

    # --- the two methods -------------------------------------------------------------------------

    def minhash(
        self,
        source: Source,
        out: Outputs,
        *,
        text_column: str = "prompt",
        id_column: str = "id",
        threshold: float = 0.8,
        num_perm: int = 128,
        shingle_size: int = 5,
        mode: str = "fast",
        seed: int = 1,
        max_cluster: int | None = None,
    ) -> Result:
        (self.work / "sets").mkdir(parents=True, exist_ok=True)
        sketch = Staged(
            "sketch",
            sketch_part,
            (
                ("text_column", text_column),
                ("id_column", id_column),
                ("stem", source.stem),
                ("shingle_size", shingle_size),
                ("mode", mode),
                ("out_dir", str(self.work / "sets")),
            ),
        )
        self.persist("sketch", dd.from_map(sketch, list(enumerate(source.parts)), meta=ops.empty(STATS)))
        p = len(source.parts)
        bands, rows = lsh_params(threshold, num_perm, RECALL_WEIGHTS)
        sets = self.sets(source)
        keyed = sets.map_partitions(
            Staged(
                "buckets: band keys",
                ops.band_frame,
                (("num_perm", num_perm), ("bands", bands), ("rows", rows), ("seed", seed)),
            ),
            meta=ops.empty(ops.BANDS),
        )
        buckets = keyed.shuffle(on="key", npartitions=p, shuffle_method="p2p")
        candidates = self.persist(
            "buckets", buckets.map_partitions(Staged("buckets", ops.bucket_edges), meta=ops.empty(ops.EDGES))
        )
        first = dd.map_partitions(
            Staged("verify: first sets", ops.attach_first),
            self.route(candidates, "i", source),
            sets,
            meta=ops.empty({"i": "int64", "j": "int64", "set_i": ops.BLOB}),
            align_dataframes=False,
        )
        verified = dd.map_partitions(
            Staged("verify", ops.verify, (("threshold", threshold),)),
            self.route(first, "j", source),
            sets,
            meta=ops.empty(ops.EDGES),
            align_dataframes=False,
        )
        verified = self.persist("verify", verified)
        del candidates
        labels, rounds = connected_components(
            verified, p, self.persist, lambda c: self.compute(c, "components")
        )
        reps = dd.map_partitions(
            Staged("clusters: first rows", ops.attach_rep),
            self.route(labels, "m", source),
            sets,
            meta=ops.empty({"v": "int64", "m": "int64", "cluster": ops.TEXT, "set_m": ops.BLOB}),
            align_dataframes=False,
        )
        removed = dd.map_partitions(
            Staged("clusters", ops.rep_similarity),
            self.route(reps, "v", source),
            sets,
            meta=ops.empty(ops.REMOVED),
            align_dataframes=False,
        )
        removed = self.persist("clusters", removed)
        report = self.report(removed, source.rows)
        report.check(max_cluster)
        wording = minhash_wording(threshold, num_perm, shingle_size)
        written = self.write(removed, source, out, id_column, wording)
        return self._result(wording, source, written, report, rounds)

    def exact(
        self,
        source: Source,
        out: Outputs,
        *,
        text_column: str = "prompt",
        id_column: str = "id",
        max_cluster: int | None = None,
    ) -> Result:
        keys = Staged(
            "keys", key_part, (("text_column", text_column), ("id_column", id_column), ("stem", source.stem))
        )
        p = len(source.parts)
        keyed = dd.from_map(keys, list(enumerate(source.parts)), meta=ops.empty(ops.KEYS))
        groups = keyed.shuffle(on="key", npartitions=p, shuffle_method="p2p").map_partitions(
            Staged("groups", ops.exact_groups), meta=ops.empty(ops.REMOVED)
        )
        groups = self.persist("groups", groups)
        routed = self.route(groups, "v", source).map_partitions(_index_to_v, meta=ops.empty(ops.REMOVED))
        removed = self.persist("clusters", routed)
        report = self.report(removed, source.rows)
        report.check(max_cluster, "exact-dedup")
        written = self.write(removed, source, out, id_column, EXACT)
        return self._result(EXACT, source, written, report, 0)

    def _result(self, wording, source, written, report, rounds) -> Result:
        return Result(
            step=wording[0],
            summary=wording[1],
            rows=source.rows,
            kept=int(written["kept"].sum()),
            removed=int(written["removed"].sum()),
            ids_filled=int(written["ids_filled"].sum()),
            partitions=len(source.parts),
            report=report,
            stages=list(self.stages),
            rounds=rounds,
        )


# --- partition functions of the engine (they read and write files, unlike ops) ----------------------

_TOP_META = ops.empty({"m": "int64", "size": "int64"})
_FIRST_META = ops.empty({"m": "int64", "v": "int64", "id": ops.TEXT, "cluster": ops.TEXT})


def _bins(sizes: pd.DataFrame) -> pd.Series:
    h = histogram(sizes["n"].to_numpy(np.int64) + 1) if len(sizes) else {}
    return pd.Series(list(h.values()), index=list(h.keys()), dtype="int64")


def _top(sizes: pd.DataFrame) -> pd.DataFrame:
    df = pd.DataFrame({"m": sizes.index.to_numpy(np.int64), "size": sizes["n"].to_numpy(np.int64) + 1})
    return df.sort_values(["size", "m"], ascending=[False, True]).head(LARGEST)


def _first_members(removed: pd.DataFrame) -> pd.DataFrame:
    return removed.sort_values("v").groupby("m").head(1)[["m", "v", "id", "cluster"]]


def _index_to_v(df: pd.DataFrame) -> pd.DataFrame:
    return df.reset_index()[list(ops.REMOVED)]


def _read_sets(path: str) -> pd.DataFrame:
    table = pq.read_table(path)
    return table.to_pandas(types_mapper=pd.ArrowDtype).astype({"row": "int64"})


def _rows(part: Part, id_column: str, stem: str, need: list[str]) -> tuple[pl.DataFrame, int]:
    df = read_part(part)
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(
            f"{part.path}: missing column(s) {', '.join(missing)} (has: {', '.join(df.columns) or 'none'})"
        )
    df, filled, _ = fill_ids(df, id_column, stem, part.start)
    return df, filled


def sketch_part(
    item: tuple[int, Part],
    *,
    text_column: str,
    id_column: str,
    stem: str,
    shingle_size: int,
    mode: str,
    out_dir: str,
) -> pd.DataFrame:
    k, part = item
    df, filled = _rows(part, id_column, stem, [text_column])
    sh = hash_shingles(df[text_column].cast(pl.String), shingle_size, mode)
    sets = ops.sets_frame(np.arange(part.start, part.start + df.height, dtype=np.int64), df[id_column], sh)
    pq.write_table(pa.Table.from_pandas(sets, preserve_index=False), f"{out_dir}/part-{k:05d}.parquet")
    return ops.frame(STATS, partition=[k], rows=[df.height], active=[len(sets)], ids_filled=[filled])


def key_part(item: tuple[int, Part], *, text_column: str, id_column: str, stem: str) -> pd.DataFrame:
    k, part = item
    df, _ = _rows(part, id_column, stem, [text_column])
    keyed = pl.DataFrame(
        {
            "key": df.select(normalized(pl.col(text_column).cast(pl.String)))[text_column],
            "row": np.arange(part.start, part.start + df.height, dtype=np.int64),
            "id": df[id_column].cast(pl.String),
        }
    ).filter(pl.col("key").is_not_null() & (pl.col("key") != ""))
    return ops.frame(
        ops.KEYS, key=keyed["key"].to_arrow(), row=keyed["row"].to_numpy(), id=keyed["id"].to_arrow()
    )


def write_part(
    removed: pd.DataFrame,
    *,
    partition: int,
    parts: tuple[Part, ...],
    id_column: str,
    stem: str,
    wording: tuple,
    dirs: tuple,
    fmt: tuple,
) -> pd.DataFrame:
    """One input partition's outputs: its rows read again, labelled with the removed rows' clusters."""
    part = parts[partition]
    df, filled = _rows(part, id_column, stem, [])
    pos = removed["v"].to_numpy(np.int64) - part.start
    if len(pos) and (pos.min() < 0 or pos.max() >= df.height):
        raise ValueError("a removed row routed to the wrong partition")
    ids = df[id_column]
    cluster = ids.cast(pl.String).scatter(pos, pl.Series(removed["cluster"].to_numpy(), dtype=pl.String))
    kept = np.ones(df.height, dtype=bool)
    kept[pos] = False
    similarity = np.ones(df.height)
    similarity[pos] = removed["similarity"].to_numpy(np.float64)
    res = labelled(df, id_column, cluster.cast(ids.dtype), kept, similarity, *wording)
    frames = {"kept": res.kept, "clusters": res.clusters, "removed": res.removed}
    formats = dict(fmt)
    for name, d in dirs:
        target = f"{d}/part-{partition:05d}.{formats[name]}"
        if formats[name] == "jsonl":
            frames[name].write_ndjson(target)
        else:
            frames[name].write_parquet(target)
    return ops.frame(
        WRITTEN,
        partition=[partition],
        rows=[df.height],
        kept=[res.kept.height],
        removed=[res.removed.height],
        ids_filled=[filled],
    )


def _parts_dir(target: Path) -> Path:
    return target.parent / f".{target.name}.parts"


def _finish(parts: Path, target: Path, fmt: str) -> None:
    """The parts as the target: a folder of parts (renamed into place), or one file streamed together."""
    files = sorted(parts.glob("part-*"))
    if target.suffix not in (".parquet", ".jsonl", ".ndjson", ".json"):
        old = target.parent / f".{target.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        parts.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        return
    tmp = target.parent / f".{target.name}.tmp"
    if fmt == "jsonl":
        with open(tmp, "wb") as out:
            for f in files:
                with open(f, "rb") as fh:
                    shutil.copyfileobj(fh, out)
    else:
        schema = pq.read_schema(files[0])
        with pq.ParquetWriter(tmp, schema) as writer:
            for f in files:
                pf = pq.ParquetFile(f)
                for g in range(pf.num_row_groups):
                    writer.write_table(pf.read_row_group(g).cast(schema))
    tmp.replace(target)
    shutil.rmtree(parts, ignore_errors=True)


def dask_settings() -> dict:
    """The Dask configuration the engine runs under: P2P shuffles (disk-backed, bounded memory)."""
    return {"dataframe.shuffle.method": "p2p", "dataframe.convert-string": False}


@contextlib.contextmanager
def configured() -> Iterator[None]:
    """Dask set up for the engine; P2P's per-shuffle notices (a warning each) kept out of the output."""
    quiet = logging.getLogger("distributed.shuffle._scheduler_plugin")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        with dask.config.set(dask_settings()):
            yield
    finally:
        quiet.setLevel(level)


def dedup_frame(
    client: Client,
    df: pl.DataFrame,
    work: Path,
    partitions: int,
    method: str = "minhash",
    text_column: str = "prompt",
    id_column: str = "id",
    **options,
) -> StepResult:
    """Rows already held by the caller (the curation flow's) deduplicated on Dask: written as
    `partitions` Parquet shards under `work`, run through the engine, and read back as the one-process
    step's StepResult (the same rows, clusters and reasons)."""
    work = Path(work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "input").mkdir(parents=True)
    size = max(1, -(-df.height // max(1, partitions)))
    for k in range(max(1, -(-df.height // size))):
        df.slice(k * size, size).write_parquet(work / "input" / f"part-{k:05d}.parquet")
    out = Outputs(work / "kept", work / "clusters", work / "removed")
    try:
        with configured():
            engine = Engine(client, work / "engine")
            source = plan(work / "input", size)
            if method == "exact":
                res = engine.exact(source, out, text_column=text_column, id_column=id_column, **options)
            else:
                res = engine.minhash(source, out, text_column=text_column, id_column=id_column, **options)
        kept, clusters, removed = (pl.read_parquet(p) for p in (out.kept, out.clusters, out.removed))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return StepResult(kept, removed, StepCount(res.step, res.rows, res.kept, res.summary), clusters=clusters)
