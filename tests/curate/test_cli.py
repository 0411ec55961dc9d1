"""`m1 curate ...` round trips through files, and one-line errors for bad input."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.errors import InputError
from tests.curate.helpers import write_jsonl

runner = CliRunner()
BASE = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat all day long"


def m1(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("method", ["exact", "minhash"])
def test_dedup_round_trip_without_id_column(tmp_path, method):
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"prompt": BASE},
            {"prompt": "  " + BASE.upper()},
            {"prompt": "ünïcode — something else entirely here"},
        ],
    )
    out, cl = tmp_path / "out.parquet", tmp_path / "cl.parquet"
    res = m1(
        "curate",
        "dedup",
        "--input",
        str(src),
        "--output",
        str(out),
        "--clusters",
        str(cl),
        "--method",
        method,
        "--threshold",
        "0.8",
    )
    assert res.exit_code == 0, res.output
    assert "assigned ids to 3 rows" in res.output
    kept, clusters = pl.read_parquet(out), pl.read_parquet(cl)
    assert kept["id"].to_list() == ["in-000000", "in-000002"]
    assert clusters.select("id", "cluster").rows() == [
        ("in-000000", "in-000000"),
        ("in-000001", "in-000000"),
        ("in-000002", "in-000002"),
    ]


def test_decontaminate_round_trip_parquet(tmp_path):
    src = tmp_path / "in.parquet"
    pl.DataFrame({"id": ["a", "b"], "question": [BASE, "a different question about primes"]}).write_parquet(
        src
    )
    bench = write_jsonl(tmp_path / "aime.jsonl", [{"id": "aime#1", "prompt": "prefix " + BASE}])
    out, matches = tmp_path / "out.jsonl", tmp_path / "m.parquet"
    res = m1(
        "curate",
        "decontaminate",
        "-i",
        str(src),
        "-b",
        str(bench),
        "--text-column",
        "question",
        "-o",
        str(out),
        "--matches",
        str(matches),
    )
    assert res.exit_code == 0, res.output
    assert pl.read_ndjson(out)["id"].to_list() == ["b"]
    assert pl.read_parquet(matches).select("id", "benchmark", "benchmark_id", "method").rows() == [
        ("a", "aime", "aime#1", "13-gram")
    ]


def test_clean_and_answers_round_trip(tmp_path):
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "1", "prompt": "What is 2+2?", "reference": "The answer is 4."},
            {"id": "2", "prompt": "Prove it.", "reference": "done"},
        ],
    )
    res = m1(
        "curate",
        "clean",
        "-i",
        str(src),
        "-o",
        str(tmp_path / "c.parquet"),
        "--removed",
        str(tmp_path / "r.parquet"),
    )
    assert res.exit_code == 0, res.output
    assert pl.read_parquet(tmp_path / "r.parquet")["reason"].to_list() == ["proof question"]
    res = m1("curate", "answers", "-i", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "a.parquet"))
    assert res.exit_code == 0 and pl.read_parquet(tmp_path / "a.parquet")["answer"].to_list() == ["4"]


def _dedup_args(src, out_dir) -> list[str]:
    """`m1 curate dedup` on src, writing into out_dir."""
    out, clusters = str(out_dir / "o.parquet"), str(out_dir / "c.parquet")
    return ["curate", "dedup", "--input", str(src), "--output", out, "--clusters", clusters]


@pytest.mark.parametrize(
    "content,args,message",
    [
        (None, ["--method", "exact"], "in.jsonl: file not found"),
        ('{"prompt": "x"}\n{"prompt": \n', ["--method", "exact"], "in.jsonl: line 2: invalid JSON"),
        ('{"text": "x"}\n', ["--method", "exact"], "in.jsonl: missing column(s) prompt (has: text)"),
        (
            '{"prompt": "x"}\n',
            ["--method", "fuzzy"],
            "--method: 'fuzzy' is not one of exact, minhash, embedding",
        ),
    ],
)
def test_bad_input_is_an_input_error_and_writes_nothing(tmp_path, content, args, message):
    src = tmp_path / "in.jsonl"
    if content is not None:
        src.write_text(content)
    res = m1(*_dedup_args(src, tmp_path), *args)
    assert isinstance(res.exception, InputError) and message in str(res.exception)
    assert "\n" not in str(res.exception)
    assert not (tmp_path / "o.parquet").exists()


def test_bad_input_from_the_shell_is_one_line_exit_2(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"prompt": "x"}\n{"prompt": \n')
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flows.cli import main; main()",
            *_dedup_args(src, tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {src}: line 2: invalid JSON: Expecting value at column 12"
    ]


def test_ingest_into_the_store(tmp_path, m1_home):
    from flows.store import DatasetStore

    src = write_jsonl(tmp_path / "raw.jsonl", [{"problem": "1+1?", "solution": "2"}, {"problem": ""}])
    res = m1("curate", "ingest", "-i", str(src), "--name", "raw", "--map", "prompt=problem")
    assert res.exit_code == 0, res.output
    assert "2 rows read, 1 items, 1 quarantined, 2 ids assigned -> raw@v1" in res.output
    store = DatasetStore()
    assert store.read("raw")["reference"].to_list() == ["2"]
    assert store.quarantine("raw")["reason"].to_list() == ["empty prompt"]
