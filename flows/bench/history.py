"""The benches' history: one JSONL file per bench under flows/bench/history/, a record per run.

`m1 bench NAME` appends its record (flows/bench/capture.py says what one holds) to ``NAME.jsonl`` in
``M1_BENCH_HISTORY`` (default: this package's ``history/`` folder, committed with the code; ``off``
records nothing; the test suite points it at a temporary folder). Records are compared only with
records of the same bench, machine (CPU model, cores, instruction-set extensions) and options.

Runs of one code version (a commit, or a commit with uncommitted changes) form a group; groups are
ordered by their commit's date. A figure's run-to-run spread is measured, not assumed: the relative range
(max - min) / median of its runs within a group, the median of that over the latest groups that ran
more than once. A figure moved between two groups when their medians differ by more than that spread
and, where both groups ran more than once, their runs do not overlap.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import statistics
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from flows.bench.capture import machine_key

HISTORY = Path(__file__).parent / "history"
ROOT = Path(__file__).resolve().parents[2]  # the checkout whose code runs
SPREAD_GROUPS = 5  # latest groups with repeats whose ranges make a figure's spread


def history_dir() -> Path | None:
    """Where records go: M1_BENCH_HISTORY, `off` for nowhere, by default flows/bench/history."""
    env = os.environ.get("M1_BENCH_HISTORY", "").strip()
    if env.lower() == "off":
        return None
    return Path(env) if env else HISTORY


def append(record: dict, folder: Path) -> Path:
    """Append one record to its bench's file (one write under an exclusive lock: parallel runs interleave
    whole lines)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['bench']}.jsonl"
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(line)
        f.flush()
    return path


def read(bench: str, folder: Path) -> list[dict]:
    path = folder / f"{bench}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def recorded_benches(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []


def options_key(record: dict) -> str:
    return json.dumps(record.get("args", {}), sort_keys=True)


def version(record: dict) -> str:
    return record["commit"][:7] + ("+dirty" if record.get("dirty") else "")


@dataclass
class Group:
    """The runs of one code version of one bench on one machine with the same options."""

    version: str
    commit: str
    records: list[dict] = field(default_factory=list)

    def values(self, figure: str) -> list[float]:
        out = []
        for r in self.records:
            f = r.get("figures", {}).get(figure)
            if f and f.get("value") is not None:
                out.append(float(f["value"]))
        return out

    def median(self, figure: str) -> float | None:
        v = self.values(figure)
        return statistics.median(v) if v else None

    def text(self, figure: str) -> str | None:
        """The figure as the latest run printed it (a refused ratio reads 'n/a (load differed)')."""
        for r in reversed(self.records):
            if figure in r.get("figures", {}):
                return r["figures"][figure]["text"]
        return None

    @property
    def figures(self) -> list[str]:
        names: dict[str, None] = {}
        for r in self.records:
            names.update(dict.fromkeys(r.get("figures", {})))
        return list(names)

    def is_ratio(self, figure: str) -> bool:
        return any(r.get("figures", {}).get(figure, {}).get("ratio") for r in self.records)

    def others_load(self) -> list[float]:
        return [
            r["load"]["others_cores"]
            for r in self.records
            if r.get("load", {}).get("others_cores") is not None
        ]


def commit_times(commits: Iterable[str], root: Path = ROOT) -> dict[str, int]:
    """Committer timestamps of the commits this checkout knows (others are left out)."""
    commits = sorted({c for c in commits if c and c != "unknown"})
    if not commits:
        return {}
    done = subprocess.run(
        ["git", "-C", str(root), "show", "-s", "--format=%H %ct", *commits],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:  # one unknown commit fails the whole call: ask one by one
        if len(commits) == 1:
            return {}
        return {k: v for c in commits for k, v in commit_times([c], root).items()}
    return {sha: int(ts) for sha, ts in (line.split() for line in done.stdout.splitlines() if line.strip())}


def groups(records: list[dict], times: dict[str, int] | None = None) -> list[Group]:
    """Records of one bench, machine and options grouped by code version, oldest first: by commit date
    where the checkout knows the commit, else by the group's first record date."""
    by_version: dict[str, Group] = {}
    for r in records:
        by_version.setdefault(version(r), Group(version(r), r["commit"])).records.append(r)
    times = commit_times(g.commit for g in by_version.values()) if times is None else times

    def order(g: Group) -> tuple:
        first = min(r["date"] for r in g.records)
        when = times.get(g.commit)
        return (when if when is not None else _epoch(first), g.version.endswith("+dirty"), first)

    return sorted(by_version.values(), key=order)


def _epoch(date: str) -> int:
    return int(
        datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC).timestamp()
    )


def spread(history: list[Group], figure: str, last: int = SPREAD_GROUPS) -> float | None:
    """The figure's run-to-run spread: median relative range within the latest `last` groups that ran
    more than once; None when no code version ran twice."""
    ranges = []
    for g in reversed(history):
        v = g.values(figure)
        if len(v) >= 2 and statistics.median(v):
            ranges.append((max(v) - min(v)) / abs(statistics.median(v)))
        if len(ranges) == last:
            break
    return statistics.median(ranges) if ranges else None


@dataclass(frozen=True)
class Change:
    figure: str
    latest: float | None
    previous: float | None
    spread: float | None
    runs: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())  # the previous and the latest values

    @property
    def relative(self) -> float | None:
        if self.latest is None or not self.previous:
            return None
        return self.latest / self.previous - 1

    @property
    def moved(self) -> bool | None:
        """Beyond the spread (True), within it (False), or unknown (no previous value or no spread).
        Where both versions ran more than once, their own runs must also lie apart: a median that moved
        by more than the usual spread while the runs overlap is a noisier session, not a change."""
        if self.relative is None or self.spread is None:
            return None
        before, after = self.runs
        if len(before) > 1 and len(after) > 1 and not (max(before) < min(after) or max(after) < min(before)):
            return False
        return abs(self.relative) > self.spread


def change(history: list[Group], figure: str) -> Change:
    """The latest group's median against the previous group's, with the figure's spread."""
    latest = history[-1].median(figure) if history else None
    previous = history[-2].median(figure) if len(history) > 1 else None
    runs = tuple(tuple(g.values(figure)) for g in history[-2:]) if len(history) > 1 else ((), ())
    return Change(figure, latest, previous, spread(history, figure), runs)


def select(records: list[dict], machine: str | None, ok_only: bool = True) -> dict[str, list[dict]]:
    """The records of one machine (its key; None: any) by options, the options of the latest record first."""
    chosen = [
        r
        for r in records
        if (machine is None or machine_key(r.get("machine", {})) == machine)
        and (not ok_only or r.get("status") == "ok")
    ]
    chosen.sort(key=lambda r: r["date"])
    out: dict[str, list[dict]] = {}
    for r in reversed(chosen):
        out.setdefault(options_key(r), []).append(r)
    return {k: list(reversed(v)) for k, v in out.items()}
