"""`m1 verify --map`: scoring a file whose columns have other names, and the one line that says so when
every row failed for the same reason."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from flows.cli import app
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
    assert "mean reward 0.5000, 0 with errors" in res.output and "every row failed" not in res.output


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            [],
            "every row failed the same way: item has no text `response`; map a column to it with "
            "--map response=COLUMN (columns: final_answer, id, model_output)",
        ),
        (
            ["--map", "response=model_output"],
            "every row failed the same way: item has no `reference` answer; map a column to it with "
            "--map reference=COLUMN (columns: final_answer, id, model_output)",
        ),
        (
            ["--map", "response=model_output", "--map", "reference=gold"],
            "every row failed the same way: no column 'gold' (--map reference=gold)",
        ),
    ],
)
def test_every_row_failing_alike_is_said_once_at_the_end(tmp_path, args, line):
    res, rows = verify(tmp_path, *args)
    assert res.exit_code == 0  # a stable interface: the rows carry their errors
    assert [r["reward"] for r in rows] == [0.0, 0.0] and all("error" in r["details"] for r in rows)
    assert res.output.strip().splitlines()[-1] == line


def test_different_failures_are_not_summed_up_as_one(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text('{"response": "\\\\boxed{1}"}\n{not json\n')
    res = CliRunner().invoke(app, ["verify", "-v", "math", "-i", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 0 and "2 with errors (1 unreadable lines)" in res.output
    assert "every row failed" not in res.output


def test_a_malformed_map_is_one_error(tmp_path):
    res, _ = verify(tmp_path, "--map", "reference")
    assert res.exit_code == 1 and "--map 'reference': expected field=column" in str(res.exception)
