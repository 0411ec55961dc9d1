"""What one `m1 bench NAME` run measured, as one record: the figures of every table it printed, the commit,
the machine, its threads and the other processes' load.

Every bench prints its results as rich Tables (and `LoadMeter` measures others' load per side), so a
bench needs no extra code to be recorded: while it runs, `Capture` sees each Table handed to any
`Console.print` and each `LoadMeter` made. A cell becomes a figure named ``table | row | column``:
the table's title up to its first comma or semicolon, without parenthesised parts (titles carry the
parameters, and sometimes a measured value, there), the row's label cells (a numeric label gets its column's
name: ``length 4096``) and the column's header. A figure is a ratio when its cell reads like one
(``1.3x``, ``28.8x less``) or its column says so (``×``, ``vs``, ``speed-up``, ``ratio``, ``x baseline``).

This module needs nothing but the standard library, rich and typer: `m1 bench compare` loads it by its file path
into a checkout of another revision (which may predate it) to record that revision's benches the same way.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.models import ParameterInfo

SCHEMA = 1
# The instruction-set extensions that decide how fast fp32/bf16 kernels can be; the full list is hashed.
SIMD = re.compile(r"^(sse4_[12]|avx\w*|fma\w*|f16c|amx\w*|bmi2|neon|asimd\w*|sve\w*)$")
_NUMBER = re.compile(r"^[+-]?(\d[\d,]*\.?\d*|\.\d+)(e[+-]?\d+)?")
_RATIO_CELL = re.compile(r"^[+-]?[\d,.]+(e[+-]?\d+)?x(\s+less)?$")
_RATIO_HEADER = re.compile(r"×|\bvs\b|speed-up|\bratio\b|^x |\bx baseline\b", re.IGNORECASE)
MAX_NOTES, MAX_NOTE_CHARS = 60, 1500


def plain(renderable) -> str:
    """A cell, header or title as plain text (markup removed)."""
    if isinstance(renderable, Text):
        return renderable.plain
    if isinstance(renderable, str):
        try:
            return Text.from_markup(renderable).plain
        except Exception:  # noqa: BLE001 - text with brackets that are not markup
            return renderable
    return str(renderable)


def table_name(title: str) -> str:
    """A table's stable name: its title without parenthesised parts, up to its first ',' or ';'."""
    name = re.sub(r"\([^()]*\)", "", " ".join(title.split()))
    return re.split(r"[,;]", name)[0].strip() or "table"


def number(text: str) -> float | None:
    """The value of a cell that is one number (with a unit, a % or a parenthesised note after it)."""
    t = text.strip()
    m = _NUMBER.match(t)
    if not m:
        return None
    rest = t[m.end() :].strip()
    if rest and not re.fullmatch(r"(%|x|x less|[A-Za-z]{1,4}|\(.*\))(\s*\(.*\))?", rest):
        return None  # "18986 / 1014", "35.7 / 264.8": not one figure
    try:
        value = float(m.group(0).replace(",", ""))
    except ValueError:
        return None
    return value / 100 if rest.startswith("%") else value


def is_ratio(header: str, text: str) -> bool:
    return bool(_RATIO_CELL.match(text.strip()) or _RATIO_HEADER.search(header))


def table_figures(table: Table) -> tuple[str, dict[str, dict]]:
    """(table name, figure name -> {value, text, ratio}) of one rich Table."""
    headers = [" ".join(plain(c.header).split()) for c in table.columns]
    cols = [[" ".join(plain(cell).split()) for cell in c.cells] for c in table.columns]
    rows = list(zip(*cols, strict=True)) if cols else []
    labels = 1  # leading columns that name a row: as many as make every row's name unique
    while labels < len(headers) and len({r[:labels] for r in rows}) < len(rows):
        labels += 1
    figures: dict[str, dict] = {}
    name = table_name(plain(table.title or ""))
    for row in rows:
        label = " ".join(
            f"{headers[i]} {row[i]}" if number(row[i]) is not None else row[i]
            for i in range(labels)
            if row[i]
        )
        for i in range(labels, len(headers)):
            text = row[i]
            if not text or text == "-":
                continue
            figures[f"{name} | {label} | {headers[i]}"] = {
                "value": number(text),
                "text": text,
                "ratio": is_ratio(headers[i], text),
            }
    return name, figures


