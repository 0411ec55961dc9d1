"""A full disk in the middle of a stage: `m1 train stage` with M1_HOME (the store, the checkpoints, the
Prefect database, the log) on a small tmpfs that fills up after the first checkpoints. The user sees one
line naming the run that failed, where and that the disk is full, exit 2, no traceback; the newest
checkpoint stays complete; once there is space again the same command resumes from it and finishes."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from m1model.rl.checkpoint import complete, latest_checkpoint
from tests.rl.test_faults import resumed_step, run_to_end

M1 = str(Path(sys.executable).with_name("m1"))
STEPS = 6


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MB tmpfs (mounting needs root and a kernel that lets this process mount)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:
        for block in (1 << 20, 4096, 1):  # down to the last byte
            with contextlib.suppress(OSError):
                while fh.write(b"\0" * block):
                    pass
    return filler


@pytest.mark.slow
def test_a_full_disk_mid_stage_is_one_line_and_the_stage_resumes_once_there_is_space(
    tiny_stage, tmp_path, small_disk
):
    config, home, _ = tiny_stage(steps=STEPS, checkpoint_every=1)
    shutil.copytree(home, small_disk / "home")  # the store the fixture wrote, on the small disk
    home = small_disk / "home"
    stage = home / "runs" / "f" / "train" / "a"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env |= {"M1_HOME": str(home), "HOME": str(tmp_path), "COLUMNS": "200"}
    cmd = [M1, "train", "stage", "a", "-c", str(config), "-s", f"home={home}"]

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not (stage / "checkpoints" / "step-000002").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    filler = fill(small_disk)
    out, err = proc.communicate(timeout=600)

    assert proc.returncode == 2, out[-2000:] + err[-4000:]
    assert "Traceback" not in out + err, err[-4000:]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err[-4000:]
    assert errors[0].startswith("error: flow run 'f-a' failed at "), errors
    assert re.search(
        rf": no space left on device \([^)]* free under {re.escape(str(home))}\): ", errors[0]
    ), errors
    assert errors[0].endswith(f"; traceback in {home / 'logs' / 'm1.log'}"), errors
    log = (home / "logs" / "m1.log").read_text()
    assert "Traceback" in log and "No space left on device" in log
    newest = latest_checkpoint(stage / "checkpoints")
    assert newest is not None and complete(newest) and int(newest.name.split("-")[1]) >= 2
    assert not list((stage / "checkpoints").glob(".step-*")), "a half-written checkpoint was left"

    filler.unlink()
    again = run_to_end(cmd, env)
    assert resumed_step(again) == int(newest.name.split("-")[1])
    assert (stage / "final" / "model.safetensors").exists()
