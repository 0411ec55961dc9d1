"""The distributed engine's input plans: partitions read by workers add up to the corpus `--runner local`
reads, in order, with global row numbers, from metadata alone on the driver."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.curate.scale.sources import fill_ids, plan, read_all, read_part
from flows.errors import InputError


def concat_parts(path, rows: int) -> tuple[pl.DataFrame, list]:
    source = plan(path, rows)
    frames = [read_part(p) for p in source.parts]
    starts = [p.start for p in source.parts]
    assert starts == [sum(len(f) for f in frames[:k]) for k in range(len(frames))]
    assert all(len(f) == p.rows > 0 for f, p in zip(frames, source.parts, strict=True))
    assert source.divisions == (*starts, source.rows - 1)
    return pl.concat(frames, how="vertical_relaxed"), source.parts


def test_parquet_folder_partitions_skip_empty_shards_and_keep_row_groups_whole(tmp_path):
    df = pl.DataFrame({"id": [f"r{i}" for i in range(95)], "prompt": [f"text {i}" for i in range(95)]})
    (tmp_path / "in" / "sub").mkdir(parents=True)
    df.slice(0, 0).write_parquet(tmp_path / "in" / "a.parquet")
    df.slice(0, 40).write_parquet(tmp_path / "in" / "b.parquet", row_group_size=15)
    df.slice(40, 55).write_parquet(tmp_path / "in" / "sub" / "c.parquet", row_group_size=20)
    (tmp_path / "in" / "_SUCCESS").write_text("")
    got, parts = concat_parts(tmp_path / "in", 30)
    assert got.equals(df) and read_all(tmp_path / "in").equals(df)
    assert [p.rows for p in parts] == [30, 10, 20, 20, 15]  # 15+15, then 10; 20, 20, 15: groups whole


def test_jsonl_blocks_equal_the_whole_file_and_name_a_broken_line(tmp_path):
    rows = [{"id": i, "prompt": f"p{i}", "x": [i]} for i in range(23)]
    lines = [json.dumps(r) for r in rows]
    lines.insert(5, "")  # a blank line: counted as a line, not a row
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    got, parts = concat_parts(path, 7)
    assert got.equals(read_all(path)) and len(parts) == 4
    path.write_text("\n".join([*lines[:12], "{broken", *lines[12:]]) + "\n")
    source = plan(path, 7)
    with pytest.raises(InputError, match=r"in.jsonl: line 13: invalid JSON"):
        for part in source.parts:
            read_part(part)


def test_datasets_folder_slices_equal_the_table(tmp_path):
    datasets = pytest.importorskip("datasets")
    data = {"prompt": [f"q{i}" for i in range(17)], "answer": list(range(17))}
    datasets.Dataset.from_dict(data).save_to_disk(str(tmp_path / "ds"))
    got, parts = concat_parts(tmp_path / "ds", 5)
    assert got.equals(read_all(tmp_path / "ds")) and len(parts) == 4


def test_fill_ids_uses_global_rows():
    df = pl.DataFrame({"id": ["a", "", None, "d"], "prompt": ["w"] * 4})
    filled, n, missing = fill_ids(df, "id", "corpus", start=1000)
    assert filled["id"].to_list() == ["a", "corpus-001001", "corpus-001002", "d"] and n == 2 and not missing
    filled, n, missing = fill_ids(df.drop("id"), "id", "corpus", start=7)
    assert filled["id"][0] == "corpus-000007" and n == 4 and missing


def test_a_folder_without_shards_is_an_input_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="neither Parquet shards nor a saved datasets folder"):
        plan(tmp_path / "empty")
