"""`m1 verify` (score a JSONL file with any verifier plugin) and `m1 verifiers list`.

`m1 verify` is a stable interface that other tools call: each output row is the input row plus
``reward`` (float) and ``details`` (object). No row is lost: a row the verifier cannot handle, and a
line that is not a JSON object, get reward 0 and an ``error`` detail. ``--map field=column`` lets the
verifier read a field from a column of another name (``--map reference=final_answer``); the output
rows stay as they came.

A row *fails* when its details carry an ``error`` (an unreadable line, a field the verifier needs is
missing, a response its verifier cannot parse). Some rows failing is a batch's normal life: the exit
code is 0 and the last line says how many failed and the commonest reason. No row scored means the
file as a whole was read wrongly (a column not mapped, the wrong verifier): the output is still written
(each row with its error), and the command exits 2 with one line naming how many failed and the
commonest reason. An input with no rows is an error and writes nothing.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from flows.atomic import atomic_path
from flows.commands.curate import parse_map
from flows.errors import InputError
from flows.jsonl import read_jsonl
from flows.progress import bars
from sandboxes import SandboxUnavailable, get_sandbox
from verifiers.base import Reward, default_registry, verify_safely

PluginDirOpt = Annotated[
    list[Path] | None, typer.Option("--plugin-dir", help="Directory of plugin *.py files (repeatable).")
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Pipeline config; its plugin_dirs are searched too.")
]


def registry(plugin_dirs: list[Path] | None, config: Path | None):
    # heavy: pydantic; not at m1 start-up
    from flows.config import load_config

    dirs = [Path(d) for d in (load_config(config).plugin_dirs if config else [])] + list(plugin_dirs or [])
    for d in dirs:
        if not d.is_dir():
            raise InputError(f"{d}: plugin directory not found")
    return default_registry(dirs)


def parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """``--option key=value`` pairs; values are read as YAML so numbers and booleans keep their type."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option {pair!r}: expected key=value, e.g. format_weight=0.2")
        try:
            options[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError:
            options[key.strip()] = raw
    return options


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, row, problem) for each non-blank line; a broken line is reported, never skipped."""
    for line in read_jsonl(path, errors="replace"):
        n, row = line.number, line.value
        if line.error is not None:
            yield n, {"line": n, "raw": line.text}, f"line {n}: invalid JSON: {line.reason}"
        elif not isinstance(row, dict):
            yield n, {"line": n, "raw": row}, f"line {n}: expected a JSON object, got {type(row).__name__}"
        else:
            yield n, row, None


def _testgen_row(
    lineno: int, row: dict[str, Any], problem: str | None, options: dict[str, Any]
) -> dict[str, Any]:
    """One problem row with `tests` and a `testgen` report added; failures are reported in the row."""
    # heavy: pydantic; not at m1 start-up
    from verifiers.testgen import EndpointError, generate_suite, solutions_of

    if problem is not None:
        return {**row, "testgen": {"error": problem}}
    solutions = solutions_of(row)
    if not isinstance(row.get("prompt"), str) or not solutions:
        return {
            **row,
            "testgen": {
                "error": f"line {lineno}: needs `prompt` and `solutions` (code strings or {{code, language}})"
            },
        }
    try:
        suite = generate_suite(row["prompt"], solutions, **options)
    except EndpointError as exc:
        return {**row, "testgen": {"error": str(exc)}}
    report = {
        **suite.summary(),
        "rejected_inputs": suite.rejected,
        "broken_solutions": suite.broken_solutions,
    }
    return {**row, "tests": suite.tests, "testgen": report}


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


def mapped(row: dict[str, Any], mapping: dict[str, str]) -> tuple[dict[str, Any], str | None]:
    """The row as the verifier reads it (each mapped field taken from its column), or the problem."""
    missing = [f"{field}={column}" for field, column in mapping.items() if column not in row]
    if missing:
        return row, f"no column {mapping[missing[0].split('=')[0]]!r} (--map {missing[0]})"
    return {**row, **{field: row[column] for field, column in mapping.items()}}, None


def failures(stats: dict[str, Any], mapping: dict[str, str]) -> str | None:
    """How many rows failed and the commonest reason, with the `--map` that may fix it when the reason
    names a field; None when no row failed."""
    reasons: Counter = stats["reasons"]
    if not stats["errors"]:
        return None
    reason, count = reasons.most_common(1)[0]
    rows, failed = stats["rows"], stats["errors"]
    head = f"no row scored: all {rows} failed" if failed == rows else f"{failed} of {rows} rows failed"
    line = f"{head}; commonest reason ({count} row{'s' * (count != 1)}): {reason}"
    field = re.search(r"`(\w+)`", reason)
    if field and field.group(1) not in mapping:
        columns = ", ".join(sorted(stats["columns"])) or "none"
        line += f"; map a column to it with --map {field.group(1)}=COLUMN (columns: {columns})"
    return line


def score_file(
    verifier,
    source: Path,
    target: Path,
    batch_size: int,
    console: Console,
    mapping: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Score `source` into `target` (atomically) in batches; returns summary counts, the errors by
    reason (without their line numbers) and the columns the rows have."""
    mapping = mapping or {}
    stats: dict[str, Any] = {
        "rows": 0,
        "errors": 0,
        "bad_lines": 0,
        "reward_sum": 0.0,
        "reasons": Counter(),
        "columns": set(),
    }

    def flush(out, batch: list[tuple[dict[str, Any], str | None]]) -> None:
        views = [mapped(row, mapping) if problem is None else (row, problem) for row, problem in batch]
        good = [view for view, problem in views if problem is None]
        rewards = iter(verify_safely(verifier, good) if good else [])
        for (row, bad_line), (_, problem) in zip(batch, views, strict=True):
            reward = Reward.error(problem) if problem else next(rewards)
            stats["rows"] += 1
            stats["bad_lines"] += bad_line is not None
            stats["errors"] += "error" in reward.details
            stats["reward_sum"] += reward.reward
            if "error" in reward.details:
                stats["reasons"][re.sub(r"^line \d+: ", "", str(reward.details["error"]))] += 1
            if bad_line is None and len(stats["columns"]) < 100:
                stats["columns"].update(row)
            out.write(
                json.dumps({**row, "reward": reward.reward, "details": reward.details}, default=str) + "\n"
            )

    try:
        total = _count_lines(source)
    except OSError as exc:  # no permission, an I/O error: the file exists but cannot be read
        raise InputError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    if not total:
        raise InputError(f"{source}: no rows to score (the file is empty)")
    with (
        atomic_path(target) as tmp,
        tmp.open("w", encoding="utf-8") as out,
        bars(console, transient=True) as progress,
    ):
        task = progress.add_task(f"verify [{verifier.name}]", total=total)
        batch: list[tuple[dict[str, Any], str | None]] = []
        for _, row, problem in read_rows(source):
            batch.append((row, problem))
            if len(batch) >= batch_size:
                flush(out, batch)
                progress.advance(task, len(batch))
                batch = []
        flush(out, batch)
        progress.advance(task, len(batch))
        out.flush()
    return stats


