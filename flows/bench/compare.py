"""`m1 bench compare REV [NAME ...]`: the chosen benches at REV and at this checkout, interleaved, in one session.

On a machine shared with other jobs, and across machines, two figures from different days say little;
runs of the two code versions taking turns on the same machine in the same minutes say whether the code
moved a figure. For each bench, `--rounds` rounds each run REV once and this checkout once, in
alternating order (REV first in odd rounds, this checkout first in even ones, so a drift of the machine's
load over the session falls on both alike), each as a fresh `m1 bench NAME` process, recorded by
flows/bench/capture.py the same way on both sides (REV's code is an export of that commit, run with
its own modules first on the path). Every run is also appended to the history under its own commit
(`--no-record` to leave it alone).

A figure changed when the two sides' ranges over the rounds do not overlap (with 3 rounds a side that
happens by chance with probability 0.1, the two-sided exact Mann-Whitney level; with 2 it is one in three,
so fewer than 3 rounds never say "changed"); the table prints both ranges, so a reader sees how far apart
they are.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import bench_names, tool
from flows.bench.capture import BOOT
from flows.bench.capture import __file__ as CAPTURE
from flows.bench.headlines import headlines
from flows.bench.history import ROOT, append, history_dir
from flows.errors import InputError
from flows.home import m1_home


def git(*args: str, root: Path = ROOT) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


@contextmanager
def exported(rev: str):
    """(full commit, folder): REV's tracked files exported to a temporary folder, removed afterwards."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = Path(tempfile.mkdtemp(prefix=f"m1-bench-{commit[:7]}-"))
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        # Byte-compiled once here, as an installed checkout is: each side's runs then start alike.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], capture_output=True)
        yield commit, folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def benches_at(tree: Path) -> set[str]:
    """The benches a checkout registers (asked of that checkout's own code)."""
    code = "import flows.bench as b; print('\\n'.join(i.name or '' for i in b.app.registered_commands))"
    done = subprocess.run(
        [sys.executable, "-P", "-c", code], cwd=tree, env=_env(tree, None), capture_output=True, text=True
    )
    if done.returncode != 0:
        raise InputError(f"cannot list the benches at {tree}: {done.stderr.strip()[-500:]}")
    return set(done.stdout.split())


