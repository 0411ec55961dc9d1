"""Ingest JSONL, Parquet and Hugging Face `datasets` saved to disk into the canonical item schema.

A file that cannot be read at all is an InputError (one line, naming the file). Rows that can be read
but are bad (a broken JSON line, an empty prompt, a duplicate id) go to quarantine with a reason.
Missing ids are assigned from the source name and row number, and counted.

Columns are read one of two ways: by a preset (flows/curate/presets/: a public dataset's own schema,
named, or detected when the file's columns are exactly one of its schemas), or by name (ALIASES, and
the mapping for the rest). An explicit mapping wins over both for the columns it names.

The files themselves, as stored, are read by flows/curate/readers.py; this module maps their rows.

Not a flow: the curation flow's first step and `m1 curate ingest`, kept beside the flow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from flows.curate import guard, presets
from flows.curate.guard import Span
from flows.curate.readers import as_text, detect_format, read_raw
from flows.errors import InputError
from flows.jsonl import read_jsonl
from flows.schema import ITEM_COLUMNS, QUARANTINE_REASON, validate_items

# Where a canonical column is looked for when the mapping does not name it: first match wins. A final
# answer column is preferred to a worked solution (the answer check extracts one from a solution, but a
# dataset's own final answer is the better reference); the solution is then kept in metadata.
ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "uid", "idx", "problem_id"),
    "prompt": ("prompt", "problem", "question", "input", "query"),
    "reference": ("reference", "answer", "final_answer", "gold", "target", "solution", "output"),
    "source": ("source",),
    "domain": ("domain",),
    "task": ("task", "type", "category"),
    "metadata": ("metadata",),
}
META_PREFIX = "metadata."


def read_table(path: str | Path, *, strict: bool = True, split: str | None = None) -> pl.DataFrame:
    """The rows of a JSONL/Parquet/datasets file. `strict`: a broken JSON line is an InputError;
    otherwise broken lines are skipped (use `read_raw` or `load_items` to keep them in quarantine)."""
    rows, broken = read_raw(path, split)
    if strict and broken.height:
        first = broken.row(0, named=True)
        more = f" (+{broken.height - 1} more)" if broken.height > 1 else ""
        raise InputError(f"{path}: line {first['line']}: {first[QUARANTINE_REASON]}{more}")
    return rows


@dataclass
class Ingested:
    items: pl.DataFrame
    quarantined: pl.DataFrame
    ids_assigned: int
    rows_read: int
    mapping: dict[str, str] = field(default_factory=dict)  # canonical -> file column, explicit and inferred
    inferred: list[str] = field(default_factory=list)  # the canonical columns found by their usual names
    preset: str | None = None  # the preset that read the file, if any
    detected: bool = False  # ... found by the file's columns rather than named
    columns: list[str] = field(default_factory=list)  # the file's own columns

    def describe_mapping(self) -> str:
        return describe_mapping(self.mapping, self.inferred, self.preset, self.detected)

    def record(self, path: str) -> dict:
        """How the source's columns were read, as the curated manifest records it (`source_columns`)."""
        return {
            "path": path,
            "mapping": self.mapping,
            "inferred": self.inferred,
            "preset": self.preset,
            "detected": self.detected,
            "columns": self.columns,
        }


def describe_mapping(
    mapping: dict[str, str], inferred: list[str], preset: str | None = None, detected: bool = False
) -> str:
    """e.g. ``prompt <- question (inferred), metadata.difficulty <- level``; a preset leads:
    ``preset gsm8k (detected): prompt <- question, ...``."""
    columns = ", ".join(
        f"{col} <- {src}{' (inferred)' if col in inferred else ''}" for col, src in mapping.items()
    )
    if preset is None:
        return columns
    return f"preset {preset}{' (detected)' if detected else ''}" + (f": {columns}" if columns else "")


def check_mapping(mapping: dict[str, str], columns: list[str], where: str) -> None:
    """Every key a canonical column or ``metadata.<key>``, every value one of the file's columns."""
    for col, source_col in mapping.items():
        if col not in ITEM_COLUMNS and not col.startswith(META_PREFIX):
            raise InputError(
                f"{where}: mapping names unknown column {col!r} "
                f"(canonical: {', '.join(ITEM_COLUMNS)}, or metadata.<key>)"
            )
        if source_col not in columns:
            raise InputError(
                f"{where}: mapping {col}={source_col}: no column {source_col!r} (has: {', '.join(columns)})"
            )


def _blank(values: pl.Series) -> pl.Series:
    """Which values are missing: null, empty or only whitespace."""
    return values.is_null() | (values.str.strip_chars() == "")


