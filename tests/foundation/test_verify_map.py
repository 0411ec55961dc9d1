"""`m1 verify --map`: scoring a file whose columns have other names; rows that fail to score counted with
their commonest reason (exit 0), and no row scored an error (one line, exit 2) that says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.errors import InputError
from tests.curate.helpers import write_jsonl

ROWS = [
    {"id": "a", "model_output": "so \\boxed{42}", "final_answer": "42"},
    {"id": "b", "model_output": "\\boxed{7}", "final_answer": "8"},
]


def verify(tmp_path, *args: str):
    src = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), "-o", str(out), *args])
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return res, rows


def test_mapped_columns_are_scored_and_rows_come_back_as_they_were(tmp_path):
    res, rows = verify(tmp_path, "--map", "response=model_output", "--map", "reference=final_answer")
    assert res.exit_code == 0, res.output
    assert [r["reward"] for r in rows] == [1.0, 0.0]
    assert [set(r) for r in rows] == [set(ROWS[0]) | {"reward", "details"}] * 2  # no mapped copies
    assert "mean reward 0.5000, 0 with errors" in res.output and "failed" not in res.output


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            [],
            "no row scored: all 2 failed; commonest reason (2 rows): item has no text `response`; map a column "
            "to it with --map response=COLUMN (columns: final_answer, id, model_output)",
        ),
        (
            ["--map", "response=model_output"],
            "no row scored: all 2 failed; commonest reason (2 rows): item has no `reference` answer; map a "
            "column to it with --map reference=COLUMN (columns: final_answer, id, model_output)",
        ),
        (
            ["--map", "response=model_output", "--map", "reference=gold"],
            "no row scored: all 2 failed; commonest reason (2 rows): no column 'gold' (--map reference=gold)",
        ),
    ],
)
def test_no_row_scored_is_an_error_naming_how_many_and_why(tmp_path, args, line):
    res, rows = verify(tmp_path, *args)
    assert isinstance(res.exception, InputError)  # `m1` prints it as one line and exits 2
    assert (
        str(res.exception)
        == f"{tmp_path / 'rows.jsonl'}: {line}; each row's error is in {tmp_path / 'out.jsonl'}"
    )
    assert [r["reward"] for r in rows] == [0.0, 0.0] and all("error" in r["details"] for r in rows)  # kept


def test_a_field_already_mapped_gets_no_map_hint(tmp_path):
    src = write_jsonl(tmp_path / "rows.jsonl", [{"model_output": "\\boxed{1}", "final_answer": None}] * 2)
    out = tmp_path / "out.jsonl"
    args = ["-o", str(out), "--map", "response=model_output", "--map", "reference=final_answer"]
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), *args])
    assert str(res.exception) == (  # the column is there and mapped: its values are empty, not misnamed
        f"{src}: no row scored: all 2 failed; commonest reason (2 rows): item has no `reference` answer; "
        f"each row's error is in {out}"
    )


def test_the_commonest_reason_is_named_not_the_first(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text('{not json\n{"reference": "1"}\n{"reference": "2"}\n')
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert "no row scored: all 3 failed; commonest reason (2 rows): item has no text `response`" in str(
        res.exception
    )


def test_some_rows_failing_is_a_summary_line_and_exit_0(tmp_path):
    src = tmp_path / "rows.jsonl"
    good = {"response": "\\boxed{4}", "reference": "4"}
    src.write_text(
        "\n".join([json.dumps(good), '{"response": "\\\\boxed{1}"}', "{not json", '{"response": "x"}'])
    )
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert "4 rows, mean reward 0.2500, 3 with errors (1 unreadable lines)" in " ".join(res.output.split())
    assert lines[-1] == (
        "3 of 4 rows failed; commonest reason (2 rows): item has no `reference` answer; map a column to it "
        "with --map reference=COLUMN (columns: reference, response)"
    )
    assert [json.loads(r)["reward"] for r in (tmp_path / "o.jsonl").read_text().splitlines()] == [1, 0, 0, 0]


def test_an_empty_input_is_an_error_and_writes_nothing(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("\n  \n")
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert str(res.exception) == f"{src}: no rows to score (the file is empty)"
    assert not (tmp_path / "o.jsonl").exists()


def test_an_unreadable_input_is_one_error(tmp_path):
    if not os.access("/proc/self/mem", os.R_OK):
        pytest.skip("/proc/self/mem is not readable here")
    src = tmp_path / "rows.jsonl"
    src.symlink_to("/proc/self/mem")  # opens, and reading its first page is an I/O error
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert str(res.exception) == f"{src}: cannot be read (Input/output error)"
    assert not (tmp_path / "o.jsonl").exists()


def test_no_row_scored_from_the_shell_is_one_line_exit_2(tmp_path):
    src = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", "verify", "-v", "math", "-i", str(src)]
        + ["-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {src}: no row scored: all 2 failed; commonest reason (2 rows): item has no text `response`; "
        "map a column to it with --map response=COLUMN (columns: final_answer, id, model_output); each "
        f"row's error is in {out}"
    ]
    assert len(out.read_text().splitlines()) == 2


def test_a_malformed_map_is_one_error(tmp_path):
    res, _ = verify(tmp_path, "--map", "reference")
    assert res.exit_code == 1 and "--map 'reference': expected field=column" in str(res.exception)
