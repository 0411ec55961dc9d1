"""Ctrl-C and SIGTERM during training: `m1 train stage` on the temporary Prefect server it starts, as a
user runs it, stops within 5 seconds with exit 130 (SIGINT to its process group, as a terminal sends
Ctrl-C) or 143 (SIGTERM to its pid, as a process manager sends it), one line and no traceback on the
terminal, nothing it started left running, the flow run marked Crashed; the same command then resumes from
the newest checkpoint and ends with the weights of an uninterrupted run, bit for bit. The same on two
processes (torchrun) and during the SFT warm start."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.processes import interrupt
from tests.rl.test_faults import assert_bitwise_equal, resumed_step, run_to_end, weights

M1 = str(Path(sys.executable).with_name("m1"))
STEPS = 6
SECONDS = 5.0


@pytest.fixture
def stage_cli(tiny_stage, tmp_path):
    """`m1 train stage a` on the tiny stage, with no Prefect server configured: it starts its own."""
    config, home, stage = tiny_stage(steps=STEPS)
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env |= {"M1_HOME": str(home), "HOME": str(tmp_path), "COLUMNS": "200"}
    return [M1, "train", "stage", "a", "-c", str(config)], env, home, stage


def flow_run_states(home: Path) -> dict[str, str]:
    """Every flow run in the run's Prefect database (under M1_HOME) and its state."""
    with sqlite3.connect(home / "prefect" / "prefect.db") as db:
        return dict(db.execute("select name, state_name from flow_run order by created"))


def flow_run_logs(home: Path, name: str) -> list[str]:
    """The log lines of the newest flow run named ``name`` that reached the Prefect API (its database)."""
    with sqlite3.connect(home / "prefect" / "prefect.db") as db:
        (run,) = db.execute(
            "select id from flow_run where name = ? order by created desc limit 1", (name,)
        ).fetchone()
        return [
            m
            for (m,) in db.execute("select message from log where flow_run_id = ? order by timestamp", (run,))
        ]


def assert_stopped_cleanly(stopped, signum: int) -> None:
    assert stopped.returncode == 128 + signum, stopped
    assert stopped.seconds < SECONDS, stopped
    assert "Traceback" not in stopped.stderr + stopped.stdout, stopped
    assert stopped.left == [], stopped
    last = stopped.stderr.strip().splitlines()[-1]
    name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
    assert re.match(rf"interrupted \({name}\)( in flow run '[^']+')?: stopped; run the same command", last), (
        stopped
    )


def step_2_lines(home: Path) -> int:
    """How often the command's log file (under M1_HOME) says step 2 of stage a was done."""
    log = home / "logs" / "m1.log"
    return log.read_text().count("a step 2/6") if log.exists() else 0


@pytest.mark.slow
def test_ctrl_c_and_sigterm_stop_a_stage_in_seconds_and_it_resumes_bitwise(stage_cli, tmp_path):
    cmd, env, home, stage = stage_cli
    run_to_end(cmd, env)
    straight = weights(stage / "final")
    assert "a step 6/6" in "\n".join(flow_run_logs(home, "f-a"))
    for signum, group in ((signal.SIGINT, True), (signal.SIGTERM, False)):
        out = tmp_path / signal.Signals(signum).name
        out.mkdir()
        # step 2's checkpoint is written before its log line: wait for the line (the log file has it too)
        before = step_2_lines(home)
        ready = lambda before=before: step_2_lines(home) > before  # noqa: E731
        stopped = interrupt(cmd + ["--restart"], env, ready, signum, out, group=group)
        assert_stopped_cleanly(stopped, signum)
        assert "in flow run 'f-a'" in stopped.stderr, stopped
        assert flow_run_states(home)["f-a"] == "Crashed"  # the newest run of the stage: not left Running
        logged = flow_run_logs(home, "f-a")  # to the API before the command ended: the UI shows them
        assert "a step 2/6" in "\n".join(logged) and any(m.startswith("Crash detected!") for m in logged), (
            logged
        )
        assert not (stage / "final").exists()  # --restart discarded it; the interrupt wrote none
        again = run_to_end(cmd, env)
        assert resumed_step(again) >= 2
        assert_bitwise_equal(weights(stage / "final"), straight)


@pytest.mark.slow
def test_ctrl_c_stops_a_two_rank_stage_and_its_torchrun_ranks_and_it_resumes(stage_cli, tmp_path):
    cmd, env, _, stage = stage_cli
    cmd = cmd + ["--nproc", "2"]
    ready = lambda: (stage / "checkpoints" / "step-000002").exists()  # noqa: E731
    stopped = interrupt(cmd, env, ready, signal.SIGINT, tmp_path)
    assert_stopped_cleanly(stopped, signal.SIGINT)
    assert any("torchrun" in c or "flows.curriculum.worker" in c for c in stopped.started), stopped
    again = run_to_end(cmd, env)
    assert resumed_step(again) >= 2
    assert (stage / "final" / "model.safetensors").exists()


@pytest.mark.slow
def test_ctrl_c_during_the_sft_warm_start_stops_it(stage_cli, tmp_path):
    cmd, env, home, _ = stage_cli
    log = home / "logs" / "m1.log"
    ready = lambda: log.exists() and "sft step 50/" in log.read_text()  # noqa: E731
    stopped = interrupt(cmd + ["-s", "train.sft_steps=5000"], env, ready, signal.SIGINT, tmp_path)
    assert_stopped_cleanly(stopped, signal.SIGINT)
    assert not (home / "runs" / "f" / "train" / "base").exists()  # no half-trained base left as if built


@pytest.mark.slow
def test_ctrl_c_stops_the_judge_server_a_stage_serves(stage_cli, tmp_path):
    """A stage whose reward is a generative judge serves the run's own judge (`m1 serve model`, a child
    process) while it trains: Ctrl-C stops it with the stage."""
    from flows.config import ModelConfig
    from flows.model_settings import fresh_model
    from m1model import train_tokenizer
    from m1model.policy import save_policy

    cmd, env, home, stage = stage_cli
    curriculum = tmp_path / "tiny.toml"
    curriculum.write_text(curriculum.read_text().replace('"digit-share"', '"genrm"'))
    texts = [f"the quick brown fox {i} jumps over the lazy dog" for i in range(200)]
    tokenizer = train_tokenizer(texts, vocab_size=300)
    save_policy(
        fresh_model(ModelConfig(vocab_size=300), tokenizer),
        tokenizer,
        home / "runs" / "f" / "genrm" / "judge",
    )
    ready = lambda: (stage / "checkpoints" / "step-000001").exists()  # noqa: E731
    stopped = interrupt(cmd, env, ready, signal.SIGINT, tmp_path)
    assert_stopped_cleanly(stopped, signal.SIGINT)
    assert any("serve model" in c for c in stopped.started), stopped


@pytest.mark.slow
def test_sigterm_stops_the_curriculum_and_marks_its_runs_crashed(stage_cli, tmp_path):
    cmd, env, home, stage = stage_cli
    cmd = [M1, "train", "curriculum", *cmd[4:]]  # the same config, every stage as a subflow
    ready = lambda: (stage / "checkpoints" / "step-000001").exists()  # noqa: E731
    stopped = interrupt(cmd, env, ready, signal.SIGTERM, tmp_path, group=False)
    assert_stopped_cleanly(stopped, signal.SIGTERM)
    states = flow_run_states(home)
    assert states["f-curriculum"] == states["f-a"] == "Crashed", states
