"""Rank 1 for test_two_ranks_in_process.py, whose pytest process is rank 0: joins the group from the
environment the test set, makes the same calls (`run_rank`) and saves what it saw to OUT/rank1.pt.

    python rank1_in_process_peer.py OUT TIMEOUT_S
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from conftest import make_tiny_model  # this script's folder is first on sys.path
from test_two_ranks_in_process import run_rank, single_trainer

from m1model.rl import distributed


def main() -> None:
    out, timeout_s = Path(sys.argv[1]), float(sys.argv[2])
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        # mutmut's coverage pass: only the pytest process's calls count, and recording them needs
        # mutmut's state, which this process lacks. A selected mutant (any other value) runs here too.
        del os.environ["MUTANT_UNDER_TEST"]
    distributed.die_with_parent()  # a killed pytest leaves no rank 1 behind
    torch.set_num_threads(1)
    batch = single_trainer(make_tiny_model).rollout()  # the global batch, as rank 0 generates it
    ctx = distributed.init_from_env(timeout_s=timeout_s)
    torch.save(run_rank(ctx, out, batch, make_tiny_model), out / "rank1.pt")
    distributed.shutdown()


if __name__ == "__main__":
    main()
