"""Ingest presets (flows/curate/presets/) on small files in each public schema (tests/curate/data/presets:
the hub copies' field names and value types, written for these tests), read into items the verifiers
score: detection, every preset's fields, an explicit mapping winning, and one-line errors naming the file,
the row and the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import PRESET_NAMES, BenchmarkConfig, DataConfig
from flows.curate import flow
from flows.curate.ingest import load_items, read_benchmark
from flows.curate.presets import PRESETS
from flows.errors import InputError
from flows.store import DatasetStore
from tests.curate.helpers import write_jsonl

DATA = Path(__file__).parent / "data" / "presets"
FILES = {
    "gsm8k.jsonl": "gsm8k",
    "math.jsonl": "math",
    "math500.jsonl": "math",
    "numina.jsonl": "numina",
    "humaneval.jsonl": "humaneval",
    "mbpp.jsonl": "mbpp",
    "mbpp_sanitized.jsonl": "mbpp",
    "apps.jsonl": "apps",
    "codecontests.jsonl": "codecontests",
    "swebench.jsonl": "swebench",
}


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def items(name: str, **kw) -> list[dict]:
    got = load_items(DATA / name, **kw)
    return [r | {"metadata": json.loads(r["metadata"])} for r in got.items.to_dicts()]


def test_every_preset_has_a_sample_file_and_each_is_detected():
    assert set(FILES.values()) == set(PRESETS)
    assert tuple(PRESETS) == PRESET_NAMES  # the names the config accepts, in the order its errors list them
    for name, preset in FILES.items():
        got = load_items(DATA / name)
        assert (got.preset, got.detected) == (preset, True), name
        assert got.describe_mapping().startswith(f"preset {preset} (detected): "), name
        assert got.rows_read == len(rows(name))


def test_gsm8k_reference_is_the_number_after_the_hashes():
    got = items("gsm8k.jsonl")
    assert [r["reference"] for r in got] == ["72", "1750", "-2"]  # thousands separators dropped
    assert got[0]["prompt"].startswith("Natalia sold clips") and got[0]["domain"] == "math"
    assert got[0]["metadata"] == {"solution": rows("gsm8k.jsonl")[0]["answer"]}  # the reasoning, whole
    assert [r["id"] for r in got] == ["gsm8k-000000", "gsm8k-000001", "gsm8k-000002"]


def test_math_reference_level_and_type():
    got = items("math.jsonl")
    assert [r["reference"] for r in got] == ["\\sqrt{2}", "\\frac{3}{4}", "30"]  # nested braces kept
    assert [r["task"] for r in got] == ["Intermediate Algebra", "Prealgebra", "Number Theory"]
    assert [r["metadata"].get("difficulty") for r in got] == [3, 1, None]  # "Level ?" has none
    assert got[2]["metadata"]["level"] == "Level ?"
    assert got[0]["metadata"]["solution"] == rows("math.jsonl")[0]["solution"]
    math500 = items("math500.jsonl")  # the answer column, subject as task, int level, unique_id as id
    assert math500[0]["reference"] == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert (math500[0]["task"], math500[0]["metadata"]["difficulty"]) == ("Precalculus", 2)
    assert math500[0]["id"] == "test/precalculus/807.json"


@pytest.mark.parametrize(
    ("solution", "reference", "reason"),
    [
        ("so $\\boxed{\\frac{1}{2}}$ and not \\boxed{3}? No: \\boxed{4}.", "4", None),  # the last box
        ("\\fbox{7}", "7", None),
        ("it is $\\boxed{\\frac{1}{2}$", None, "unbalanced \\boxed{ in solution"),
        ("the answer is 5", None, "no \\boxed{} answer in solution"),
    ],
)
def test_math_takes_the_last_box_and_quarantines_the_rest(tmp_path, solution, reference, reason):
    row = {"problem": "What is it?", "level": "Level 2", "type": "Algebra", "solution": solution}
    got = load_items(write_jsonl(tmp_path / "m.jsonl", [row]), preset="math")
    if reason is None:
        assert got.items["reference"].to_list() == [reference] and got.quarantined.height == 0
    else:
        assert got.items.height == 0 and got.quarantined["reason"].to_list() == [reason]


def test_numina_answer_task_messages_and_proofs():
    got = items("numina.jsonl")
    assert [r["reference"] for r in got] == ["5", "\\{-3,-2,0,1\\}"]
    assert [r["task"] for r in got] == ["cn_k12", "olympiads"]
    assert got[0]["metadata"]["messages"][0] == {"content": got[0]["prompt"], "role": "user"}
    quarantined = load_items(DATA / "numina.jsonl").quarantined
    assert quarantined["reason"].to_list() == ["no \\boxed{} answer in solution"]  # the proof


def test_numina_15_answer_column(tmp_path):
    cols = {"problem_type": "Algebra", "question_type": "math-word-problem", "source": "olympiads"}
    file = write_jsonl(
        tmp_path / "n15.jsonl",
        [
            {"problem": "1+1?", "solution": "\\boxed{2}", "answer": "2", "synthetic": False, **cols},
            {"problem": "Show x.", "solution": "...", "answer": "proof", "synthetic": False, **cols},
        ],
    )
    got = load_items(file)
    assert (got.preset, got.items["reference"].to_list()) == ("numina", ["2"])
    assert got.quarantined["reason"].to_list() == ["a proof (no answer to check)"]


def test_code_presets_carry_the_code_verifier_fields():
    he = items("humaneval.jsonl")[0]
    raw = rows("humaneval.jsonl")[0]
    assert (he["id"], he["domain"], he["task"]) == ("HumanEval/0", "code", "humaneval")
    assert {k: he["metadata"][k] for k in ("test", "entry_point")} == {
        "test": raw["test"],
        "entry_point": "has_close_elements",
    }
    assert raw["prompt"] in he["prompt"] and he["reference"].startswith("```python\nfrom typing import List")
    mbpp, sanitized = items("mbpp.jsonl")[0], items("mbpp_sanitized.jsonl")[0]
    assert mbpp["id"] == "mbpp/2" and mbpp["metadata"]["test_list"] == rows("mbpp.jsonl")[0]["test_list"]
    assert mbpp["metadata"]["test_setup_code"] == "" and mbpp["metadata"]["challenge_test_list"] == []
    assert all(t in mbpp["prompt"] for t in mbpp["metadata"]["test_list"])  # as the MBPP paper prompts
    assert sanitized["metadata"]["test_imports"] == ["import heapq as hq"]
    assert sanitized["prompt"].startswith("Write a function to find the n largest")
    stdio, call = items("apps.jsonl")
    assert stdio["metadata"]["tests"] == [
        {"input": "2\n1 5\n314 15\n", "output": "6\n329\n"},
        {"input": "1\n-7 7\n", "output": "0\n"},
    ]
    assert call["metadata"]["fn_name"] == "count_smileys"
    assert call["metadata"]["tests"][1] == {"args": [[":D", ":~)", ";~D", ":)"]], "expected": 4}
    assert (stdio["metadata"]["difficulty"], call["metadata"]["difficulty"]) == (1, 2)
    assert "def count_smileys(arr):" in call["prompt"]  # the starter code
    first, second = items("codecontests.jsonl")
    assert [t["input"] for t in first["metadata"]["tests"]] == ["3\n", "-4\n", "0\n", "1000000000\n"]
    assert (first["metadata"]["time_limit_s"], first["metadata"]["memory_mb"]) == (2, 244)
    assert (first["metadata"]["difficulty"], second["metadata"]["difficulty"]) == (1, 2)  # letters A, B
    assert first["reference"] == "```python\nprint(2 * int(input()))\n```"  # Python 3 before C++
    assert second["reference"].startswith("```cpp\n#include <iostream>")  # C++ when it is all there is
    assert first["id"] == "1000_A. Double It" and "incorrect_solutions" not in first["metadata"]


@pytest.fixture(scope="module")
def code_verifier(request):
    pytest.importorskip("verifiers.code_programs", reason="the code verifier's HumanEval/MBPP forms")
    request.getfixturevalue("process_sandbox")  # after the importorskip, whose reason comes first
    from verifiers.code import CodeVerifier

    return CodeVerifier(time_limit_s=2, memory_mb=256)


@pytest.mark.parametrize("name", ["humaneval.jsonl", "mbpp.jsonl", "apps.jsonl", "codecontests.jsonl"])
def test_code_items_score_their_reference_1_and_others_0(code_verifier, name):
    got = items(name)
    wrong = [got[-1]["reference"], *[g["reference"] for g in got[:-1]]]  # each item gets another's code
    scored = code_verifier.verify(
        [dict(r, response=r["reference"]) for r in got]
        + [dict(r, response="```python\npass\n```") for r in got]
        + [dict(r, response=w) for r, w in zip(got, wrong, strict=True)]
    )
    n = len(got)
    assert [s.reward for s in scored[:n]] == [1.0] * n, [s.details for s in scored[:n]]
    assert [s.reward for s in scored[n:]] == [0.0] * (2 * n)


def test_swebench_items_are_the_swe_verifiers_tasks(tmp_path):
    from verifiers.swe import SWETask

    (item,) = items("swebench.jsonl")
    raw = rows("swebench.jsonl")[0]
    assert (item["id"], item["domain"], item["task"]) == ("acme__calc-101:repair", "swe", "repair")
    assert item["reference"] == raw["patch"] and "add() subtracts" in item["prompt"]
    task = SWETask.from_row({**item, "metadata": json.dumps(item["metadata"])})
    assert task.FAIL_TO_PASS == ["tests/test_ops.py::test_add"] and task.PASS_TO_PASS == []
    assert task.to_row() == SWETask.from_row(raw).to_row()
    # lists (Parquet, Verified) read alike, and Verified's difficulty becomes a level
    verified = {**raw, "FAIL_TO_PASS": ["tests/test_ops.py::test_add"], "PASS_TO_PASS": []}
    verified["difficulty"] = "15 min - 1 hour"
    pl.DataFrame([verified]).write_parquet(tmp_path / "verified.parquet")
    got = load_items(tmp_path / "verified.parquet")
    meta = json.loads(got.items["metadata"][0])
    assert got.preset == "swebench" and meta["FAIL_TO_PASS"] == ["tests/test_ops.py::test_add"]
    assert (meta["difficulty"], meta["difficulty_label"]) == (2, "15 min - 1 hour")


def test_structures_read_alike_from_parquet_and_datasets_folders(tmp_path):
    import datasets

    for name in ("codecontests.jsonl", "apps.jsonl", "numina.jsonl"):
        want = load_items(DATA / name).items
        parquet = tmp_path / name.replace(".jsonl", ".parquet")
        pl.read_ndjson(DATA / name).write_parquet(parquet)
        assert load_items(parquet, source=Path(name).stem).items.equals(want), name
    folder = tmp_path / "gsm8k_hf"
    datasets.Dataset.from_list(rows("gsm8k.jsonl")).save_to_disk(str(folder))
    got = load_items(folder, source="gsm8k")
    assert got.preset == "gsm8k" and got.items["reference"].to_list() == ["72", "1750", "-2"]


def test_a_question_answer_file_without_hashes_is_not_gsm8k(tmp_path):
    got = load_items(write_jsonl(tmp_path / "qa.jsonl", [{"question": "6*7?", "answer": "42"}]))
    assert got.preset is None and got.items["reference"].to_list() == ["42"]
    assert got.describe_mapping() == "prompt <- question (inferred), reference <- answer (inferred)"


def test_named_preset_reads_a_file_with_more_columns_and_the_mapping_wins(tmp_path):
    extra = [r | {"uid": f"g{i}", "split": "train"} for i, r in enumerate(rows("gsm8k.jsonl"))]
    file = write_jsonl(tmp_path / "g.jsonl", extra)
    assert load_items(file).preset is None  # columns are not exactly GSM8K's: read by name
    got = load_items(file, preset="gsm8k", mapping={"id": "uid", "metadata.part": "split"})
    assert (got.preset, got.detected) == ("gsm8k", False)
    assert got.items["id"].to_list() == ["g0", "g1", "g2"] and got.items["reference"][0] == "72"
    assert json.loads(got.items["metadata"][0])["part"] == "train"
    assert got.describe_mapping().startswith("preset gsm8k: prompt <- question")
    assert "id <- uid" in got.describe_mapping()
    whole = load_items(DATA / "gsm8k.jsonl", mapping={"reference": "answer"})  # detected; mapping wins
    assert whole.items["reference"][0] == rows("gsm8k.jsonl")[0]["answer"]


@pytest.mark.parametrize(
    ("preset", "row", "message"),
    [
        ("gsm8k", {"question": "q", "answer": "42"}, "line 3: answer: no final '#### <answer>' line"),
        (
            "apps",
            {"problem_id": 1, "question": "q", "input_output": "{inputs: [", "solutions": "[]"},
            "line 3: input_output: not JSON (",
        ),
        (
            "apps",
            {"question": "q", "input_output": json.dumps({"inputs": ["1"], "outputs": []})},
            "line 3: input_output: expected `inputs` and `outputs` lists of the same length",
        ),
        (
            "codecontests",
            {"description": "d", "public_tests": {"input": ["1"], "output": ["1", "2"]}},
            "line 3: public_tests: expected `input` and `output` lists of the same length",
        ),
        ("mbpp", {"text": "t", "code": "c", "test_list": "assert f()"}, "line 3: test_list: not JSON"),
        (
            "swebench",
            {**rows("swebench.jsonl")[0], "FAIL_TO_PASS": "tests/test_ops.py::test_add"},
            "line 3: FAIL_TO_PASS: not JSON",
        ),
        ("humaneval", {"prompt": "def f():", "test": "def check(c): pass"}, "line 3: entry_point: missing"),
    ],
)
def test_a_row_the_preset_cannot_read_is_one_line_naming_file_row_and_field(tmp_path, preset, row, message):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(rows(next(f for f, p in FILES.items() if p == preset))[0])
    path.write_text(f"{good}\n\n{json.dumps(row)}\n")  # a blank line: the row is on line 3
    with pytest.raises(InputError) as err:
        load_items(path, preset=preset)
    assert str(err.value).startswith(f"{path}: {message}") and err.value.args[0].endswith(
        f"(preset {preset})"
    )
    assert "\n" not in str(err.value)


def test_unknown_preset_is_an_error_naming_the_known_ones(tmp_path):
    with pytest.raises(InputError, match=r"unknown preset 'gsm9k' \(known: gsm8k, math, numina, "):
        load_items(DATA / "gsm8k.jsonl", preset="gsm9k")
    with pytest.raises(ValueError, match="unknown preset 'gsm9k'"):
        BenchmarkConfig(path="x", preset="gsm9k")


def test_benchmarks_in_a_preset_schema_have_references_to_evaluate(tmp_path):
    bench = read_benchmark(DATA / "gsm8k.jsonl", label="gsm8k")  # detected
    assert bench["reference"].to_list() == ["72", "1750", "-2"]
    assert bench["id"].to_list() == ["gsm8k#0", "gsm8k#1", "gsm8k#2"]
    extra = write_jsonl(tmp_path / "m.jsonl", [r | {"split": "test"} for r in rows("math.jsonl")])
    got = flow.benchmarks(DataConfig(benchmarks=[BenchmarkConfig(path=str(extra), preset="math")]))
    assert got["m"]["reference"].to_list() == ["\\sqrt{2}", "\\frac{3}{4}", "30"]
    assert got["m"]["prompt"][0].startswith("If $x^2+y^2=1$")


def test_m1_curate_ingest_with_a_preset(tmp_path, m1_home):
    runner = CliRunner()
    res = runner.invoke(app, ["curate", "ingest", "-i", str(DATA / "apps.jsonl"), "-n", "apps"])
    assert res.exit_code == 0, res.output
    assert "columns preset apps (detected): id <- problem_id, prompt <- question" in res.output
    assert "2 rows read, 2 items, 0 quarantined" in res.output
    stored = DatasetStore(m1_home)
    assert stored.read("apps")["id"].to_list() == ["apps/4001", "apps/4002"]
    assert stored.manifest("apps").params["preset"] == "apps"
    renamed = tmp_path / "mine.jsonl"
    write_jsonl(renamed, [r | {"note": "x"} for r in rows("humaneval.jsonl")])
    res = runner.invoke(app, ["curate", "ingest", "-i", str(renamed), "-n", "he", "--preset", "humaneval"])
    assert res.exit_code == 0, res.output
    assert "columns preset humaneval: id <- task_id" in res.output
    assert json.loads(stored.read("he")["metadata"][0])["note"] == "x"
    bad = runner.invoke(app, ["curate", "ingest", "-i", str(renamed), "-n", "x", "--preset", "nope"])
    assert bad.exit_code != 0 and "unknown preset 'nope'" in str(bad.exception or bad.output)


def test_every_preset_through_curate_sources_and_m1_curate_run(prefect_harness, tmp_path, m1_home):
    names = ["gsm8k", "math", "numina", "humaneval", "mbpp", "apps", "codecontests", "swebench"]
    for name in names:
        shutil.copy(DATA / f"{name}.jsonl", tmp_path / f"{name}.jsonl")
    (tmp_path / "extra.jsonl").write_text(
        "".join(json.dumps(r | {"split": "train"}) + "\n" for r in rows("math500.jsonl"))
    )
    sources = "".join(f'[[curate.sources]]\npath = "{tmp_path / n}.jsonl"\n' for n in names)
    sources += f'[[curate.sources]]\npath = "{tmp_path / "extra.jsonl"}"\npreset = "math"\n'
    config = tmp_path / "run.toml"
    config.write_text(f'name = "pre"\nhome = "{m1_home}"\n{sources}')
    res = CliRunner().invoke(app, ["curate", "run", "-c", str(config)], terminal_width=300)
    assert res.exit_code == 0, res.output
    assert "pre-curated@v1: 19 items" in res.output
    for name in names:
        assert f"{name}.jsonl: columns preset {name} (detected): " in res.output
    assert "extra.jsonl: columns preset math: id <- unique_id" in res.output
    curated = DatasetStore(m1_home).read("pre-curated")
    by_source = dict(curated.group_by("source").len().rows())
    assert by_source == {
        "gsm8k": 3,
        "math": 3,
        "numina": 2,
        "humaneval": 2,
        "mbpp": 2,
        "apps": 2,
        "codecontests": 2,
        "swebench": 1,
        "extra": 2,
    }
    domains = dict(curated.group_by("domain").len().rows())
    assert domains == {"math": 10, "code": 8, "swe": 1}  # code and SWE items pass the math-only steps
    assert set(curated.filter(pl.col("domain") == "math")["answer"].to_list()) >= {"72", "\\sqrt{2}"}
    again = CliRunner().invoke(app, ["curate", "run", "-c", str(config)], terminal_width=300)
    assert again.exit_code == 0, again.output
    assert "pre-curated@v1: 19 items" in again.output  # unchanged input: the same version, not v2
    assert DatasetStore(m1_home).versions("pre-curated") == [1]