class Capture:
    """Collects, while active, the Tables and lines every rich Console prints and the LoadMeters made."""

    def __init__(self) -> None:
        self.figures: dict[str, dict] = {}
        self.notes: list[str] = []
        self.meters: list = []
        self._tables: dict[str, int] = {}

    def seen(self, obj) -> None:
        if isinstance(obj, Table):
            name, figures = table_figures(obj)
            self._tables[name] = self._tables.get(name, 0) + 1
            if self._tables[name] > 1:  # a second table of the same name in one run
                figures = {k.replace(name, f"{name} #{self._tables[name]}", 1): v for k, v in figures.items()}
            self.figures.update(figures)
        elif isinstance(obj, str | Text) and len(self.notes) < MAX_NOTES:
            line = " ".join(plain(obj).split())
            if line:
                self.notes.append(line[:MAX_NOTE_CHARS])

    @contextmanager
    def active(self) -> Iterator[Capture]:
        printer = Console.print
        capture = self

        def print_and_capture(console, *objects, **kwargs):
            for obj in objects:
                try:
                    capture.seen(obj)
                except Exception:  # noqa: BLE001 - recording must never break the bench's own output
                    pass
            return printer(console, *objects, **kwargs)

        meter_cls = _load_meter_class()
        meter_init = meter_cls.__init__ if meter_cls else None

        def init_and_register(meter, *args, **kwargs):
            meter_init(meter, *args, **kwargs)
            capture.meters.append(meter)

        Console.print = print_and_capture
        if meter_cls:
            meter_cls.__init__ = init_and_register
        try:
            yield self
        finally:
            Console.print = printer
            if meter_cls:
                meter_cls.__init__ = meter_init

    def side_loads(self) -> dict[str, float]:
        """Others' busy cores during each side the bench measured (all its LoadMeters)."""
        return {name: round(load, 3) for m in self.meters for name, load in getattr(m, "sides", {}).items()}


def _load_module():
    try:
        # lazy: the checkout being measured provides it (this file may run inside an older revision)
        from flows.bench import load
    except ImportError:
        return None
    return load


def _load_meter_class():
    module = _load_module()
    return getattr(module, "LoadMeter", None) if module else None


def machine() -> dict:
    """The CPU (model, cores, instruction-set extensions), memory and software a figure depends on."""
    model, flags = platform.processor() or platform.machine(), []
    try:
        info = Path("/proc/cpuinfo").read_text()
        found = re.search(r"^(model name|Hardware|cpu model)\s*:\s*(.+)$", info, re.MULTILINE)
        model = found.group(2).strip() if found else model
        found = re.search(r"^(flags|Features)\s*:\s*(.+)$", info, re.MULTILINE)
        flags = found.group(2).split() if found else []
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = None
    versions = {}
    for dist in ("torch", "numpy", "transformers"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "simd": sorted(f for f in flags if SIMD.match(f)),
        "flags_sha": hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:8],
        "memory_gib": round(memory, 1) if memory else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        **versions,
    }


def machine_key(m: dict) -> str:
    """The machine a figure is comparable on: CPU model, cores and instruction-set extensions."""
    return f"{m.get('cpu')}, {m.get('cores')} cores, flags {m.get('flags_sha')}"


def threads() -> dict:
    """Thread settings in force: usable cores, the thread variables, torch's intra-op threads if loaded."""
    out: dict = {}
    try:
        out["affinity"] = len(os.sched_getaffinity(0))
    except AttributeError:
        out["affinity"] = os.cpu_count()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if os.environ.get(var):
            out[var] = os.environ[var]
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_num_threads"):
        out["torch"] = torch.get_num_threads()
    return out


