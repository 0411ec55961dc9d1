"""A torchrun job for test_launch_teardown.py, started by the real `launch()` (its WORKER pointed here):
the agent is flows/curriculum/worker.py's; each rank ends through the real `worker.finish`, and rank 1
aborts (SIGABRT, as gloo can in a finished rank's teardown) where the stage name says:

- ``teardown``: inside `finish`, after its finished marker, where the process group is torn down;
- ``job``: before `finish`, while the job is still running (a real failure).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from flows.curriculum import worker


def main() -> None:
    argv = sys.argv[1:]
    if argv[0] == "agent":
        worker.main(argv)
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("role")
    parser.add_argument("job")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--stage", choices=["teardown", "job"])
    args = parser.parse_args(argv)
    from m1model.rl import distributed

    distributed.die_with_parent()
    ctx = distributed.init_from_env()
    if ctx.rank == 1:
        if args.stage == "job":
            os.abort()
        distributed.shutdown = os.abort  # what `finish` calls after its marker
    worker.finish(ctx, Path(args.dir), {"ranks": ctx.world_size})


if __name__ == "__main__":
    main()
