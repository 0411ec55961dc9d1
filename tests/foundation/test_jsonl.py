"""flows/jsonl.py: the one JSONL reader (ingest, SWE tasks and predictions, m1 verify, the judge tools)."""

from __future__ import annotations

from flows.jsonl import read_jsonl


def test_lines_keep_their_numbers_and_say_what_is_wrong(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n  \n[1]\n{"a": \n{"a": "\xff"}\n')
    lines = list(read_jsonl(path))
    assert [x.number for x in lines] == [1, 4, 5, 6]  # blank lines are skipped, and counted
    assert lines[0].raw == b'{"a": 1}' and lines[0].value == {"a": 1} and lines[0].problem is None
    assert lines[1].problem == "not a JSON object" and lines[1].reason is None
    assert lines[2].problem == "invalid JSON: Expecting value at column 7"
    assert lines[2].reason == "Expecting value" and lines[2].value is None
    assert lines[3].problem == lines[3].reason == "not UTF-8: invalid start byte"
    assert lines[3].text == '{"a": "\ufffd"}'


def test_replace_reads_bytes_that_are_not_utf8_as_the_replacement_character(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": "\xff"}\n')
    (line,) = read_jsonl(path, errors="replace")
    assert line.error is None and line.value == {"a": "\ufffd"}
