"""JSONL reading edge cases mutation testing showed untested: blank lines and broken lines mid-file,
CRLF endings, non-UTF-8 bytes, a key first seen late, and values of mixed types across lines."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.curate.ingest import read_table
from flows.curate.readers import read_raw
from flows.errors import InputError


def test_reading_continues_past_blank_and_broken_lines(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_bytes(
        b'{"id": "a"}\r\n'
        b"\r\n"  # blank: skipped, not the end of the file
        b"not json\r\n"
        b'{"id": "b"}\n'
        b'{"id": "\xff\xfe"}\n'  # not UTF-8
        b'{"id": "c"}\n'
        b"[1, 2]\n"  # JSON, but not an object
        b'{"id": "d"}\n'
    )
    rows, broken = read_raw(path)
    assert rows["id"].to_list() == ["a", "b", "c", "d"]
    assert broken.rows() == [
        (3, "not json", "invalid JSON: Expecting value at column 1"),
        (5, '{"id": "\ufffd\ufffd"}', "not UTF-8: invalid start byte"),
        (7, "[1, 2]", "not a JSON object"),
    ]
    assert read_table(path, strict=False)["id"].to_list() == ["a", "b", "c", "d"]
    with pytest.raises(InputError, match=r"items.jsonl: line 3: invalid JSON: .* \(\+2 more\)$"):
        read_table(path)
    one = tmp_path / "one.jsonl"
    one.write_text('{"id": "a"}\n{"id": \n')
    with pytest.raises(InputError, match=r"one.jsonl: line 2: invalid JSON: Expecting value at column 8$"):
        read_table(one)


def test_a_key_first_seen_late_and_mixed_types_are_kept(tmp_path):
    late = tmp_path / "late.jsonl"
    lines = [json.dumps({"id": str(i)}) for i in range(300)] + [json.dumps({"id": "x", "extra": 5})]
    late.write_text("\n".join(lines) + "\n")
    rows = read_table(late)
    assert rows.height == 301 and rows["extra"].to_list()[-1] == 5
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"id": "a", "v": 1}\n{"id": "b", "v": {"k": "ü"}}\n{"id": "c", "v": null}\n')
    rows = read_table(mixed)  # polars cannot build one column of int and struct: values become text
    assert rows.schema == pl.Schema({"id": pl.String, "v": pl.String})
    assert rows["v"].to_list() == ["1", '{"k": "ü"}', None]
