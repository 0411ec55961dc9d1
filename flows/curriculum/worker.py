"""The torchrun agent and the workers of a launch (flows/curriculum/launch.py, which starts them).

``python -m flows.curriculum.worker agent ...`` is torchrun, bound to the life of the process that
started it; torchrun starts ``python -m flows.curriculum.worker worker JOB ...`` once per rank, and each
runs the same `run_stage` or `build_base` as one process does, inside the process group. Rank 0 writes
the events the caller relays and the result it returns.

Not a flow: the other end of flows/curriculum/launch.py, started by the training flows.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn

from flows.atomic import atomic_write_text
from flows.config import PipelineConfig
from flows.curriculum.launch import EventHandler, Events, finished_marker
from flows.curriculum.mixture import run_data
from flows.errors import M1Error
from flows.model_settings import use_threads
from flows.store import DatasetStore
from m1model.allocator import keep_freed_memory


def _worker(args: argparse.Namespace) -> None:
    # here, not at the top: the agent (this module's other role) only runs torchrun, and a worker sets
    # malloc up (main) before the training libraries load
    # heavy: torch, transformers, math_verify
    from flows.curriculum.base import build_base
    from flows.curriculum.plan import active_curriculum, base_refs
    from flows.curriculum.stage import run_stage
    from m1model.rl import distributed

    distributed.die_with_parent()
    ctx = distributed.init_from_env()
    work = Path(args.dir)
    config = PipelineConfig.model_validate_json((work / "config.json").read_text())
    events = Events(work / "events.jsonl") if ctx.is_main else None
    logger = logging.getLogger(f"m1.train.rank{ctx.rank}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if events is not None:
        logger.addHandler(EventHandler(events))
    try:
        use_threads(config.train)
        on_step = events.step if events is not None else None
        if args.job == "stage":
            result = asdict(
                run_stage(config, args.stage, restart=args.restart, on_step=on_step, logger=logger)
            )
        else:
            curriculum, _ = active_curriculum(config)
            store = DatasetStore(config.home)
            data = run_data(config, curriculum, store)
            folder, built = build_base(config, data, base_refs(store, data.refs), on_step)
            result = {"folder": str(folder), "built": built}
    except M1Error as exc:
        if events is not None:
            events.write({"error": {"type": type(exc).__name__, "message": str(exc)}})
        sys.exit(2)
    finish(ctx, work, result)


def finish(ctx, work: Path, result: dict) -> NoReturn:
    """End a rank whose job is done: rank 0 writes the result, every rank marks itself finished once all
    have written their part, leaves the group and exits without the interpreter's teardown, in which gloo's
    threads and static destructors can still abort a finished rank (SIGABRT, "terminate called without an
    active exception"). The launcher takes a job whose ranks all got this far as complete."""
    # heavy: torch
    from m1model.rl import distributed

    if ctx.is_main:
        atomic_write_text(work / "result.json", json.dumps(result, default=str))
    ctx.barrier()
    (work / finished_marker(ctx.rank)).touch()
    distributed.shutdown()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    keep_freed_memory()  # each rank as the single-process `m1` (flows/cli.py)
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "agent":  # torchrun itself, bound to the life of the process that started it
        # heavy: torch
        from torch.distributed.run import main as torchrun

        from m1model.rl.distributed import die_with_parent

        die_with_parent()
        torchrun(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m flows.curriculum.worker worker")
    parser.add_argument("role", choices=["worker"])
    parser.add_argument("job", choices=["stage", "base"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--stage")
    parser.add_argument("--restart", action="store_true")
    _worker(parser.parse_args(argv))


if __name__ == "__main__":
    main()
