"""Training on several processes: with ``train.nproc > 1`` (`m1 train stage NAME --nproc N`) a stage or
the base model's SFT runs under torchrun, and the caller waits for it.

    flow process (the Prefect flow run)      torchrun agent             N workers, one per rank
    run_stage / build_base                   python -m flows.           python -m flows.curriculum.launch
      -> launch(): starts the agent  ------>  curriculum.launch  ----->  worker: the same run_stage /
         relays events.jsonl to the           agent                      build_base, in the process group;
         flow's progress and log,                                        rank 0 writes checkpoints, final/,
         returns result.json                                             stage.json, events and the result

The flow run stays the one thing Prefect sees: it owns the artifacts and the progress bar; the workers
only train and write files (rank 0 alone). ``nproc == 1`` never comes here: it is the in-process path.

If the flow process dies, even by SIGKILL, the agent and then the workers die with it (Linux
PR_SET_PDEATHSIG), so a rerun never races an orphan for the same checkpoints; if a worker dies, torchrun
stops the others and the launch fails with the log's tail. Either way the rerun resumes from the newest
complete checkpoint.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from flows.atomic import atomic_write_text
from flows.config import PipelineConfig
from flows.curriculum.layout import train_root
from flows.errors import ConfigError, M1Error

Metrics = dict[str, float]
log = logging.getLogger("m1.train")


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
        cmd = [sys.executable, "-m", __name__, "agent", "--standalone", f"--nproc-per-node={nproc}"]
        cmd += ["--max-restarts=0", "--module", __name__, *worker, *(["--restart"] if restart else [])]
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
            raise _failure(relay.error, proc.returncode, log_path, nproc)
        return json.loads((work / "result.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _failure(error: dict[str, str] | None, code: int, log_path: Path, nproc: int) -> Exception:
    from flows import errors

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


# -- the agent and the workers ---------------------------------------------------------------------------


class _Events:
    """Rank 0's side of the relay: step metrics, log records and a user error, one JSON line each."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, event: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(event, default=float) + "\n")

    def step(self, phase: str, metrics: Metrics) -> None:
        self.write({"phase": phase, "step": metrics})


class _EventHandler(logging.Handler):
    def __init__(self, events: _Events) -> None:
        super().__init__(logging.INFO)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        self.events.write({"log": record.getMessage(), "level": record.levelno})


def _worker(args: argparse.Namespace) -> None:
    from m1model.rl import distributed

    distributed.die_with_parent()
    ctx = distributed.init_from_env()
    work = Path(args.dir)
    config = PipelineConfig.model_validate_json((work / "config.json").read_text())
    events = _Events(work / "events.jsonl") if ctx.is_main else None
    logger = logging.getLogger(f"m1.train.rank{ctx.rank}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if events is not None:
        logger.addHandler(_EventHandler(events))
    try:
        from flows.model_settings import use_threads

        use_threads(config.train)
        on_step = events.step if events is not None else None
        if args.job == "stage":
            from flows.curriculum.stage import run_stage

            result = asdict(
                run_stage(config, args.stage, restart=args.restart, on_step=on_step, logger=logger)
            )
        else:
            from flows.curriculum.base import build_base
            from flows.curriculum.mixture import load_data
            from flows.curriculum.stage import active_curriculum, base_refs
            from flows.store import DatasetStore

            curriculum, _ = active_curriculum(config)
            store = DatasetStore(config.home)
            data = load_data(store, curriculum, config.name, config.eval.fraction)
            folder, built = build_base(config, data, base_refs(store, data.refs), on_step)
            result = {"folder": str(folder), "built": built}
    except M1Error as exc:
        if events is not None:
            events.write({"error": {"type": type(exc).__name__, "message": str(exc)}})
        sys.exit(2)
    if ctx.is_main:
        atomic_write_text(work / "result.json", json.dumps(result, default=str))
    distributed.shutdown()


def main(argv: list[str] | None = None) -> None:
    from m1model.allocator import keep_freed_memory

    keep_freed_memory()  # each rank as the single-process `m1` (flows/cli.py)
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "agent":  # torchrun itself, bound to the life of the process that started it
        from torch.distributed.run import main as torchrun

        from m1model.rl.distributed import die_with_parent

        die_with_parent()
        torchrun(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m flows.curriculum.launch worker")
    parser.add_argument("role", choices=["worker"])
    parser.add_argument("job", choices=["stage", "base"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--stage")
    parser.add_argument("--restart", action="store_true")
    _worker(parser.parse_args(argv))


if __name__ == "__main__":
    main()
