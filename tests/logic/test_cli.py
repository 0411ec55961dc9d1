"""`m1 logic list/generate`, the `m1 verify --verifier logic` round trip, and `m1 bench logic`."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from typer.testing import CliRunner

from flows.cli import app
from verifiers.logic import TASKS
from verifiers.logic.reasoning_gym_adapter import available

runner = CliRunner()
MINE = [
    "sudoku",
    "kukurasu",
    "minesweeper",
    "star_placement",
    "skyscraper",
    "nonogram",
    "futoshiki",
    "calcudoku",
    "norinori",
    "numbrix",
    "survo",
    "arrow_maze",
    "campsite",
    "binairo",
    "hitori",
    "light_up",
    "kakuro",
    "n_queens",
    "magic_square",
    "latin_square",
    "lights_out",
]


def m1(*args: str) -> subprocess.CompletedProcess:
    """The real console entry point, so user errors are checked as users see them."""
    return subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_list_json_names_every_task_with_its_range():
    out = runner.invoke(app, ["logic", "list", "--json"])
    assert out.exit_code == 0, out.output
    listed = {row["name"]: row for row in json.loads(out.output)["tasks"]}
    built_in = {name for name, row in listed.items() if row["source"] == "built-in"}
    assert set(MINE) <= built_in and built_in == set(TASKS)
    gym = {f"rg_{name}" for name in available()}
    assert set(listed) - built_in == gym and all(name.startswith("rg_") for name in gym)
    assert listed["sudoku"]["min_difficulty"] == 1 and listed["sudoku"]["max_difficulty"] >= 5
    assert all(row["description"] for row in listed.values())


def test_generate_is_byte_identical_per_seed(tmp_path):
    paths = [tmp_path / name for name in ("a.jsonl", "b.jsonl", "c.jsonl")]
    for path, seed in zip(paths, ("5", "5", "6"), strict=True):
        out = runner.invoke(
            app,
            [
                "logic",
                "generate",
                "--task",
                "campsite",
                "--difficulty",
                "2",
                "--n",
                "3",
                "--seed",
                seed,
                "--output",
                str(path),
            ],
        )
        assert out.exit_code == 0, out.output
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()
    rows = [json.loads(line) for line in paths[0].read_text().splitlines()]
    assert len(rows) == 3 and len({r["id"] for r in rows}) == 3
    assert all(
        r["domain"] == "logic" and r["task"] == "campsite" and json.loads(r["metadata"])["puzzle"]
        for r in rows
    )


def test_generate_rejects_bad_input_in_one_line(tmp_path):
    target = tmp_path / "x.jsonl"
    bad_level = m1(
        "logic", "generate", "--task", "sudoku", "--difficulty", "99", "--n", "1", "--output", str(target)
    )
    assert (
        bad_level.returncode == 2 and "levels 1.." in bad_level.stderr and "Traceback" not in bad_level.stderr
    )
    bad_task = m1(
        "logic", "generate", "--task", "no_such", "--difficulty", "1", "--n", "1", "--output", str(target)
    )
    assert bad_task.returncode == 2 and "unknown logic task" in bad_task.stderr
    assert not target.exists()


def test_verify_round_trip_scores_gold_and_near_misses(tmp_path):
    items = tmp_path / "items.jsonl"
    out = runner.invoke(
        app,
        ["logic", "generate", "--task", "light_up", "--difficulty", "1", "--n", "4", "--output", str(items)],
    )
    assert out.exit_code == 0, out.output
    task = TASKS["light_up"]
    scored_in = tmp_path / "responses.jsonl"
    with scored_in.open("w") as fh:
        for i, line in enumerate(items.read_text().splitlines()):
            row = json.loads(line)
            meta = json.loads(row["metadata"])
            inst = task.generate(meta["difficulty"], meta["seed"])
            answer = inst.answer if i % 2 == 0 else task.corrupt(inst, i)
            fh.write(json.dumps(row | {"response": f"Reasoning...\n<answer>{answer}</answer>"}) + "\n")
        fh.write(json.dumps({"id": "x", "task": "light_up", "response": "<answer>(1, 1)</answer>"}) + "\n")
    scored = tmp_path / "scored.jsonl"
    result = m1("verify", "--verifier", "logic", "--input", str(scored_in), "--output", str(scored))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in scored.read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert rows[1]["details"]["violations"]
    assert "puzzle" in rows[4]["details"]["error"]


def test_bench_prints_rates_and_ratios():
    out = runner.invoke(app, ["bench", "logic", "--n", "1", "--tasks", "lights_out,survo"])
    assert out.exit_code == 0, out.output
    assert "lights_out" in out.output and "survo" in out.output
    assert len(re.findall(r"\d+\.\d{3}x", out.output)) == 2  # the hardest/easiest ratio column
