"""Surviving faults: `m1 train stage` killed with SIGKILL at a random step, then run again, resumes from
its newest complete checkpoint and ends with weights bitwise equal to an uninterrupted run's, on one
process and on two (torchrun, gloo); a half-written checkpoint is never picked up."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

M1 = str(Path(sys.executable).with_name("m1"))
STEPS = 5


@pytest.fixture
def stage_cli(tiny_stage, prefect_harness):
    """`m1 train stage a` on the tiny stage, against the test session's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    config, home, stage = tiny_stage(steps=STEPS)
    env = os.environ | {"M1_HOME": str(home), "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "200"}
    return [M1, "train", "stage", "a", "-c", str(config)], env, stage


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def run_to_end(cmd, env) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def kill_at_random_step(cmd, env, stage: Path, seed: int) -> int:
    """Start the command and SIGKILL it at a random moment after the checkpoint of a random step; the
    step it was killed in (its newest complete checkpoint + 1). A tiny stage's steps take a fraction of a
    second, so a kill that came after the run had ended is tried again at once after the checkpoint."""
    rng = random.Random(seed)
    target = rng.randint(1, STEPS - 2)
    delay = rng.uniform(0.0, 0.5)  # somewhere in the next step: rollouts, update or checkpoint write
    for _ in range(3):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        # `--restart` discards the previous run's checkpoints and final model first: until then the step's
        # checkpoint is the old run's, and a kill leaves the stage done (a rerun reuses it, rightly).
        while (stage / "final").exists():
            assert proc.poll() is None, "finished without discarding the previous run"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        while not (stage / "checkpoints" / f"step-{target:06d}").exists():
            assert proc.poll() is None, f"finished before step {target}"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(delay)
        tree = psutil.Process(proc.pid).children(recursive=True)  # the flow process, torchrun's agent, ranks
        os.kill(proc.pid, signal.SIGKILL)
        code = proc.wait()
        # The kill reaches them one hop at a time (PR_SET_PDEATHSIG, a process group): until the last is
        # gone, rank 0 may still finish the stage. Judge what they left, not a moment of it.
        deadline = time.monotonic() + 60
        while any(alive(p) for p in tree):
            assert time.monotonic() < deadline, f"outlived the kill: {[p.pid for p in tree if alive(p)]}"
            time.sleep(0.05)
        if not (stage / "final").exists():  # killed while it ran
            assert code == -signal.SIGKILL
            return target
        delay = 0.0
    pytest.fail(f"the run ended before every kill after step {target}")


def alive(proc: psutil.Process) -> bool:
    """Running, or dying but not yet a zombie (a zombie holds no files and runs nothing)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def resumed_step(done: subprocess.CompletedProcess) -> int:
    """The step the run says it resumed from (the run logs it; a fresh start would not)."""
    found = re.findall(r"stage a: resuming from step (\d+)", done.stdout + done.stderr)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return int(found[-1])


def assert_bitwise_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    different = [k for k in a if not torch.equal(a[k], b[k])]
    assert not different, different


def orphans(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (a killed launch's workers would)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and "pytest" not in cmdline:
            found.append(cmdline)
    return found


@pytest.mark.slow
def test_kill_9_at_random_steps_then_resume_is_bitwise_equal(stage_cli):
    cmd, env, stage = stage_cli
    run_to_end(cmd, env)
    straight = weights(stage / "final")
    history = json.loads((stage / "stage.json").read_text())
    assert history["steps"] == STEPS
    for seed in range(2):
        target = kill_at_random_step(cmd + ["--restart"], env, stage, seed)
        again = run_to_end(cmd, env)  # the same command again
        assert resumed_step(again) >= target
        assert json.loads((stage / "stage.json").read_text())["steps"] == STEPS
        assert_bitwise_equal(weights(stage / "final"), straight)
    samples = [json.loads(line)["step"] for line in (stage / "samples.jsonl").read_text().splitlines()]
    assert samples == sorted(samples) and len(samples) == 2 * STEPS  # the replayed steps logged once


@pytest.mark.slow
def test_two_rank_stage_killed_and_resumed_equals_an_uninterrupted_two_rank_run(stage_cli):
    cmd, env, stage = stage_cli
    cmd = cmd + ["--nproc", "2"]
    run_to_end(cmd, env)
    straight = weights(stage / "final")
    assert (stage.parent / "a.torchrun.log").exists()
    target = kill_at_random_step(cmd + ["--restart"], env, stage, seed=7)
    time.sleep(2)  # SIGKILL of `m1` reaches torchrun, then its workers (PR_SET_PDEATHSIG)
    assert orphans(str(stage.parent)) == []
    again = run_to_end(cmd, env)
    assert resumed_step(again) >= target
    assert_bitwise_equal(weights(stage / "final"), straight)


def test_half_written_checkpoints_are_never_picked_up(tmp_path, tiny_model):
    from m1model.rl.checkpoint import latest_checkpoint, save_checkpoint

    save_checkpoint(tmp_path, 2, tiny_model, {"step": 2})
    (tmp_path / ".step-000003.x1y2").mkdir()  # killed while writing: still under its temporary name
    (tmp_path / "step-000004" / "model").mkdir(parents=True)  # a step folder without its trainer state
    (tmp_path / "step-000005").mkdir()
    (tmp_path / "step-000005" / "trainer.pt").write_bytes(b"")  # ... or without its model
    assert latest_checkpoint(tmp_path) == tmp_path / "step-000002"
    save_checkpoint(tmp_path, 6, tiny_model, {"step": 6}, keep_last=1)
    assert latest_checkpoint(tmp_path) == tmp_path / "step-000006"
    assert not (tmp_path / "step-000002").exists()


def test_resume_restores_everything_sampling_depends_on(tmp_path, new_tiny_model):
    """RNG, window, the dynamic mixture's state and the pool weights it set: a run resumed between steps
    samples exactly what an uninterrupted one samples."""
    from flows.curriculum import Stage
    from flows.curriculum.mixture import KEY, dynamic_mixture
    from m1model import Engine
    from m1model.rl.rollout import PromptPool
    from m1model.rl.trainer import RLConfig, RLTrainer

    stage = Stage(name="s", mixture={"math/add": 0.5, "math/mul": 0.5}, steps=3, max_new_tokens=5)
    items = [{KEY: "math/add" if i % 3 else "math/mul", "i": i} for i in range(12)]

    def reward(batch_items, responses):  # only "add" items are ever solved: their weight moves
        return [float(it[KEY] == "math/add" and 7 in r) for it, r in zip(batch_items, responses, strict=True)]

    def trainer(model, checkpoint_dir=None):
        pool = PromptPool([[1 + i % 5, 10 + i % 7, 2] for i in range(12)], items, [1.0] * 12)
        cfg = RLConfig(
            group_size=4, prompts_per_step=4, lr=2e-2, max_new_tokens=5, seed=3, micro_batch_size=8
        )
        hooks = [dynamic_mixture(stage, items, [None] * 12)]
        return RLTrainer(
            model, Engine(model), reward, pool, cfg, checkpoint_dir=checkpoint_dir, step_hooks=hooks
        )

    straight = trainer(new_tiny_model())
    straight.train(4)
    first = trainer(new_tiny_model(), checkpoint_dir=tmp_path)
    first.train(2)
    first.save()
    assert first.pool.weights != [1.0] * 12  # the mixture moved the weights the next step samples with
    resumed = trainer(new_tiny_model(seed=9), checkpoint_dir=tmp_path)
    assert resumed.resume() and resumed.step == 2
    resumed.train(4)
    assert [h["reward_mean"] for h in resumed.history] == [h["reward_mean"] for h in straight.history]
    assert_bitwise_equal(resumed.model.state_dict(), straight.model.state_dict())