def source(root: Path) -> dict:
    """The commit of the checkout at `root` and whether its tracked code differs from it (the history
    folder aside); M1_BENCH_COMMIT names it where `root` is no git checkout (an exported revision)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        top = Path(git("rev-parse", "--show-toplevel")).resolve()
        if top != root.resolve():  # root is no checkout of its own: a folder inside another repository
            raise subprocess.CalledProcessError(1, "git")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!flows/bench/history")
        return {"commit": commit, "dirty": bool(changed)}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": os.environ.get("M1_BENCH_COMMIT", "unknown"), "dirty": False}


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextmanager
def recording(bench: str, root: Path, args: dict, params: dict) -> Iterator[dict]:
    """Run a bench inside; the yielded dict becomes its record on exit (also when the bench fails, with
    the error as its status)."""
    record: dict = {"schema": SCHEMA, "bench": bench, **source(root), "date": now(), "args": args}
    record["params"] = params
    load = _load_module()
    snap = getattr(load, "snapshot", None)
    start = snap() if snap else None
    started = time.perf_counter()
    capture = Capture()
    record["status"] = "ok"
    try:
        with capture.active():
            yield record
    except SystemExit as exc:
        if exc.code not in (0, None):
            record["status"] = f"exit {exc.code}"
        raise
    except BaseException as exc:
        record["status"] = f"error: {type(exc).__name__}: {str(exc)[:300]}"
        raise
    finally:
        record["seconds"] = round(time.perf_counter() - started, 2)
        record["machine"] = machine()
        record["threads"] = threads()
        others = load.others_cores(start, snap()) if start is not None else None
        record["load"] = {
            "others_cores": round(others, 3) if others is not None else None,
            "loadavg": [round(x, 2) for x in os.getloadavg()],
            "sides": capture.side_loads(),
        }
        record["figures"] = capture.figures
        record["notes"] = capture.notes


def jsonable(value):
    return json.loads(json.dumps(value, default=str))


def arguments(command: Callable, kwargs: dict) -> tuple[dict, dict]:
    """(the options whose value is not the default, every option's value) of one call of a bench
    command: records are compared only with records of the same non-default options, and the values
    say what the defaults were."""
    defaults = {}
    for name, p in inspect.signature(command).parameters.items():
        default = p.default
        if isinstance(default, ParameterInfo):  # typer's older `= typer.Option(default, ...)` style
            default = default.default
        defaults[name] = default
    values = jsonable(kwargs)
    given = {k: v for k, v in values.items() if k not in defaults or v != jsonable(defaults[k])}
    return given, values


def capture_arguments(command: Callable, into: dict) -> Callable:
    """`command` that first stores its `arguments` in `into` (args, params)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        into["args"], into["params"] = arguments(command, kwargs)
        return command(*args, **kwargs)

    return run


def _main(argv: list[str]) -> int:
    """`python -P -c BOOT capture.py OUT ROOT bench NAME ARGS...`: run `m1 bench NAME ARGS` of the checkout
    at ROOT (first on sys.path) and write its record to OUT as JSON."""
    out, root, cli_args = Path(argv[0]), Path(argv[1]).resolve(), argv[2:]
    sys.path.insert(0, str(root))
    # The CLI of the checkout at ROOT (first on sys.path now), which may be another revision's: looked up
    # by name, as `m1` itself is, not imported by this module (the CLI imports the benches, not back).
    cli = importlib.import_module("flows.cli")
    benches = importlib.import_module("flows.bench")
    if not Path(cli.__file__).resolve().is_relative_to(root):
        raise SystemExit(f"flows imported from {cli.__file__}, not from {root}")
    sys.argv = ["m1", *cli_args]
    code: object = 0
    name, given = cli_args[1], {}
    for info in benches.app.registered_commands:
        if (info.name or info.callback.__name__.replace("_", "-")) == name:
            info.callback = capture_arguments(info.callback, given)
    with recording(name, root, {}, {}) as record:
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code
            if code not in (0, None):
                record["status"] = f"exit {code}"
        except Exception as exc:  # noqa: BLE001 - the record says how the bench failed
            traceback.print_exc()
            record["status"] = f"error: {type(exc).__name__}: {str(exc)[:300]}"
            code = 1
        record.update(given)
    # recording() closed the record after the block; write it now
    out.write_text(json.dumps(record, ensure_ascii=False))
    return 0 if code in (0, None) else 1


# What `m1 bench compare` runs in each child: load this file by path, then `_main`.
BOOT = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('_m1_bench_capture', sys.argv[1])\n"
    "mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)\n"
    "sys.exit(mod._main(sys.argv[2:]))\n"
)
