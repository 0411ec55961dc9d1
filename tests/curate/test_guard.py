"""A step that removes (nearly) every row of a source fails the run with one line naming the column to
map, instead of ending with `0 items` and exit 0 (flows/curate/guard.py); found before Prefect starts
where the inputs alone show it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import PipelineConfig
from flows.curate.guard import Span, check, problem, reason_kind
from flows.errors import InputError
from flows.store import DatasetStore
from tests.curate.helpers import write_jsonl

SPAN = Span("mine.jsonl", 0, 10, ["question", "final_ans", "notes"], {"prompt": "question"})


def math_rows(n: int, **columns) -> list[dict]:
    return [
        {"question": f"A farmer has {i + 3} cows and buys {2 * i + 1} more at the market. How many now?"}
        | {k: v(i) for k, v in columns.items()}
        for i in range(n)
    ]


def test_reason_kinds_drop_the_rows_particulars():
    assert reason_kind("duplicate of mine-3 (jaccard 0.91)") == "duplicate"
    assert reason_kind("line 7: invalid JSON: x at column 2") == "invalid JSON: x at column 2"
    assert reason_kind("answer 'blue' (answer-is) is words ('blue'), not a rule-checkable expression") == (
        "answer … is words, not a rule-checkable expression"
    )
    assert reason_kind("unknown domain (expected one of math, code)") == "unknown domain"


def test_the_share_is_strictly_above_the_threshold_and_1_never_fails():
    assert problem(SPAN, "clean", 10, ["empty reference"] * 9, 0.9) is None
    assert problem(SPAN, "clean", 10, ["empty reference"] * 10, 0.9) is not None
    assert problem(SPAN, "clean", 10, ["empty reference"] * 10, 1.0) is None
    assert problem(SPAN, "clean", 10, ["empty reference"] * 6, 0.5) is not None
    assert problem(SPAN, "clean", 0, [], 0.0) is None  # nothing came in


def test_a_reason_about_a_column_names_it_and_the_unmapped_columns():
    message = problem(SPAN, "clean", 10, ["empty reference"] * 8 + ["proof question"] * 2, 0.5)
    assert message == (
        "mine.jsonl: clean removed 10 of 10 rows (empty reference: 8): no reference column was found; map "
        'the right column, e.g. mapping = { reference = "COLUMN" } under [[curate.sources]] (--map '
        "reference=COLUMN with `m1 curate ingest`); unmapped columns: final_ans, notes"
    )
    read = Span("m.jsonl", 0, 4, ["q", "explanation"], {"prompt": "q", "reference": "explanation"})
    words = ["answer 'so' (expression) is words ('so'), not a rule-checkable expression"] * 4
    assert "its reference is read from 'explanation'; map the right column" in problem(
        read, "answer-check", 4, words, 0.9
    )
    prompts = problem(SPAN, "ingest", 3, ["empty prompt"] * 3, 0.9)
    assert "(empty prompt: 3): its prompt is read from 'question'; map the right column" in prompts
    tests = problem(Span("c.jsonl", 0, 2, ["q"], {}), "ingest", 2, ["no tests"] * 2, 0.9)
    assert 'mapping = { "metadata.tests" = "COLUMN" }' in tests  # a dotted key is quoted in TOML


def test_a_reason_about_no_column_says_how_to_accept_it():
    with pytest.raises(InputError) as err:
        check(SPAN, "exact-dedup", 4, ["duplicate of a (exact)"] * 4, 0.9)
    assert str(err.value) == (
        "mine.jsonl: exact-dedup removed 4 of 4 rows (duplicate: 4); if that is expected, raise "
        "curate.max_removed_share (now 0.9; 1: never fail)"
    )


def test_usual_answer_names_are_found(tmp_path):
    from flows.curate.ingest import load_items

    for name in ("final_answer", "answer", "target", "gold"):
        got = load_items(write_jsonl(tmp_path / f"{name}.jsonl", math_rows(2, **{name: str})))
        assert got.mapping["reference"] == name and got.items["reference"].to_list() == ["0", "1"]


def test_an_unrecognised_answer_column_fails_before_prefect_starts(tmp_path, m1_home):
    data = write_jsonl(tmp_path / "mine.jsonl", math_rows(3, final_ans=str))
    config = tmp_path / "run.toml"
    config.write_text(f'name = "x"\n[[curate.sources]]\npath = "{data}"\n')
    proc = subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", "curate", "run", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {data}: no reference column (looked for reference, answer, final_answer, gold, target, "
        'solution, output); map the answer column, e.g. mapping = { reference = "COLUMN" } under '
        "[[curate.sources]] (--map reference=COLUMN with `m1 curate ingest`); columns: question, final_ans"
    ]
    assert not m1_home.exists()  # no Prefect database, no dataset: it failed before either


def test_a_step_removing_a_sources_rows_fails_the_flow(prefect_harness, tmp_path):
    from flows.curate.flow import curate_flow

    good = write_jsonl(tmp_path / "good.jsonl", math_rows(12, answer=lambda i: str(3 * i + 4)))
    proofs = write_jsonl(
        tmp_path / "proofs.jsonl",
        [
            {"question": f"Prove that {i} + {i} is even for the integer {i}.", "answer": "even"}
            for i in range(3)
        ],
    )
    base = {"name": "g", "home": str(tmp_path / "home")}
    sources = [{"path": str(good)}, {"path": str(proofs)}]
    cfg = PipelineConfig.model_validate(base | {"curate": {"sources": sources}})
    with pytest.raises(InputError) as err:
        curate_flow(cfg)
    assert str(err.value) == (
        f"{proofs}: clean removed 3 of 3 rows (proof question: 3); if that is expected, raise "
        "curate.max_removed_share (now 0.9; 1: never fail)"
    )  # the good source beside it does not hide it
    assert DatasetStore(cfg.home).names() == []
    accepted = PipelineConfig.model_validate(base | {"curate": {"sources": sources, "max_removed_share": 1}})
    out = curate_flow(accepted)
    assert out["manifest"]["rows"] == 12 and out["manifest"]["version"] == 1


def test_m1_curate_ingest_refuses_a_file_it_would_mostly_quarantine(tmp_path, m1_home):
    data = write_jsonl(
        tmp_path / "p.jsonl", [{"problem": " ", "answer": "1"}] * 10 + [{"problem": "1+1?", "answer": "2"}]
    )
    runner = CliRunner()
    res = runner.invoke(app, ["curate", "ingest", "-i", str(data), "-n", "p"])
    assert res.exit_code == 1 and isinstance(res.exception, InputError)
    assert str(res.exception).startswith(
        f"{data}: ingest removed 10 of 11 rows (empty prompt: 10): its prompt"
    )
    assert not (m1_home / "datasets").exists()
    res = runner.invoke(app, ["curate", "ingest", "-i", str(data), "-n", "p", "--max-removed-share", "1"])
    assert res.exit_code == 0, res.output
    assert json.loads(DatasetStore(m1_home).manifest("p").to_json())["rows"] == 1