def to_items(
    raw: pl.DataFrame,
    *,
    source: str,
    mapping: dict[str, str] | None = None,
    domain: str = "math",
    task: str = "",
    where: str = "input",
) -> tuple[pl.DataFrame, int, dict[str, str], list[str]]:
    """Rename, fill and pack a raw frame into the canonical columns; returns (frame, ids assigned, the
    mapping used, the canonical columns that were inferred).

    `mapping` maps canonical names (or ``metadata.<key>``) to the file's column names; unmapped canonical
    columns are found by ALIASES. Columns that are not canonical are kept inside `metadata` (a JSON
    object); ``metadata.<key> = column`` stores a column under that key (``metadata.difficulty = level``
    makes the file's `level` the difficulty a curriculum filters on).
    """
    mapping = dict(mapping or {})
    meta_keys = {
        col.removeprefix(META_PREFIX): src for col, src in mapping.items() if col.startswith(META_PREFIX)
    }
    check_mapping(mapping, raw.columns, where)
    inferred = []
    for col, aliases in ALIASES.items():
        if col not in mapping:
            found = next((a for a in aliases if a in raw.columns and a not in mapping.values()), None)
            if found is not None:
                mapping[col] = found
                inferred.append(col)
    if "prompt" not in mapping:
        raise InputError(
            f"{where}: no prompt column (looked for {', '.join(ALIASES['prompt'])}; "
            f"has: {', '.join(raw.columns) or 'no columns'}); map one with --map prompt=COLUMN"
        )
    used = set(mapping.values())
    extra = [c for c in raw.columns if c not in used]
    out = {col: _text(raw[src]) for col, src in mapping.items() if col in ITEM_COLUMNS and col != "metadata"}
    n = raw.height
    rows = pl.Series(range(n))
    ids = out.get("id", pl.Series([None] * n, dtype=pl.String))
    missing = _blank(ids)
    out["id"] = pl.select(
        pl.when(missing).then(pl.format(f"{source}-{{}}", rows.cast(pl.String).str.zfill(6))).otherwise(ids)
    ).to_series()
    for col, default in (("source", source), ("domain", domain), ("task", task)):
        # a row that leaves the file's own column empty takes the command's value, like a file without it
        given = out.get(col, pl.Series([None] * n, dtype=pl.String))
        out[col] = pl.select(pl.when(_blank(given)).then(pl.lit(default)).otherwise(given)).to_series()
    out.setdefault("reference", pl.Series([None] * n, dtype=pl.String))
    out["metadata"] = _metadata(raw, mapping.get("metadata"), extra, meta_keys)
    frame = pl.DataFrame({c: out[c].alias(c) for c in ITEM_COLUMNS})
    return frame, int(missing.sum()), mapping, inferred


def _text(col: pl.Series) -> pl.Series:
    if col.dtype == pl.String:
        return col
    if col.dtype.is_numeric() or col.dtype == pl.Boolean:
        return col.cast(pl.String)
    return pl.Series([as_text(v) for v in col.to_list()], dtype=pl.String)


def _metadata(
    raw: pl.DataFrame, meta_col: str | None, extra: list[str], keys: dict[str, str] | None = None
) -> pl.Series:
    """A JSON object per row: the row's own metadata (an object, or JSON text of one) plus extra columns
    (under their own names, or under the key `keys` maps them to). Metadata that is not an object stays
    as is, so validation quarantines it with its reason."""
    base = raw[meta_col].to_list() if meta_col else [None] * raw.height
    renamed = {src: key for key, src in (keys or {}).items()}
    columns = extra + [src for src in renamed if src not in extra]
    rest = (
        [
            {renamed.get(k, k): v for k, v in r.items() if v is not None}
            for r in raw.select(columns).to_dicts()
        ]
        if columns
        else [{}] * raw.height
    )
    out = []
    for meta, more in zip(base, rest, strict=True):
        if isinstance(meta, str):
            try:
                parsed = json.loads(meta)
            except json.JSONDecodeError:
                out.append(meta)
                continue
            meta = parsed
        if meta is not None and not isinstance(meta, dict):
            out.append(json.dumps(meta))
            continue
        out.append(json.dumps({**more, **(meta or {})}, ensure_ascii=False, sort_keys=True, default=str))
    return pl.Series(out, dtype=pl.String)


def _row_place(path: Path, index: int) -> str:
    """Where row `index` (0-based, of the rows read) is: a JSONL file's line number, else its row number."""
    if detect_format(path) == "jsonl":
        seen = -1
        for line in read_jsonl(path):
            seen += line.problem is None
            if seen == index:
                return f"line {line.number}"
    return f"row {index + 1}"


