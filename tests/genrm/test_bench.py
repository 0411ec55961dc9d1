"""`m1 bench genrm` runs end to end on a small workload and reports every level against its baseline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_genrm_small():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flows.cli import main; main()",
            "bench",
            "genrm",
            "--items",
            "8",
            "--concurrency",
            "1,4",
            "--max-tokens",
            "4",
            "--heavy-items",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=os.environ | {"COLUMNS": "200"},  # rich's table, unwrapped
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for kind in ("judge", "heavy-tailed"):
        assert f"{kind}: engine, sequential (baseline)" in out and f"{kind}: m1 serve model, 4 clients" in out
    assert "1.00x" in out and "TTFT p50 ms" in out
    assert "machine load at start" in out and "other processes' load per side" in out