def register(app: typer.Typer) -> None:
    verifiers_app = typer.Typer(no_args_is_help=True)
    app.add_typer(verifiers_app, name="verifiers", help="Reward verifier plugins.")

    @verifiers_app.command("list")
    def list_verifiers(plugin_dir: PluginDirOpt = None, config: ConfigOpt = None) -> None:
        """Show every verifier plugin: name, version, the package or file that provides it, load errors."""
        table = Table(title="verifier plugins (entry-point group m1.verifiers + plugin directories)")
        for col in ("name", "version", "source", "target", "status"):
            table.add_column(col, overflow="fold")
        for info in registry(plugin_dir, config).plugins():
            status = f"[red]load error: {info.load_error}[/]" if info.load_error else "[green]ok[/]"
            table.add_row(info.name, info.version or "-", info.source, info.target, status)
        Console().print(table)

    @verifiers_app.command("testgen")
    def testgen(
        input: Annotated[Path, typer.Option("--input", "-i", help="JSONL problems: `prompt` + `solutions`.")],
        output: Annotated[
            Path, typer.Option("--output", "-o", help="JSONL: each problem + `tests` + `testgen`.")
        ],
        endpoint: Annotated[
            str, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.")
        ],
        model: Annotated[str, typer.Option(help="Model name sent to the endpoint.")],
        api_key_env: Annotated[
            str, typer.Option(help="Environment variable holding the API key, if any.")
        ] = "OPENAI_API_KEY",
        n_inputs: Annotated[int, typer.Option(min=1, help="Test inputs to ask for per problem.")] = 10,
        backend: Annotated[str, typer.Option(help="Sandbox backend: process or docker.")] = "process",
    ) -> None:
        """Generate test suites for problems without tests: model-proposed inputs, kept where the
        reference solutions (run in the sandbox) agree on the output."""
        if not input.is_file():
            raise InputError(f"{input}: input file not found")
        try:
            get_sandbox(backend)
        except (SandboxUnavailable, ValueError) as exc:
            raise InputError(f"--backend {backend}: {exc}") from None
        rows = list(read_rows(input))
        options = {
            "endpoint": endpoint,
            "model": model,
            "api_key": os.environ.get(api_key_env),
            "n_inputs": n_inputs,
            "backend": backend,
        }
        kept = failed = 0
        console = Console(stderr=True)
        with (
            atomic_path(output) as tmp,
            tmp.open("w", encoding="utf-8") as out,
            bars(console, transient=True) as bar,
        ):
            task = bar.add_task("testgen", total=len(rows))
            for lineno, row, problem in rows:
                scored = _testgen_row(lineno, row, problem, options)
                kept += len(scored.get("tests", []))
                failed += "error" in scored["testgen"]
                out.write(json.dumps(scored) + "\n")
                bar.advance(task)
        console.print(
            f"[bold]{output}[/]: {len(rows)} problems, {kept} tests kept, {failed} problems failed",
            highlight=False,
        )

    @app.command("verify")
    def verify(
        verifier: Annotated[
            str, typer.Option("--verifier", "-v", help="Verifier name (see `m1 verifiers list`).")
        ],
        input: Annotated[
            Path, typer.Option("--input", "-i", help="JSONL: one item per line, with `response`.")
        ],
        output: Annotated[Path, typer.Option("--output", "-o", help="JSONL: input rows + reward + details.")],
        plugin_dir: PluginDirOpt = None,
        config: ConfigOpt = None,
        option: Annotated[
            list[str] | None, typer.Option("--option", help="Verifier option key=value (repeatable).")
        ] = None,
        batch_size: Annotated[int, typer.Option(min=1, help="Items per verify() call.")] = 256,
        map_: Annotated[
            list[str] | None,
            typer.Option(
                "--map", help="field=column: read a field from another column, e.g. reference=final_answer."
            ),
        ] = None,
    ) -> None:
        """Score every row of a JSONL file; the batch never aborts on a bad row. Rows that fail (their
        details carry an `error`) are counted with their commonest reason; when no row scored, the
        command exits 2 (the output is written all the same, each row with its error).

        Each row holds `response` and the fields its verifier reads, at the top level or in `metadata`.
        code: `tests` (stdin/stdout `{input, output}`, or `{args, kwargs, expected}` with `fn_name`),
        or tests as programs: HumanEval `test` + `entry_point`, MBPP `test_list` (+ `test_imports`,
        `test_setup_code`), or a pytest `test` file of test_* functions importing from `solution`."""
        if not input.is_file():
            raise InputError(f"{input}: input file not found")
        mapping = parse_map(map_)
        reg = registry(plugin_dir, config)
        options = parse_options(option)
        try:
            scorer = reg.get(verifier, **options)
        except KeyError as exc:
            raise InputError(f"--verifier: {exc.args[0]}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"--option for verifier {verifier!r}: {exc}") from None
        console = Console(stderr=True)
        try:
            stats = score_file(scorer, input, output, batch_size, console, mapping)
        finally:
            close = getattr(scorer, "close", None)
            if callable(close):
                close()
        failed = failures(stats, mapping)
        if stats["errors"] == stats["rows"]:  # nothing in the output is a judgement: the file was misread
            raise InputError(f"{input}: {failed}; each row's error is in {output}")
        mean = stats["reward_sum"] / stats["rows"]
        console.print(
            f"[bold]{output}[/]: {stats['rows']} rows, mean reward {mean:.4f}, "
            f"{stats['errors']} with errors ({stats['bad_lines']} unreadable lines)",
            highlight=False,
        )
        if failed:
            console.print(failed, highlight=False, markup=False, soft_wrap=True)