def preset_items(
    preset: presets.Preset,
    raw: pl.DataFrame,
    mapping: dict[str, str],
    *,
    where: str,
    place=lambda index: f"row {index + 1}",
) -> tuple[pl.DataFrame, list[str | None]]:
    """The file's rows read by `preset` (canonical columns, `source` left empty for the caller) and each
    row's quarantine reason (None: keep). Columns the preset does not turn into canonical fields go into
    metadata as they are; the mapping overrides the preset for the columns it names. A row the preset
    cannot read is an InputError naming the file, the row and the field."""
    check_mapping(mapping, raw.columns, where)
    canonical = {c: src for c, src in mapping.items() if not c.startswith(META_PREFIX)}
    meta_keys = {c.removeprefix(META_PREFIX): src for c, src in mapping.items() if c.startswith(META_PREFIX)}
    out: dict[str, list] = {c: [] for c in ITEM_COLUMNS}
    reasons: list[str | None] = []
    for index, row in enumerate(raw.iter_rows(named=True)):
        try:
            got = preset.read(row)
        except presets.RowError as exc:
            raise InputError(f"{where}: {place(index)}: {exc} (preset {preset.name})") from None
        kept = {k: v for k, v in row.items() if k not in preset.consumes and v is not None}
        meta = kept | got.metadata | {key: row[src] for key, src in meta_keys.items()}
        fields = {"id": got.id, "source": None, "domain": preset.domain, "task": got.task}
        fields |= {"prompt": got.prompt, "reference": got.reference}
        fields |= {c: as_text(row[src]) for c, src in canonical.items() if c != "metadata"}
        if "metadata" in canonical:  # the file's own metadata column: its keys join the preset's
            own = row[canonical["metadata"]]
            own = json.loads(own) if isinstance(own, str) else own
            meta |= own if isinstance(own, dict) else {}
        fields["metadata"] = json.dumps(meta, ensure_ascii=False, sort_keys=True, default=str)
        for col in ITEM_COLUMNS:
            out[col].append(fields[col])
        reasons.append(got.reason)
    return pl.DataFrame(out, schema=ITEM_COLUMNS), reasons


def _choose_preset(name: str | None, raw: pl.DataFrame, where: str) -> tuple[presets.Preset | None, bool]:
    """(preset, detected): the named one, else the one the file's columns are exactly, if any."""
    if name is not None:
        try:
            return presets.get(name, where), False
        except ValueError as exc:
            raise InputError(str(exc)) from None
    found = presets.detect(raw.columns, raw.row(0, named=True) if raw.height else None)
    return found, found is not None


def load_items(
    path: str | Path,
    *,
    source: str | None = None,
    mapping: dict[str, str] | None = None,
    domain: str = "math",
    task: str = "",
    split: str | None = None,
    preset: str | None = None,
) -> Ingested:
    """Read one file into canonical items; broken lines and invalid rows are quarantined with a reason.
    `preset` names the public schema the file is in (flows/curate/presets/); without one, a file
    whose columns are exactly a preset's is read by that preset."""
    path = Path(path)
    source = source or path.stem
    raw, broken = read_raw(path, split)
    chosen, detected = _choose_preset(preset, raw, str(path))
    mapping = dict(mapping or {})
    reasons: list[str | None] = []
    if raw.height == 0 and raw.width == 0:
        items, assigned, used, inferred = pl.DataFrame(schema=ITEM_COLUMNS), 0, {}, []
    elif chosen is not None:
        read, reasons = preset_items(
            chosen, raw, mapping, where=str(path), place=lambda index: _row_place(path, index)
        )
        identity = {c: c for c in ITEM_COLUMNS}
        items, assigned, _, _ = to_items(
            read, source=source, mapping=identity, domain=domain, task=task, where=str(path)
        )
        used, inferred = chosen.mapping(raw.columns) | mapping, []
    else:
        items, assigned, used, inferred = to_items(
            raw, source=source, mapping=mapping, domain=domain, task=task, where=str(path)
        )
    flagged = pl.Series(reasons, dtype=pl.String) if reasons else None
    unread = pl.DataFrame(schema={**ITEM_COLUMNS, QUARANTINE_REASON: pl.String})
    if flagged is not None and flagged.is_not_null().any():
        unread = items.filter(flagged.is_not_null()).with_columns(
            flagged.drop_nulls().alias(QUARANTINE_REASON)
        )
        items = items.filter(flagged.is_null())
    valid, bad = validate_items(items, where=str(path))
    lines = broken.select(
        *[
            pl.lit(None, dtype=dtype).alias(c)
            for c, dtype in ITEM_COLUMNS.items()
            if c not in ("source", "metadata")
        ],
        pl.lit(source).alias("source"),
        pl.struct(line="line", raw="raw").struct.json_encode().alias("metadata"),
        pl.format("line {}: {}", "line", QUARANTINE_REASON).alias(QUARANTINE_REASON),
    ).select(*ITEM_COLUMNS, QUARANTINE_REASON)
    quarantined = pl.concat(
        [
            unread.select(*ITEM_COLUMNS, QUARANTINE_REASON),
            bad.select(*ITEM_COLUMNS, QUARANTINE_REASON),
            lines,
        ],
        how="vertical_relaxed",
    )
    return Ingested(
        valid,
        quarantined,
        assigned,
        raw.height + broken.height,
        used,
        inferred,
        preset=chosen.name if chosen else None,
        detected=detected,
        columns=list(raw.columns),
    )


