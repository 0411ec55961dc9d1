"""Ingest JSONL, Parquet and datasets-on-disk into the canonical schema; bad rows quarantined."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.curate.ingest import load_items, read_table
from flows.errors import InputError
from flows.schema import ITEM_COLUMNS


def write_jsonl(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_with_broken_lines_mapping_and_missing_ids(tmp_path):
    path = write_jsonl(
        tmp_path / "mix.jsonl",
        [
            json.dumps({"problem": "What is 1+1?", "solution": "\\boxed{2}", "level": 3}),
            '{"problem": "broken", ',
            json.dumps({"id": "keep-me", "problem": "Ünïcödé 2+2?", "solution": "4", "metadata": {"a": 1}}),
            "[1, 2]",
            json.dumps({"problem": "", "solution": "1"}),
            "",
        ],
    )
    got = load_items(path, source="mix")
    assert got.items.columns == list(ITEM_COLUMNS)
    assert got.items["id"].to_list() == ["mix-000000", "keep-me"]
    assert got.ids_assigned == 2  # the first row and the empty-prompt row
    meta = [json.loads(m) for m in got.items["metadata"]]
    assert meta == [{"level": 3}, {"a": 1}]
    reasons = got.quarantined["reason"].to_list()
    assert reasons[0] == "empty prompt"
    assert reasons[1].startswith("line 2: invalid JSON") and reasons[2] == "line 4: not a JSON object"
    assert json.loads(got.quarantined["metadata"][1])["line"] == 2
    assert got.rows_read == 5
    with pytest.raises(InputError, match=r"mix.jsonl: line 2: invalid JSON.*\(\+1 more\)"):
        read_table(path, strict=True)


def test_parquet_and_explicit_mapping(tmp_path):
    path = tmp_path / "p.parquet"
    pl.DataFrame({"q": ["a?", "b?"], "sol": ["1", "2"], "uid": [7, 8]}).write_parquet(path)
    got = load_items(path, mapping={"prompt": "q", "reference": "sol", "id": "uid"}, domain="math")
    assert got.items.select("id", "prompt", "reference", "source").rows() == [
        ("7", "a?", "1", "p"),
        ("8", "b?", "2", "p"),
    ]
    with pytest.raises(InputError, match="mapping prompt=nope: no column 'nope'"):
        load_items(path, mapping={"prompt": "nope"})


def test_hf_dataset_saved_to_disk(tmp_path):
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"question": ["x?", "y?"], "answer": ["1", "2"]}),
            "test": datasets.Dataset.from_dict({"question": ["z?"], "answer": ["3"]}),
        }
    )
    dd.save_to_disk(str(tmp_path / "ds"))
    got = load_items(tmp_path / "ds", source="hf")
    assert got.items["prompt"].to_list() == ["x?", "y?"] and got.items["reference"].to_list() == ["1", "2"]
    assert load_items(tmp_path / "ds", split="test").items["prompt"].to_list() == ["z?"]


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("missing.jsonl", None, "file not found"),
        ("bad.parquet", b"not parquet", "not a readable Parquet file"),
        ("x.csv", b"a,b", "unknown file type"),
        ("noprompt.jsonl", b'{"foo": 1}\n', "no prompt column"),
    ],
)
def test_bad_files_are_one_line_input_errors(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message) as err:
        load_items(path)
    assert "\n" not in str(err.value) and name in str(err.value)
