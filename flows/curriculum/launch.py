"""Training on several processes: with ``train.nproc > 1`` (`m1 train stage NAME --nproc N`) a stage or
the base model's SFT runs under torchrun, and the caller waits for it.

    flow process (the Prefect flow run)      torchrun agent             N workers, one per rank
    run_stage / build_base                   python -m flows.           python -m flows.curriculum.worker
      -> launch(): starts the agent  ------>  curriculum.worker  ----->  worker: the same run_stage /
         relays events.jsonl to the           agent                      build_base, in the process group;
         flow's progress and log,                                        rank 0 writes checkpoints, final/,
         returns result.json                                             stage.json, events and the result

This module is the caller's side and the events both sides share (`Events` writes them, `_Relay` reads
them); the agent and the workers are flows/curriculum/worker.py, which imports the stage and the base
that import this module.

The flow run stays the one thing Prefect sees: it owns the artifacts and the progress bar; the workers
only train and write files (rank 0 alone). ``nproc == 1`` never comes here: it is the in-process path.

If the flow process dies, even by SIGKILL, the agent and then the workers die with it (Linux
PR_SET_PDEATHSIG), so a rerun never races an orphan for the same checkpoints; if a worker dies, torchrun
stops the others and the launch fails with the log's tail. Either way the rerun resumes from the newest
complete checkpoint. A rank that dies after every rank finished (marked in the launch's folder after the
final barrier, worker.py: `finish`) died in the process group's teardown: the job is complete, and the
launch returns its result with a warning.

Not a flow: how the training flows start a stage on several processes.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flows import errors
from flows.config import PipelineConfig
from flows.curriculum.layout import train_root
from flows.errors import ConfigError, M1Error

Metrics = dict[str, float]
log = logging.getLogger("m1.train")
WORKER = "flows.curriculum.worker"  # the agent's and the workers' module


# -- the caller's side -----------------------------------------------------------------------------------


class _Relay:
    """Reads the events rank 0 appends (JSON lines) and hands them to the caller as they arrive."""

    def __init__(self, path: Path, on_step: Callable[[str, Metrics], None] | None, logger) -> None:
        self.path, self.on_step, self.logger = path, on_step, logger
        self.offset = 0
        self.error: dict[str, str] | None = None

    def poll(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as fh:
            fh.seek(self.offset)
            while (line := fh.readline()).endswith("\n"):  # a partial last line waits for the next poll
                self.offset += len(line.encode())
                self._dispatch(json.loads(line))

    def _dispatch(self, event: dict[str, Any]) -> None:
        if "step" in event and self.on_step is not None:
            self.on_step(event["phase"], event["step"])
        elif "log" in event:
            self.logger.log(event["level"], "%s", event["log"])
        elif "error" in event:
            self.error = event["error"]


def launch(
    job: str,
    config: PipelineConfig,
    *,
    stage: str | None = None,
    restart: bool = False,
    on_step: Callable[[str, Metrics], None] | None = None,
    logger: logging.Logger | logging.LoggerAdapter = log,
) -> dict[str, Any]:
    """Run ``job`` ("stage" or "base") on ``config.train.nproc`` processes; return rank 0's result."""
    # heavy: torch
    import torch

    nproc = config.train.nproc
    if config.train.batch_size < nproc:
        raise ConfigError(f"train.batch_size {config.train.batch_size} is smaller than train.nproc {nproc}")
    if torch.cuda.is_available() and torch.cuda.device_count() < nproc:
        raise ConfigError(
            f"train.nproc {nproc}: this machine has {torch.cuda.device_count()} GPU(s), one per rank is needed"
        )
    root = train_root(config)
    root.mkdir(parents=True, exist_ok=True)
    log_path = root / f"{stage or job}.torchrun.log"
    work = root / f".launch-{stage or job}"  # one launch per stage at a time; a killed one's is replaced
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        (work / "config.json").write_text(config.model_dump_json())
        worker = ["worker", job, "--dir", str(work)] + (["--stage", stage] if stage else [])
        cmd = [sys.executable, "-m", WORKER, "agent", "--standalone", f"--nproc-per-node={nproc}"]
        cmd += ["--max-restarts=0", "--module", WORKER, *worker, *(["--restart"] if restart else [])]
        relay = _Relay(work / "events.jsonl", on_step, logger)
        logger.info("training on %d processes (torchrun); worker output in %s", nproc, log_path)
        with open(log_path, "w", encoding="utf-8") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=os.environ | {"PYTHONUNBUFFERED": "1"}
            )
            try:
                while proc.poll() is None:
                    relay.poll()
                    time.sleep(0.2)
                relay.poll()
            finally:  # Ctrl-C or an error here: torchrun stops its workers on SIGTERM
                if proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
        if proc.returncode != 0:
            if not finished(work, nproc):
                raise _failure(relay.error, proc.returncode, log_path, nproc)
            # every rank passed the final barrier and rank 0 wrote the result: only a teardown failed
            logger.warning(
                "torchrun exit %d after every rank had finished (a process-group teardown; see %s): "
                "the job's outputs are complete",
                proc.returncode,
                log_path,
            )
        return json.loads((work / "result.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def finished_marker(rank: int) -> str:
    """The file a rank writes in the launch's folder once every rank's outputs are written (worker.py)."""
    return f"finished-{rank}"


def finished(work: Path, nproc: int) -> bool:
    """Whether the job is complete: rank 0's result and every rank past the final barrier."""
    return (work / "result.json").is_file() and all(
        (work / finished_marker(r)).exists() for r in range(nproc)
    )


def _failure(error: dict[str, str] | None, code: int, log_path: Path, nproc: int) -> Exception:
    if error is not None:  # a user error a worker raised: the same one-line error as in one process
        kind = getattr(errors, error["type"], None)
        if isinstance(kind, type) and issubclass(kind, M1Error):
            return kind(error["message"])
        return RuntimeError(error["message"])
    lines = log_path.read_text(errors="replace").splitlines() if log_path.exists() else []
    return RuntimeError(
        f"training on {nproc} processes failed (torchrun exit {code}); from {log_path}:\n"
        + "\n".join(_worker_errors(lines) + ["..."] + lines[-25:])
    )


_CAUSE = re.compile(r"Traceback \(most recent call last\)|terminate called|what\(\):|Fatal Python error")


def _worker_errors(lines: list[str], keep: int = 20) -> list[str]:
    """The first thing a rank printed when it failed (a traceback, a C++ abort), which torchrun's summary at
    the end of the log leaves out."""
    for i, line in enumerate(lines):
        if _CAUSE.search(line):
            return lines[i : i + keep]
    return []


# -- rank 0's side of the events ------------------------------------------------------------------------


class Events:
    """Rank 0's side of the relay: step metrics, log records and a user error, one JSON line each."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, event: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(event, default=float) + "\n")

    def step(self, phase: str, metrics: Metrics) -> None:
        self.write({"phase": phase, "step": metrics})


class EventHandler(logging.Handler):
    """Rank 0's log records, as events the caller's logger repeats."""

    def __init__(self, events: Events) -> None:
        super().__init__(logging.INFO)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        self.events.write({"log": record.getMessage(), "level": record.levelno})
