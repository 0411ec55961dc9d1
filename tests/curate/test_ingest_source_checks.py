"""`m1 curate ingest` checks a source as `m1 run` and `m1 curate run` do (one implementation:
`flows.curate.ingest.check_source`), before it writes anything: a file with no rows, or no valid item,
or one that cannot be read; math items with no reference (the answer column not found, or empty). Each
check both ways: the failing file is one line naming it and leaves the store as it was (the good
version stays the latest), and the file that passes it is ingested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import PipelineConfig
from flows.curate.flow import preflight
from flows.errors import InputError
from flows.store import DatasetStore
from tests.curate.helpers import write_jsonl

runner = CliRunner()
GOOD = [{"question": "What is 40 + 2?", "answer": "42"}, {"question": "What is 6 * 7?", "answer": "42"}]
MEM = "/proc/self/mem"  # exists, opens, and every read of its first page is an I/O error (even for root)
ALIASES = "reference, answer, final_answer, gold, target, solution, output"


def ingest(path, *args: str):
    return runner.invoke(app, ["curate", "ingest", "-i", str(path), "-n", "mine", *args])


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def lines(*rows: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


@dataclass
class Case:
    """A file (name, content), and how `m1 curate ingest` (args) and `m1 run` (the source's settings,
    the curate section's) are told to read it; `expected`: the error, or the number of items ingested."""

    name: str
    content: str
    expected: str | int
    args: list[str] = field(default_factory=list)
    source: dict = field(default_factory=dict)
    curate: dict = field(default_factory=dict)


NO_PROMPT = {"question": "", "answer": "1"}
# Each check: a file that fails it, and the same file with what makes it pass (a row, a mapping, a setting)
CHECKS = {
    "empty": (
        Case("e.jsonl", "", "e.jsonl: the file has no rows"),
        Case("e.jsonl", lines(GOOD[0]), 1),
    ),
    "blank-lines": (
        Case("b.jsonl", "\n  \n\n", "b.jsonl: the file has no rows"),
        Case("b.jsonl", "\n" + lines(GOOD[0]) + "\n", 1),
    ),
    "no-valid-item": (
        Case(
            "n.jsonl",
            '{"question": \n[1, 2]\n',
            "n.jsonl: no valid items (2 rows quarantined; first: line 1: invalid JSON: Expecting value at "
            "column 14)",
        ),
        Case("n.jsonl", '{"question": \n' + lines(GOOD[0]), 1),
    ),
    "no-reference-column": (
        Case(
            "r.jsonl",
            lines({"question": "What is 40 + 2?", "final_ans": "42"}),
            f"r.jsonl: no reference column (looked for {ALIASES}); map the answer column, e.g. mapping = "
            '{ reference = "COLUMN" } under [[curate.sources]] (--map reference=COLUMN with `m1 curate '
            "ingest`); columns: question, final_ans",
        ),
        Case(
            "r.jsonl",
            lines({"question": "What is 40 + 2?", "final_ans": "42"}),
            1,
            args=["--map", "reference=final_ans"],
            source={"mapping": {"reference": "final_ans"}},
        ),
    ),
    "empty-references": (
        Case(
            "x.jsonl",
            lines(*({"question": f"What is {i} + 2?", "answer": " "} for i in range(3))),
            "x.jsonl: every reference (column 'answer') is empty; map the answer column",
        ),
        # one reference is enough: rows without one are the answer check's to remove, with a reason
        Case(
            "x.jsonl",
            lines(*({"question": f"What is {i} + 2?", "answer": " " if i else "2"} for i in range(3))),
            3,
        ),
    ),
    "mostly-quarantined": (
        Case(
            "q.jsonl",
            lines(*[NO_PROMPT] * 10, GOOD[0]),
            "q.jsonl: ingest removed 10 of 11 rows (empty prompt: 10): its prompt is read from 'question'",
        ),
        Case(
            "q.jsonl",
            lines(*[NO_PROMPT] * 10, GOOD[0]),
            1,
            args=["--max-removed-share", "1"],
            curate={"max_removed_share": 1},
        ),
    ),
}


def run_preflight(path, case: Case) -> InputError | None:
    """What `m1 run` and `m1 curate run` say of the same file (their preflight, before Prefect starts)."""
    curate = {"sources": [{"path": str(path), **case.source}], **case.curate}
    try:
        preflight(PipelineConfig.model_validate({"curate": curate}), pass_rate=False)
    except InputError as exc:
        return exc
    return None


@pytest.fixture
def good_version(tmp_path, m1_home):
    """A good version of the dataset, already in the store."""
    res = ingest(write_jsonl(tmp_path / "good.jsonl", GOOD))
    assert res.exit_code == 0, res.output
    return DatasetStore(m1_home).manifest("mine")


@pytest.mark.parametrize("check", list(CHECKS))
def test_a_source_failing_a_check_is_one_line_and_writes_nothing(tmp_path, m1_home, good_version, check):
    case = CHECKS[check][0]
    res = ingest(write(tmp_path / case.name, case.content), *case.args)
    assert isinstance(res.exception, InputError), res.output
    message = str(res.exception)
    assert (
        message.startswith(f"{tmp_path / case.name}: ") and case.expected in message and "\n" not in message
    )
    store = DatasetStore(m1_home)
    assert store.versions("mine") == [1] and store.manifest("mine").ref == good_version.ref  # not hidden
    assert store.names() == ["mine"]


@pytest.mark.parametrize("check", list(CHECKS))
def test_the_same_source_passing_the_check_is_ingested(tmp_path, m1_home, check):
    case = CHECKS[check][1]
    res = ingest(write(tmp_path / case.name, case.content), *case.args)
    assert res.exit_code == 0, res.output
    assert DatasetStore(m1_home).read("mine").height == case.expected


@pytest.mark.parametrize("check", list(CHECKS))
def test_m1_run_judges_the_same_files_alike(tmp_path, check):
    failing, passing = CHECKS[check]
    path = write(tmp_path / failing.name, failing.content)
    from_run = run_preflight(path, failing)
    assert from_run is not None and str(from_run) == str(ingest(path, *failing.args).exception)
    assert run_preflight(write(tmp_path / passing.name, passing.content), passing) is None


def test_a_domain_that_needs_no_reference_is_ingested_without_one(tmp_path, m1_home):
    rows = [{"question": "Sort: b a c", "task": "word_sorting"}]
    assert ingest(write_jsonl(tmp_path / "l.jsonl", rows), "--domain", "logic").exit_code == 0
    assert DatasetStore(m1_home).read("mine")["reference"].to_list() == [None]
    res = ingest(write_jsonl(tmp_path / "m.jsonl", rows))  # the same rows as math items: refused
    assert "no reference column" in str(res.exception)


def test_a_file_that_cannot_be_read_is_one_line(tmp_path, m1_home, good_version):
    if not os.access(MEM, os.R_OK):
        pytest.skip(f"{MEM} is not readable here")
    unreadable = tmp_path / "u.jsonl"
    unreadable.symlink_to(MEM)
    res = ingest(unreadable)
    assert str(res.exception) == f"{unreadable}: cannot be read (Input/output error)"
    assert str(run_preflight(unreadable, Case(unreadable.name, "", 0))) == str(res.exception)
    res = ingest(tmp_path / "missing.jsonl")
    assert str(res.exception) == f"{tmp_path / 'missing.jsonl'}: file not found"
    assert DatasetStore(m1_home).versions("mine") == [1]


def test_from_the_shell_an_empty_file_is_one_line_exit_2(tmp_path, m1_home):
    empty = write(tmp_path / "empty.jsonl", "")
    proc = subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", "curate", "ingest", "-i", str(empty)]
        + ["-n", "mine"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"error: {empty}: the file has no rows"]
    assert not m1_home.exists()
