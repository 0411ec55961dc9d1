"""flows/bench history: every bench run is recorded, `m1 bench report` marks moves beyond the spread,
`m1 bench compare` runs two revisions in turns, and the README's table is the history's."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
import typer
from rich.table import Table
from typer.testing import CliRunner

import flows.bench as bench_pkg
from flows.bench import bench_names, recorded
from flows.bench.capture import machine, machine_key, number, table_figures, table_name
from flows.bench.compare import verdict
from flows.bench.headlines import HEADLINES, Headline
from flows.bench.history import HISTORY, change, groups, read, select, spread
from flows.bench.report import README, readme_table, render_readme
from flows.cli import app
from flows.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def committed_history() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(HISTORY.glob("*.jsonl"))}


# --- figures from tables ---------------------------------------------------------------------------


def test_table_figures_are_named_by_table_row_and_column():
    t = Table(title="lightning attention fwd+bwd (cpu seconds; SDPA: causal)")
    for col in ("length", "naive", "naive/\nchunked", "growth"):
        t.add_column(col)
    t.add_row("1024", "0.248", "10.9x", "-")
    t.add_row("4096", "[bold]1.196[/]", "n/a (load differed)", "2.47")
    name, figures = table_figures(t)
    assert name == "lightning attention fwd+bwd"
    ratio = figures["lightning attention fwd+bwd | length 1024 | naive/ chunked"]
    assert ratio == {"value": 10.9, "text": "10.9x", "ratio": True}
    assert figures["lightning attention fwd+bwd | length 4096 | naive"]["value"] == 1.196  # markup gone
    refused = figures["lightning attention fwd+bwd | length 4096 | naive/ chunked"]
    assert refused["value"] is None and refused["text"].startswith("n/a")
    assert "lightning attention fwd+bwd | length 1024 | growth" not in figures  # '-' is no figure


def test_rows_named_by_as_many_label_columns_as_make_them_unique():
    t = Table(title="analytic FLOPs: hybrid / all-softmax (formulas)")
    for col in ("model", "context", "ratio per token"):
        t.add_column(col)
    t.add_row("this benchmark", "64K", "17.8%")
    t.add_row("this benchmark", "100K", "16.0%")
    _, figures = table_figures(t)
    assert figures["analytic FLOPs: hybrid / all-softmax | this benchmark context 64K | ratio per token"][
        "value"
    ] == (pytest.approx(0.178))
    assert figures["analytic FLOPs: hybrid / all-softmax | this benchmark context 100K | ratio per token"][
        "ratio"
    ]


def test_numbers_and_ratio_columns():
    assert number("31,463") == 31463 and number("536 MB") == 536 and number("0.296 (27%)") == 0.296
    assert number("14%") == pytest.approx(0.14) and number("28.8x less") == 28.8
    assert number("18986 / 1014") is None and number("1..6") is None and number("yes") is None
    t = Table(title="MinHash LSH, 128 permutations")
    for col in ("method", "docs/s", "ours × (cpu)", "vs baseline", "s / step"):
        t.add_column(col)
    t.add_row("datasketch bulk*", "5,072", "6.2", "1.00x", "0.5")
    _, figures = table_figures(t)
    flags = {k.split(" | ")[2]: v["ratio"] for k, v in figures.items()}
    assert flags == {"docs/s": False, "ours × (cpu)": True, "vs baseline": True, "s / step": False}
    assert table_name("SWE evaluation: 4 isodate tasks (gold patches), docker vs a local venv") == (
        "SWE evaluation: 4 isodate tasks"
    )


# --- recording -----------------------------------------------------------------------------------------


def test_every_registered_bench_is_recorded_and_the_tools_are_not():
    commands = {(i.name or i.callback.__name__): i.callback for i in bench_pkg.app.registered_commands}
    assert set(bench_names()) >= {"attention", "dedup", "train-step", "swe", "genrm", "train-scale"}
    for name in bench_names():
        assert hasattr(commands[name], "__wrapped__"), f"m1 bench {name} is not recorded"
    for name in ("report", "compare", "readme", "list"):
        assert name not in bench_names() and not hasattr(commands[name], "__wrapped__")


def test_a_bench_run_appends_one_record_with_commit_machine_load_and_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_BENCH_HISTORY", str(tmp_path))
    before = committed_history()
    args = ["bench", "logic", "-n", "1", "--tasks", "arrow_maze,sudoku"]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    (record,) = read("logic", tmp_path)
    assert record["status"] == "ok" and record["bench"] == "logic"
    assert len(record["commit"]) == 40 and isinstance(record["dirty"], bool)
    assert record["args"] == {"n": 1, "tasks": "arrow_maze,sudoku"}  # the options that differ from defaults
    assert record["machine"]["cpu"] and record["machine"]["cores"] == os.cpu_count()
    assert "simd" in record["machine"] and record["threads"]["affinity"] >= 1
    assert record["load"]["others_cores"] >= 0 and len(record["load"]["loadavg"]) == 3
    figures = record["figures"]
    assert set(figures) >= {
        "logic task generation | arrow_maze | hard/easy",
        "logic task generation | sudoku | gen/s hardest",
    }
    assert figures["logic task generation | sudoku | hard/easy"]["ratio"]
    assert any(line.startswith("machine load at start") for line in record["notes"])
    assert committed_history() == before  # tests never touch flows/bench/history


def test_side_loads_and_failures_are_recorded_and_user_errors_are_not(tmp_path, monkeypatch):
    from flows.bench.load import LoadMeter

    monkeypatch.setenv("M1_BENCH_HISTORY", str(tmp_path))
    fake = typer.Typer()

    def measured(fail: bool = False) -> None:
        meter = LoadMeter()
        with meter.side("ours"):
            pass
        if fail:
            raise RuntimeError("the kernel diverged")

    def misused() -> None:
        raise InputError("--lengths: expected integers")

    fake.command("measured")(recorded("measured", measured))
    fake.command("misused")(recorded("misused", misused))
    assert CliRunner().invoke(fake, ["measured"]).exit_code == 0
    assert CliRunner().invoke(fake, ["measured", "--fail"]).exit_code != 0
    CliRunner().invoke(fake, ["misused"])
    ok, failed = read("measured", tmp_path)
    assert ok["status"] == "ok" and "ours" in ok["load"]["sides"]
    assert failed["status"] == "error: RuntimeError: the kernel diverged" and failed["args"] == {"fail": True}
    assert read("misused", tmp_path) == []


def test_history_off_records_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_BENCH_HISTORY", "off")
    fake = typer.Typer()
    fake.command("quiet")(recorded("quiet", lambda: None))
    assert CliRunner().invoke(fake, []).exit_code == 0
    assert not list(tmp_path.iterdir())


# --- spread, change, report -----------------------------------------------------------------------------

HERE = machine()


def rec(commit: str, day: int, figures: dict[str, float], bench: str = "toy", load: float = 0.1) -> dict:
    return {
        "bench": bench,
        "commit": commit * 40,
        "dirty": False,
        "date": f"2026-12-{day:02d}T10:00:00Z",
        "status": "ok",
        "args": {},
        "machine": HERE,
        "load": {"others_cores": load, "sides": {}},
        "figures": {k: {"value": v, "text": f"{v}x", "ratio": True} for k, v in figures.items()},
        "notes": [],
    }


def toy_history() -> list[dict]:
    runs = [
        rec("a", 1, {"t | fast | vs base": v, "t | noisy | vs base": n}) for v, n in ((2.0, 1.0), (2.1, 1.4))
    ]
    runs += [
        rec("b", 2, {"t | fast | vs base": v, "t | noisy | vs base": n}) for v, n in ((1.6, 1.1), (1.65, 1.3))
    ]
    return runs


def test_spread_is_measured_from_repeat_runs_and_a_move_is_beyond_it():
    history = groups(toy_history(), times={})
    assert [g.version for g in history] == ["aaaaaaa", "bbbbbbb"]
    assert spread(history, "t | fast | vs base") == pytest.approx((0.1 / 2.05 + 0.05 / 1.625) / 2)
    fast = change(history, "t | fast | vs base")
    assert fast.latest == pytest.approx(1.625) and fast.previous == pytest.approx(2.05) and fast.moved
    noisy = change(history, "t | noisy | vs base")  # +0%-ish change inside a spread of ~30%
    assert noisy.moved is False
    # the median moved by more than the usual spread, but the latest runs overlap the previous ones
    overlap = [rec("a", 1, {"x": v}) for v in (1.0, 1.01, 1.02)] + [
        rec("b", 2, {"x": v}) for v in (1.005, 1.1, 1.12)
    ]
    c = change(groups(overlap, times={}), "x")
    assert abs(c.relative) > c.spread and c.moved is False
    single = groups([rec("a", 1, {"x": 1.0}), rec("b", 2, {"x": 2.0})], times={})
    assert spread(single, "x") is None and change(single, "x").moved is None  # no repeats: unknown


def test_groups_follow_commit_dates_not_record_dates():
    late_measured_old_commit = rec("a", 9, {"x": 1.0})  # e.g. `m1 bench compare` measuring an old commit
    history = groups([rec("b", 2, {"x": 2.0}), late_measured_old_commit], times={"a" * 40: 1, "b" * 40: 2})
    assert [g.version for g in history] == ["aaaaaaa", "bbbbbbb"]


def test_report_marks_the_ratio_that_moved(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_BENCH_HISTORY", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "250")  # rich's tables uncut
    (tmp_path / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in toy_history()))
    result = CliRunner().invoke(app, ["bench", "report", "toy", "--fail-on-move"], terminal_width=250)
    assert result.exit_code == 1, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.startswith("│")}
    assert "moved" in rows["t | fast | vs base"] and "-20.7%" in rows["t | fast | vs base"]
    assert "moved" not in rows["t | noisy | vs base"]  # a 10% change inside its 25% spread
    calm = [{**r, "figures": {k: v for k, v in r["figures"].items() if "noisy" in k}} for r in toy_history()]
    (tmp_path / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in calm))
    assert CliRunner().invoke(app, ["bench", "report", "toy", "--fail-on-move"]).exit_code == 0
    other = CliRunner().invoke(app, ["bench", "report", "toy", "--machine", "no such cpu"])
    assert "no run on" in other.output


def test_report_says_when_the_latest_run_failed_whatever_the_line_order(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_BENCH_HISTORY", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "250")
    failed = {**rec("c", 3, {}), "status": "error: RuntimeError: diverged"}
    lines = [failed, *toy_history()]  # a union merge may put a later record first
    (tmp_path / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = CliRunner().invoke(app, ["bench", "report", "toy"]).output
    assert "toy: the latest run (ccccccc, 2026-12-03T10:00:00Z) failed: error: RuntimeError: diverged" in out
    assert "bbbbbbb (2 run(s)" in out  # the figures are still the latest successful runs'


def test_records_of_other_machines_and_options_are_not_compared():
    other = {
        **rec("b", 2, {"x": 1.0}),
        "machine": {**HERE, "cpu": HERE["cpu"] + " (another)"},
    }  # never this one
    small = {**rec("b", 2, {"x": 1.0}), "args": {"docs": 1000}}
    by_options = select([rec("a", 1, {"x": 2.0}), other, small], machine_key(HERE))
    assert sorted(by_options) == ['{"docs": 1000}', "{}"] and len(by_options["{}"]) == 1


# --- compare ----------------------------------------------------------------------------------------------


def test_compare_verdict_needs_ranges_apart_over_three_rounds():
    assert verdict([1.0, 1.1, 1.05], [1.5, 1.6, 1.55]) == (pytest.approx(1.55 / 1.05 - 1), "changed")
    assert verdict([1.0, 1.6, 1.05], [1.5, 1.6, 1.55])[1] == "same"
    assert verdict([1.0, 1.1], [1.5, 1.6])[1] == "apart (< 3 rounds)"
    assert verdict([1.0], [1.5])[1] == "?"


@pytest.mark.slow  # four `m1 bench logic` processes, two of them at an exported revision
def test_compare_runs_both_revisions_in_turns_and_records_each_under_its_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("M1_BENCH_HISTORY", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "250")  # rich's tables uncut
    rev = "HEAD~1"
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", rev], capture_output=True).returncode:
        pytest.skip("a clone without the parent commit (shallow)")
    args = ["bench", "compare", rev, "logic", "--rounds", "2", "--bench-args", "-n 1 --tasks arrow_maze"]
    result = CliRunner().invoke(app, args, terminal_width=250)
    assert result.exit_code == 0, result.output
    records = read("logic", tmp_path)
    assert [r["status"] for r in records] == ["ok"] * 4
    old = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True, text=True
    ).stdout.strip()
    commits = [r["commit"] for r in records]
    assert commits[0] == old and commits[3] == old and commits[1] == commits[2] != old  # REV, here, here, REV
    assert all(r["args"] == {"n": 1, "tasks": "arrow_maze"} for r in records)
    assert "logic task generation | arrow_maze | hard/easy" in result.output


def test_compare_rejects_an_unknown_revision_or_bench():
    assert isinstance(
        CliRunner().invoke(app, ["bench", "compare", "no-such-rev", "logic"]).exception, InputError
    )
    assert isinstance(CliRunner().invoke(app, ["bench", "compare", "HEAD", "nope"]).exception, InputError)


# --- README ----------------------------------------------------------------------------------------------


def test_readme_table_is_written_from_the_history(tmp_path):
    figure = "train step | m1model | speed-up vs transformers"
    runs = [rec("a", 1, {figure: 1.0}, bench="train-step")]
    runs += [rec("b", 2, {figure: v}, bench="train-step") for v in (1.1, 1.05, 1.2)]
    (tmp_path / "train-step.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    key = machine_key(HERE)
    text = f'intro\n<!-- bench-table machine="{key}" -->\nstale\n<!-- /bench-table -->\nafter\n'
    out = render_readme(text, tmp_path)
    assert out.startswith("intro\n") and out.endswith("<!-- /bench-table -->\nafter\n") and "stale" not in out
    # the latest commit's median, its range and its number of runs
    assert (
        "| `train-step` | vs transformers' MiniMax | 1.10x (1.05x-1.20x) |  | 3 | bbbbbbb, 2026-12-02 |"
        in out
    )
    assert readme_table(tmp_path, "another machine").count("\n") == 3  # the machine and header rows only
    with pytest.raises(InputError):
        render_readme("no section", tmp_path)


def test_readme_table_skips_a_later_run_without_the_headlines(tmp_path):
    """A one-time run with other options (dedup on Dask at 20M documents) measures other figures: the
    table keeps the headlines of the latest run that has them."""
    figure = "train step | m1model | speed-up vs transformers"
    runs = [
        rec("a", 1, {figure: 1.1}, bench="train-step"),
        rec("b", 2, {"other | x | y": 3.0}, bench="train-step"),
    ]
    runs[1]["args"] = {"docs": "20000000"}
    (tmp_path / "train-step.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    table = readme_table(tmp_path, machine_key(HERE))
    assert "| `train-step` | vs transformers' MiniMax | 1.10x |  | 1 | aaaaaaa, 2026-12-01 |" in table


def test_the_readme_table_matches_the_committed_history():
    text = README.read_text()
    assert render_readme(text, HISTORY) == text, (
        "the README's benchmark table is stale: run `m1 bench readme`"
    )


def test_every_headline_names_a_figure_of_its_bench_latest_recorded_run():
    key = render_key()
    for bench, lines in HEADLINES.items():
        runs = select(read(bench, HISTORY), key).get("{}", [])
        if not runs:
            continue  # not recorded on the README's machine yet
        latest = groups(runs)[-1]
        for h in lines:
            assert h.figure in latest.figures, f"{bench}: no figure {h.figure!r} in its latest run"


def render_key() -> str:
    from flows.bench.report import BEGIN

    return BEGIN.search(README.read_text()).group("machine")


def test_goals():
    assert Headline("x", "f", ">= 10x").met(10.0) and not Headline("x", "f", ">= 10x").met(9.6)
    assert Headline("x", "f", "<= 15%").met(0.14) and not Headline("x", "f", "<= 1.2x").met(1.43)
    assert Headline("x", "f").met(1.0) is None
