"""JSONL, Parquet and Hugging Face `datasets` folders read as they are stored: the rows, and the broken
lines of a JSONL file with their reasons. A file that cannot be read at all is an InputError (one line,
naming the file). Mapping the rows into canonical items is flows/curate/ingest.py's.

Not a flow: the file reading of curation's ingest step, kept beside it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl

from flows.errors import InputError
from flows.jsonl import read_jsonl
from flows.schema import QUARANTINE_REASON

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


def detect_format(path: Path) -> str:
    if path.is_dir():
        if any((path / f).exists() for f in ("dataset_info.json", "state.json", "dataset_dict.json")):
            return "hf"
        raise InputError(f"{path}: a directory but not a Hugging Face dataset saved with save_to_disk")
    if path.suffix in JSONL_SUFFIXES:
        return "jsonl"
    if path.suffix == ".parquet":
        return "parquet"
    raise InputError(f"{path}: unknown file type {path.suffix!r} (use .jsonl, .parquet or a datasets folder)")


def read_raw(path: str | Path, split: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows as stored, broken lines). Broken lines have `line`, `raw` and `reason` columns."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    fmt = detect_format(path)
    broken = pl.DataFrame(schema={"line": pl.Int64, "raw": pl.String, QUARANTINE_REASON: pl.String})
    if fmt == "jsonl":
        try:
            return _read_jsonl(path)
        except OSError as exc:  # no permission, an I/O error: the file exists but cannot be read
            raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if fmt == "parquet":
        try:
            return pl.read_parquet(path), broken
        except Exception as exc:  # polars raises several types for corrupt files
            raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    return _read_hf(path, split), broken


def _read_jsonl(path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    good: list[bytes] = []
    bad: list[tuple[int, str, str]] = []
    for line in read_jsonl(path):
        if line.problem:
            bad.append((line.number, line.text[:2000], line.problem))
        else:
            good.append(line.raw)
    broken = pl.DataFrame(
        bad, schema={"line": pl.Int64, "raw": pl.String, QUARANTINE_REASON: pl.String}, orient="row"
    )
    if not good:
        return pl.DataFrame(), broken
    try:
        rows = pl.read_ndjson(io.BytesIO(b"\n".join(good)), infer_schema_length=None)
    except Exception:  # noqa: BLE001 - mixed types across lines: fall back to text values
        records = [json.loads(line) for line in good]
        rows = pl.DataFrame(
            [{k: as_text(v) for k, v in r.items()} for r in records], infer_schema_length=None
        )
    return rows, broken


def as_text(value) -> str | None:
    """A value as text: strings as they are, anything else as its JSON."""
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _read_hf(path: Path, split: str | None) -> pl.DataFrame:
    return pl.from_arrow(hf_table(path, split))


def hf_table(path: Path, split: str | None = None):
    """A saved `datasets` folder's (split's) Arrow table, memory-mapped: slicing it reads only the slice."""
    import datasets  # heavy (pyarrow, fsspec, ...): imported only when a datasets folder is read

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # noqa: BLE001 - datasets raises many types for unreadable folders
        raise InputError(f"{path}: not a readable datasets folder ({str(exc).splitlines()[0]})") from None
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds)
        chosen = split or ("train" if "train" in ds else names[0] if len(names) == 1 else None)
        if chosen not in ds:
            raise InputError(f"{path}: choose a split with --split (has: {', '.join(names)})")
        ds = ds[chosen]
    return ds.data.table
