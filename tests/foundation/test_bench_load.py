"""flows/bench/load.py: others' load per side from /proc, and ratios refused when the sides' loads differ."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from flows.bench.load import LoadMeter, Snapshot, describe_start, others_cores, tree_cpu_s


def test_ratio_is_refused_when_the_sides_ran_under_different_load():
    meter = LoadMeter(tolerance=0.5)
    meter.sides.update({"baseline": 0.2, "ours": 1.5, "same": 0.4})
    assert meter.ratio("baseline", "same", 2.0) == "2.00x"
    assert meter.ratio("baseline", "ours", 2.0) == "n/a (load differed)"
    assert "1.50 during ours" in meter.refusal("baseline", "ours")
    assert meter.refusal("baseline", "never-measured").startswith("no load measured")


def test_others_load_excludes_this_process_tree():
    # 1 s of wall time in which the machine was busy for 1.5 CPU-s, 0.5 of them ours: others 1 core
    a, b = Snapshot(0.0, 100.0, 10.0, 0.0), Snapshot(1.0, 101.5, 10.5, 0.0)
    assert others_cores(a, b) == pytest.approx(1.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_tree_cpu_counts_live_children_and_sides_are_measured():
    before = tree_cpu_s()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt=time.process_time()\nwhile time.process_time()-t<0.5: pass\ntime.sleep(5)",
        ]
    )
    try:
        time.sleep(0.2)
        deadline = time.monotonic() + 20
        while tree_cpu_s() - before < 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tree_cpu_s() - before >= 0.4  # the child's CPU counts while it still runs
    finally:
        child.kill()
        child.wait()
    meter = LoadMeter()
    with meter.side("sleep"):
        time.sleep(0.2)
    assert meter.sides["sleep"] >= 0.0
    assert "machine load at start" in describe_start()