def _env(tree: Path, commit: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["M1_BENCH_HISTORY"] = "off"  # the parent records both sides the same way
    env["M1_HOME"] = str(m1_home().resolve())  # one dataset store and caches for both sides
    if commit:
        env["M1_BENCH_COMMIT"] = commit
    return env


def run_side(tree: Path, commit: str | None, bench: str, args: list[str], log: Path) -> dict:
    """One `m1 bench NAME ARGS` of the checkout at `tree` in a fresh process; its record."""
    with tempfile.TemporaryDirectory(prefix="m1-bench-record-") as tmp:
        out = Path(tmp) / "record.json"
        cmd = [sys.executable, "-P", "-c", BOOT, CAPTURE, str(out), str(tree), "bench", bench, *args]
        with open(log, "a") as f:
            f.write(f"\n== {' '.join(cmd[4:])}\n")
            f.flush()
            subprocess.run(cmd, cwd=tree, env=_env(tree, commit), stdout=f, stderr=subprocess.STDOUT)
        if not out.exists():
            return {"bench": bench, "status": f"no record (see {log})", "figures": {}}
        return json.loads(out.read_text())


def _range(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.4g}"
    return f"{min(values):.4g}-{max(values):.4g}"


def verdict(base: list[float], ours: list[float]) -> tuple[float | None, str]:
    """(relative change of the medians, 'changed' / 'same' / '?') of one figure over the rounds."""
    if not base or not ours:
        return None, "?"
    b, o = statistics.median(base), statistics.median(ours)
    rel = o / b - 1 if b else None
    if len(base) < 2 or len(ours) < 2:
        return rel, "?"
    apart = max(base) < min(ours) or max(ours) < min(base)
    if not apart:
        return rel, "same"
    # Two runs a side fall apart by chance one time in three: too weak a test to call it a change.
    return rel, "changed" if min(len(base), len(ours)) >= 3 else "apart (< 3 rounds)"


def figures_table(bench: str, rev: str, head: str, runs: dict[str, list[dict]], everything: bool) -> Table:
    """Per figure: REV's and this checkout's range over the rounds, the change of medians, the verdict."""
    marked = {h.figure: h for h in headlines(bench)}
    names: dict[str, None] = {}
    for side in runs.values():
        for r in side:
            names.update(dict.fromkeys(r.get("figures", {})))

    def values(side: str, name: str) -> list[float]:
        out = []
        for r in runs[side]:
            f = r.get("figures", {}).get(name)
            if f and f.get("value") is not None:
                out.append(float(f["value"]))
        return out

    def is_ratio(name: str) -> bool:
        return any(r["figures"].get(name, {}).get("ratio") for side in runs.values() for r in side)

    table = Table(title=f"m1 bench {bench}: {rev} vs {head}, {max(map(len, runs.values()))} round(s)")
    for col in ("figure", rev, head, "change", "verdict", "goal"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    ordered = [n for n in marked if n in names] + [n for n in names if n not in marked]
    for name in ordered:
        if not (everything or name in marked or is_ratio(name)):
            continue
        base, ours = values("rev", name), values("head", name)
        rel, word = verdict(base, ours)
        if not (base or ours):
            continue
        label = marked[name].label if name in marked else name
        style = "bold" if word == "changed" else ""
        table.add_row(
            label,
            _range(base),
            _range(ours),
            f"{rel:+.1%}" if rel is not None else "-",
            f"[{style}]{word}[/]" if style else word,
            marked[name].goal if name in marked else "",
        )
    return table


@tool("compare")
def bench_compare(
    rev: Annotated[
        str, typer.Argument(help="The revision to compare this checkout with (a commit, tag, branch).")
    ],
    names: Annotated[
        list[str] | None, typer.Argument(help="Benches (default: every bench both versions have).")
    ] = None,
    rounds: Annotated[int, typer.Option(min=1, help="Runs of each side per bench, taking turns.")] = 3,
    record: Annotated[bool, typer.Option(help="Append every run to the history under its commit.")] = True,
    everything: Annotated[
        bool, typer.Option("--all", help="Every figure, not only the headlines and the ratios.")
    ] = False,
    bench_args: Annotated[
        str, typer.Option(help="Options for the benches, e.g. '--docs 20000' (the same on both sides).")
    ] = "",
) -> None:
    """Run benches at REV and at this checkout in turns, and print what changed between them."""
    console = Console()
    known = bench_names()
    chosen = names or known
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise InputError(f"unknown bench(es) {', '.join(unknown)}; known: {', '.join(known)}")
    folder = history_dir() if record else None
    head = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!flows/bench/history"))
    here = head[:7] + ("+dirty" if dirty else "")
    # A stopped compare (SIGTERM) unwinds like Ctrl-C: the running bench is killed, the export removed.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        _compare(console, rev, chosen, rounds, everything, bench_args.split(), folder, here)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _compare(
    console: Console,
    rev: str,
    chosen: list[str],
    rounds: int,
    everything: bool,
    args: list[str],
    folder: Path | None,
    here: str,
) -> None:
    with exported(rev) as (commit, tree):
        # Kept after the compare: the benches' own output, for a reader of the table.
        log = Path(tempfile.mkdtemp(prefix="m1-bench-compare-")) / "output.log"
        there = benches_at(tree)
        missing = [n for n in chosen if n not in there]
        if missing:
            console.print(f"not at {commit[:7]}, skipped: {', '.join(missing)}", highlight=False)
        session = f"compare {commit[:7]} vs {here} {time.strftime('%Y%m%dT%H%M%S')}"
        console.print(f"{session}; the benches' own output goes to {log}", highlight=False)
        for bench in [n for n in chosen if n in there]:
            runs: dict[str, list[dict]] = {"rev": [], "head": []}
            for r in range(rounds):
                order = ["rev", "head"] if r % 2 == 0 else ["head", "rev"]
                for side in order:
                    tree_, commit_ = (tree, commit) if side == "rev" else (ROOT, None)
                    label = commit[:7] if side == "rev" else here
                    with console.status(f"{bench} at {label}, round {r + 1}/{rounds}"):
                        rec = run_side(tree_, commit_, bench, args, log)
                    rec["session"] = session
                    runs[side].append(rec)
                    load = rec.get("load", {}).get("others_cores")
                    console.print(
                        f"{bench} at {label}, round {r + 1}: {rec.get('status')}, {rec.get('seconds', 0):.0f} s, "
                        f"others' load {load if load is not None else '?'} cores",
                        highlight=False,
                    )
                    if folder is not None and rec.get("status") == "ok":
                        append(rec, folder)
            runs = {s: [x for x in v if x.get("status") == "ok"] for s, v in runs.items()}
            console.print(figures_table(bench, commit[:7], here, runs, everything))