def check_source(got: Ingested, path: str, max_share: float) -> Span:
    """The checks every source passes before anything is written, in `m1 run`, `m1 curate run` (their
    preflight and the flow) and `m1 curate ingest` alike; an InputError naming the file when it fails:
    a file with no rows, or none that is a valid item; rows that ingest quarantined beyond `max_share`
    (flows/curate/guard.py); math items that all lack a reference (the answer column was not found, or
    is empty). Returns the source's span (its rows, columns and mapping) for the later steps' guard."""
    if got.items.height == 0:
        if got.rows_read == 0:
            raise InputError(f"{path}: the file has no rows")
        first = got.quarantined[QUARANTINE_REASON][0]
        raise InputError(
            f"{path}: no valid items ({got.quarantined.height} rows quarantined; first: {first})"
        )
    span = Span(path, 0, got.rows_read, got.columns, got.mapping)
    guard.check(span, "ingest", got.rows_read, got.quarantined[QUARANTINE_REASON].to_list(), max_share)
    math = got.items.filter(pl.col("domain") == "math")
    if math.height and _blank(math["reference"]).all():
        column = got.mapping.get("reference")
        why = (
            f"every reference (column {column!r}) is empty"
            if column
            else f"no reference column (looked for {', '.join(ALIASES['reference'])})"
        )
        raise InputError(
            f'{path}: {why}; map the answer column, e.g. mapping = {{ reference = "COLUMN" }} under '
            f"[[curate.sources]] (--map reference=COLUMN with `m1 curate ingest`); "
            f"columns: {', '.join(got.columns)}"
        )
    return span


def read_benchmark(
    path: str | Path,
    mapping: dict[str, str] | None = None,
    *,
    label: str = "",
    preset: str | None = None,
) -> pl.DataFrame:
    """A benchmark file with its columns renamed to canonical ones (``prompt`` at least; ``reference``
    when it has answers), so contamination checks and evaluation read every benchmark alike. A benchmark
    in a preset's schema (named, or detected) is read by the preset into the canonical item columns;
    its rows without a reference keep a null one (their prompts still count for contamination)."""
    df = read_table(path, strict=True)
    where = f"benchmark {label or Path(path).stem} ({path})"
    mapping = dict(mapping or {})
    chosen, _ = _choose_preset(preset, df, where)
    if chosen is not None and df.height:
        items, _ = preset_items(chosen, df, mapping, where=where, place=lambda i: _row_place(Path(path), i))
        name = label or Path(path).stem
        rows = pl.int_range(pl.len()).cast(pl.String)
        return items.with_columns(  # ids as the contamination check numbers a benchmark without them
            pl.col("id").fill_null(pl.format(f"{name}#{{}}", rows)), pl.col("source").fill_null(pl.lit(name))
        )
    for col, source_col in mapping.items():
        if source_col not in df.columns:
            raise InputError(
                f"{where}: mapping {col}={source_col}: no column {source_col!r} (has: {', '.join(df.columns)})"
            )
    for col in ("prompt", "reference"):
        if col not in mapping and col not in df.columns:
            found = next((a for a in ALIASES[col] if a in df.columns), None)
            if found is not None:
                mapping[col] = found
    if "prompt" not in mapping and "prompt" not in df.columns:
        raise InputError(
            f"{where}: no prompt column (has: {', '.join(df.columns) or 'none'}); "
            'map one, e.g. data.benchmarks = [{path = "...", mapping = {prompt = "question"}}]'
        )
    return df.rename({src: col for col, src in mapping.items() if src != col}).with_columns(
        pl.col("prompt").cast(pl.String)
    )
