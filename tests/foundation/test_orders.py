"""The orders a user runs commands in, each on a fresh M1_HOME, and reruns: every order gives the same
datasets, an unchanged rerun builds and trains nothing and writes the same report, a changed setting
reruns exactly what reads it and every stale thing says why (flows/lineage.py).

- `m1 curate run` -> `m1 train curriculum` (the general stage, whose judge loses to a constant, is skipped
  with a line, never an error) -> `m1 train curriculum` again (everything reused);
- `m1 tasks logic` -> `m1 run` (the logic dataset stays the version built first) -> `m1 run` again (no
  new version, nothing trained, the same report) -> `m1 curate run` -> `m1 train stage reasoning` (both
  reused) -> a changed `train.rl_lr`: `m1 run --plan`, `m1 train list-stages` and `m1 train stage
  --restart` say what reruns and why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.foundation.test_user_path import SMALL as USER

SMALL = USER | {
    "name": "order",
    # a judge trained in seconds, which loses to a constant: the gate switches the general stage off
    "genrm": {
        "general_items": 16,
        "train_prompts": 6,
        "eval_prompts": 3,
        "judge_steps": 5,
        "judge_model": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "intermediate_size": 32,
            "vocab_size": 300,
        },
    },
    "swe": {"enabled": False},
}
M1 = str(Path(sys.executable).with_name("m1"))


def m1(*args: str, env: dict, config: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [M1, *args, "-c", str(config)], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert done.returncode == 0, f"m1 {' '.join(args)}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def versions(home: Path) -> dict[str, list[str]]:
    """Every dataset's version folders: a rerun that writes nothing leaves this as it was."""
    return {
        d.name: sorted(v.name for v in d.iterdir() if v.name.startswith("v"))
        for d in sorted((home / "datasets").iterdir())
    }


@pytest.fixture
def setup(tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps(SMALL))
    home = tmp_path / "home"
    env = os.environ | {"M1_HOME": str(home), "COLUMNS": "250", "PREFECT_HOME": str(tmp_path / "prefect")}
    return config, home, env


@pytest.mark.slow
def test_curate_run_then_train_curriculum_twice(setup):
    config, home, env = setup
    m1("curate", "run", env=env, config=config)
    listed = json.loads(m1("train", "list-stages", "--json", env=env, config=config).stdout)
    assert [(r["stage"], r["state"]) for r in listed] == [
        ("reasoning", "pending"),
        ("general", "pending"),  # the judge is not trained yet: nothing gates the general stage
        ("length-window", "pending"),
    ]
    assert all(
        r["reason"].startswith("datasets missing: dataset 'order-synlogic' does not exist") for r in listed
    )
    first = m1("train", "curriculum", env=env, config=config)
    assert "stage general: switched off" in first.stdout + first.stderr
    assert "reasoning" in first.stdout and "length-window" in first.stdout
    built = versions(home)
    assert {"order-curated", "order-synlogic", "order-code", "order-general"} <= set(built)
    again = m1("train", "curriculum", env=env, config=config)
    log = again.stdout + again.stderr
    assert "stage reasoning: done, built from the same inputs: reused" in log
    assert "stage length-window: done, built from the same inputs: reused" in log
    assert "sft step" not in log and "reasoning step" not in log  # nothing trained
    assert versions(home) == built
    listed = json.loads(m1("train", "list-stages", "--json", env=env, config=config).stdout)
    assert [(r["stage"], r["state"], r["done"]) for r in listed] == [
        ("reasoning", "done", True),
        ("length-window", "done", True),
    ]
    curate = m1("curate", "run", env=env, config=config)
    assert (
        "order-curated@v1 unchanged (same inputs as when it was built): reused"
        in curate.stdout + curate.stderr
    )
    assert versions(home) == built


@pytest.mark.slow
def test_tasks_then_run_then_every_command_again(setup):
    config, home, env = setup
    m1("tasks", "logic", env=env, config=config)
    logic = versions(home)["order-synlogic"]
    first = m1("run", env=env, config=config)
    assert versions(home)["order-synlogic"] == logic == ["v0001"]  # not rebuilt because curated exists now
    # the pipeline writes the general items ahead of their flow, which then reuses them
    assert "general items: order-general@v1 built (because: first build)" in first.stdout + first.stderr
    assert "order-general@v1; trained the judge, " in first.stdout
    built = versions(home)
    report = (home / "runs" / "order" / "report.md").read_text()

    again = m1("run", env=env, config=config)
    log = again.stdout + again.stderr
    assert versions(home) == built
    assert (home / "runs" / "order" / "report.md").read_text() == report
    for words in (
        "building",
        "sft step",
        "reasoning step",
        "judge trained",
        "Beginning subflow run 'order-curate-steps'",
    ):
        assert words not in log, words
    assert "before: evaluated on the same inputs before: reused" in log
    assert "reused" in again.stdout and "built" not in again.stdout.split("report:")[0].split("this run")[1]
    assert "general items: order-general@v1 unchanged (same inputs as when it was built): reused" in log
    assert first.stdout.count("\n") > 5

    m1("curate", "run", env=env, config=config)
    stage = m1("train", "stage", "reasoning", env=env, config=config)
    assert "stage reasoning: done and unchanged: reused" in stage.stdout
    assert versions(home) == built

    faster = {**SMALL, "train": {**SMALL["train"], "rl_lr": 2e-4}}
    config.write_text(json.dumps(faster))
    plan = m1("run", "--plan", env=env, config=config)
    rows = {line.split("│")[1].strip(): line for line in plan.stdout.splitlines() if line.count("│") >= 3}
    assert "reuse" in rows["order-curated@v1"] and "reuse" in rows["base model"]
    assert "train" in rows["stage reasoning"] and "train.rl_lr 0.0001 -> 0.0002" in rows["stage reasoning"]
    assert (
        "train" in rows["stage length-window"] and "stage reasoning is rerun" in rows["stage length-window"]
    )
    listed = json.loads(m1("train", "list-stages", "--json", env=env, config=config).stdout)
    assert [(r["state"], r["reason"]) for r in listed] == [
        ("stale", "train.rl_lr 0.0001 -> 0.0002"),
        ("stale", "train.rl_lr 0.0001 -> 0.0002; start checkpoint replaced: stage reasoning is rerun"),
    ]
    assert versions(home) == built  # planning and listing write nothing
