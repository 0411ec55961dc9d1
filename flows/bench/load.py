"""The machine's load around a benchmark, so a ratio is only reported when both sides ran under comparable load.

On a machine shared with other jobs a ratio of two timings means nothing if one side ran while the cores
were free and the other while they were busy. Every bench therefore

1. prints the load when it starts (`print_start`), and
2. measures, for each side it times, how many cores *other* processes kept busy meanwhile
   (`LoadMeter.side`): the machine's busy CPU time from /proc/stat minus the CPU time of this process
   tree (this process, its children, and their reaped children), divided by the side's wall time;
3. reports a ratio through `LoadMeter.ratio`, which prints the ratio when the two sides saw others' load
   within a tolerance of each other, and a refusal that says why otherwise. Benches whose sides are short
   interleave their repeats instead, so both sides see the same load by construction.

The tolerance is ``M1_BENCH_LOAD_TOLERANCE`` cores (default: a quarter of the CPUs, at least 0.5).
Off Linux (no /proc) only the load average is known; sides are then compared by it.

Not a benchmark of its own: what every `m1 bench` prints about the machine's load.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from m1model.allocator import tuned

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = Path("/proc")


def tolerance_cores() -> float:
    env = os.environ.get("M1_BENCH_LOAD_TOLERANCE")
    return float(env) if env else max(0.5, 0.25 * (os.cpu_count() or 1))


def _machine_busy_s() -> float | None:
    """CPU seconds all CPUs spent not idle since boot (user, nice, system, irq, softirq, steal)."""
    try:
        fields = (_PROC / "stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _HZ


def _tree_cpu_s(root: int) -> float:
    """CPU seconds of `root` and its live descendants, each with its reaped children (cutime, cstime)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        rest = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
        parents[int(entry.name)] = int(rest[1])
        cpu[int(entry.name)] = sum(int(x) for x in rest[11:15]) / _HZ
    tree, frontier = {root}, [root]
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(cpu.get(pid, 0.0) for pid in tree)


def tree_cpu_s() -> float:
    """CPU seconds of this process tree so far (live pool workers included, unlike getrusage)."""
    return _tree_cpu_s(os.getpid())


@dataclass(frozen=True)
class Snapshot:
    wall: float
    busy: float | None  # machine-wide busy CPU seconds; None off Linux
    ours: float  # this process tree's CPU seconds
    loadavg: float


def snapshot() -> Snapshot:
    busy = _machine_busy_s()
    ours = _tree_cpu_s(os.getpid()) if busy is not None else 0.0
    return Snapshot(time.perf_counter(), busy, ours, os.getloadavg()[0])


def others_cores(a: Snapshot, b: Snapshot) -> float:
    """Cores kept busy by processes outside this tree between two snapshots (the load average off Linux)."""
    if a.busy is None or b.busy is None:
        return max(0.0, (a.loadavg + b.loadavg) / 2)
    wall = max(b.wall - a.wall, 1e-9)
    return max(0.0, ((b.busy - a.busy) - (b.ours - a.ours)) / wall)


def describe_start(when: str = "at start") -> str:
    one, five, fifteen = os.getloadavg()
    a = snapshot()
    time.sleep(0.5)
    b = snapshot()
    return (
        f"machine load {when}: load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on "
        f"{os.cpu_count()} CPUs; other processes busy on {others_cores(a, b):.2f} cores (0.5 s sample)"
    )


def print_start(console) -> None:
    console.print(describe_start(), highlight=False)


def print_allocator(console, sides: str) -> None:
    """Say whether glibc keeps freed memory here (m1model.allocator), for benches whose sides share a process."""
    console.print(
        f"glibc malloc keeps freed memory (m1model.allocator, as in every `m1` command): "
        f"{'yes' if tuned() else 'no'}, for {sides} (one process)",
        highlight=False,
    )


@dataclass
class LoadMeter:
    """Others' load (in busy cores) during each named side of a benchmark."""

    sides: dict[str, float] = field(default_factory=dict)
    tolerance: float = field(default_factory=tolerance_cores)

    @contextmanager
    def side(self, name: str) -> Iterator[None]:
        a = snapshot()
        try:
            yield
        finally:
            b = snapshot()
            # A side measured in several pieces: the wall-time-weighted mean of its pieces.
            wall = b.wall - a.wall
            prev, prev_wall = self.sides.get(name), self._walls.get(name, 0.0)
            load = others_cores(a, b)
            if prev is not None and prev_wall + wall > 0:
                load = (prev * prev_wall + load * wall) / (prev_wall + wall)
            self.sides[name] = load
            self._walls[name] = prev_wall + wall

    def __post_init__(self) -> None:
        self._walls: dict[str, float] = {}

    def refusal(self, base: str, ours: str) -> str | None:
        """Why the two sides' ratio must not be reported, or None when their loads are comparable."""
        a, b = self.sides.get(base), self.sides.get(ours)
        if a is None or b is None:
            return f"no load measured for {base if a is None else ours!r}"
        if abs(a - b) > self.tolerance:
            return (
                f"not comparable: other processes kept {a:.2f} cores busy during {base} and {b:.2f} during "
                f"{ours} (tolerance {self.tolerance:.2f}); rerun on a quieter machine"
            )
        return None

    def ratio(self, base: str, ours: str, value: float, fmt: str = "{:.2f}x") -> str:
        """`value` (a ratio of the two sides) formatted, or 'n/a' when their loads differ too much."""
        if not math.isfinite(value):
            return "n/a"
        return "n/a (load differed)" if self.refusal(base, ours) else fmt.format(value)

    def summary(self) -> str:
        sides = ", ".join(f"{name} {load:.2f}" for name, load in self.sides.items())
        return f"other processes' load per side (busy cores): {sides}; tolerance {self.tolerance:.2f}"

    def report(self, console, base: str, *ours: str) -> None:
        """Print the per-side loads and, for each of `ours` whose ratio to `base` was refused, why."""
        console.print(self.summary(), highlight=False)
        for side in ours:
            if reason := self.refusal(base, side):
                console.print(
                    f"[bold yellow]ratio {side} / {base} not reported:[/] {reason}", highlight=False
                )
