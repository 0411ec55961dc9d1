"""An input corpus as partitions that workers read themselves: the driver plans, it never reads rows.

A plan is made from metadata alone (Parquet footers, a JSONL file's line breaks streamed once, a
`datasets` folder's length) and lists, per partition, where its rows are and their global row
numbers, so every worker knows the input order of its rows without asking anyone: "the first row of
a cluster wins" needs nothing else. Partitions are Parquet row groups taken together up to
`partition_rows` (a row group is never split), blocks of JSONL lines, or slices of a `datasets`
folder. Empty shards and row groups are left out (a Dask partition has at least one row here, so the
partitions' row ranges are strictly increasing divisions).

Ids are filled as `m1 curate ...` always filled them (`fill_ids`): a missing id column gets
``{stem}-{row:06d}``, a blank id the same for its row, where row is the global input row.

Not a flow: the input half of the distributed dedup engine (flows/curate/scale/engine.py).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from flows.curate.ingest import read_table
from flows.curate.readers import JSONL_SUFFIXES, as_text, detect_format, hf_table
from flows.errors import InputError

PARTITION_ROWS = 50_000  # rows per partition: a worker's sketch of one stays far below 1 GB


@dataclass(frozen=True)
class Part:
    """One partition: rows [start, start + rows) of the corpus, and where they are stored."""

    path: str
    kind: str  # parquet | jsonl | hf
    start: int
    rows: int
    row_groups: tuple[int, ...] = ()  # parquet
    offset: int = 0  # jsonl: first byte; hf: first row of the slice
    length: int = 0  # jsonl: bytes
    first_line: int = 1  # jsonl: number of its first line (blank lines counted), for error messages
    split: str | None = None  # hf


@dataclass(frozen=True)
class Source:
    path: Path
    parts: tuple[Part, ...]

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    @property
    def stem(self) -> str:
        """What assigned ids start with (`m1 curate` has always used the input's stem)."""
        return self.path.stem

    @property
    def divisions(self) -> tuple[int, ...]:
        """Dask divisions of the partitions' global row ranges (the last one inclusive)."""
        return (*(p.start for p in self.parts), self.rows - 1)


def parquet_files(path: Path) -> list[Path]:
    """The Parquet shards of a folder (sorted by path: their order is the input order)."""
    return sorted(f for f in path.rglob("*.parquet") if f.is_file() and not f.name.startswith((".", "_")))


def is_shard_folder(path: Path) -> bool:
    return path.is_dir() and bool(parquet_files(path)) and detect_kind(path) == "parquet"


def detect_kind(path: Path) -> str:
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.is_dir():
        if any((path / f).exists() for f in ("dataset_info.json", "state.json", "dataset_dict.json")):
            return "hf"
        if parquet_files(path):
            return "parquet"
        raise InputError(f"{path}: a directory with neither Parquet shards nor a saved datasets folder")
    return detect_format(path)


def plan(path: str | Path, partition_rows: int = PARTITION_ROWS, split: str | None = None) -> Source:
    """The partitions of a Parquet file or folder of shards, a JSONL file or a `datasets` folder."""
    path = Path(path)
    kind = detect_kind(path)
    if kind == "parquet":
        parts = _parquet_parts(parquet_files(path) if path.is_dir() else [path], partition_rows)
    elif kind == "jsonl":
        parts = _jsonl_parts(path, partition_rows)
    else:
        parts = _hf_parts(path, partition_rows, split)
    return Source(path, tuple(parts))


def _parquet_parts(files: list[Path], partition_rows: int) -> list[Part]:
    parts: list[Part] = []
    start = 0
    for f in files:
        try:
            meta = pq.ParquetFile(f).metadata
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for corrupt files
            raise InputError(f"{f}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
        groups: list[int] = []
        rows = 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if n == 0:
                continue
            if groups and rows + n > partition_rows:
                parts.append(Part(str(f), "parquet", start, rows, tuple(groups)))
                start, groups, rows = start + rows, [], 0
            groups.append(g)
            rows += n
        if groups:
            parts.append(Part(str(f), "parquet", start, rows, tuple(groups)))
            start += rows
    return parts


def _jsonl_parts(path: Path, partition_rows: int) -> list[Part]:
    """Blocks of `partition_rows` non-blank lines, found by streaming the file once (nothing kept)."""
    parts: list[Part] = []
    start = offset = 0
    rows = 0
    first_line = 1
    pos = 0
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            pos += len(line)
            if line.strip():
                rows += 1
            if rows == partition_rows:
                parts.append(
                    Part(
                        str(path),
                        "jsonl",
                        start,
                        rows,
                        offset=offset,
                        length=pos - offset,
                        first_line=first_line,
                    )
                )
                start, offset, rows, first_line = start + rows, pos, 0, number + 1
    if rows:
        parts.append(
            Part(str(path), "jsonl", start, rows, offset=offset, length=pos - offset, first_line=first_line)
        )
    return parts


def _hf_parts(path: Path, partition_rows: int, split: str | None) -> list[Part]:
    n = hf_table(path, split).num_rows
    return [
        Part(str(path), "hf", s, min(partition_rows, n - s), offset=s, split=split)
        for s in range(0, n, partition_rows)
    ]


def read_part(part: Part) -> pl.DataFrame:
    """The partition's rows as stored (a JSONL line that is not a JSON object is an InputError naming it)."""
    if part.kind == "parquet":
        return pl.from_arrow(pq.ParquetFile(part.path).read_row_groups(list(part.row_groups)))
    if part.kind == "hf":
        return pl.from_arrow(hf_table(Path(part.path), part.split).slice(part.offset, part.rows))
    with open(part.path, "rb") as fh:
        fh.seek(part.offset)
        block = fh.read(part.length)
    return _parse_jsonl(block, part)


def _parse_jsonl(block: bytes, part: Part) -> pl.DataFrame:
    """The block's lines as `read_table` reads a whole file: strict, mixed types read as text."""
    lines = [(part.first_line + k, raw) for k, raw in enumerate(block.split(b"\n"))]
    good = [raw.rstrip(b"\r") for _, raw in lines if raw.strip()]
    try:
        return pl.read_ndjson(io.BytesIO(b"\n".join(good)), infer_schema_length=None)
    except Exception:  # noqa: BLE001 - find the broken line, else mixed types: read them as text
        pass
    records = []
    for number, raw in lines:
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{part.path}: line {number}: invalid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise InputError(f"{part.path}: line {number}: not a JSON object")
        records.append({k: as_text(v) for k, v in value.items()})
    return pl.DataFrame(records, infer_schema_length=None)


def read_all(path: str | Path) -> pl.DataFrame:
    """The whole corpus in one frame (`--runner local`): a folder of Parquet shards in path order,
    anything else as `read_table` reads it."""
    path = Path(path)
    if path.is_dir() and detect_kind(path) == "parquet":
        return pl.concat([pl.read_parquet(f) for f in parquet_files(path)], how="vertical_relaxed")
    return read_table(path, strict=True)


def fill_ids(df: pl.DataFrame, id_column: str, stem: str, start: int = 0) -> tuple[pl.DataFrame, int, bool]:
    """(rows with every id filled, how many were filled, whether the column was missing): a missing or
    blank id becomes ``{stem}-{row:06d}`` for its global row (`start` is the frame's first row)."""
    ids = pl.format(f"{stem}-{{}}", pl.int_range(start, start + pl.len()).cast(pl.String).str.zfill(6))
    if id_column not in df.columns:
        return df.with_columns(ids.alias(id_column)), df.height, True
    blank = df[id_column].cast(pl.String).fill_null("").str.strip_chars().eq("")
    if not blank.any():
        return df, 0, False
    filled = df.with_columns(
        pl.when(blank).then(ids).otherwise(pl.col(id_column).cast(pl.String)).alias(id_column)
    )
    return filled, int(blank.sum()), False


def suffix_is_jsonl(path: Path) -> bool:
    return path.suffix in JSONL_SUFFIXES
