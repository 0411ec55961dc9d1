"""CLI habits that hold across commands: `-s` wherever `--set` is (read by each command's parser), JSON for
scripts, the store listed, `m1 --help` naming only commands that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from flows.cli import app
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore, StepCount

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return runner.invoke(app, list(args), terminal_width=200)


def _commands(command, path: tuple[str, ...] = ()):
    """(path, command) for every command of the CLI, walking typer's click groups."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield " ".join(path), command
    for name, sub in (subcommands or {}).items():
        yield from _commands(sub, (*path, name))


SET_COMMANDS = [
    (path, command)
    for path, command in _commands(typer.main.get_command(app))
    if any("--set" in getattr(p, "opts", ()) for p in command.params)
]


def test_the_commands_with_set_are_all_found():
    found = {path for path, _ in SET_COMMANDS}
    assert {"run", "curate run", "train stage", "model init", "genrm general", "genrm train-judge"} <= found


@pytest.mark.parametrize(("path", "command"), SET_COMMANDS, ids=[path for path, _ in SET_COMMANDS])
def test_every_set_option_has_the_short_form(path, command):
    """The command's own parser reads ``-s`` as ``--set`` (repeatable), whatever its other parameters."""
    (option,) = [p for p in command.params if "--set" in getattr(p, "opts", ())]
    parser = command.make_parser(command.context_class(command, info_name=path))
    values, _, _ = parser.parse_args(["-s", "a.b=1", "--set", "c=2"])
    assert values[option.name] == ["a.b=1", "c=2"]


GROUPS = {
    name: group for name, group in typer.main.get_command(app).commands.items() if hasattr(group, "commands")
}


def test_a_group_help_that_lists_commands_names_only_real_ones():
    """`m1 --help` shows each group's help: where it lists single words after a colon, they are the group's
    commands (`model: init, export, ...` once listed a command that does not exist)."""
    listed = {}
    for name, group in GROUPS.items():
        _, colon, tail = group.help.splitlines()[0].rpartition(": ")
        words = [w.strip(" .") for w in tail.split(",")]
        if colon and all(re.fullmatch(r"[a-z][a-z-]*", w) for w in words):
            listed[name] = set(words)
    assert {"model", "logic", "swe", "experiment"} <= set(listed)
    assert {name: words - set(GROUPS[name].commands) for name, words in listed.items()} == dict.fromkeys(
        listed, set()
    )


def test_the_readmes_name_only_commands_that_exist():
    docs = [ROOT / "README.md", *ROOT.glob("*/README.md"), *ROOT.glob("*/*/README.md")]
    named = {
        (doc.relative_to(ROOT).as_posix(), group, command)
        for doc in docs
        for group, command in re.findall(r"\bm1 ([a-z][a-z-]*) ([a-z][a-z-]*)", doc.read_text())
        if group in GROUPS
    }
    assert named, "no `m1 <group> <command>` found in the READMEs"
    assert {n for n in named if n[2] not in GROUPS[n[1]].commands} == set()


def test_short_set_reaches_the_config():
    out = invoke("train", "list-stages", "-s", "train.curriculum=m1", "--json")
    assert out.exit_code == 0, out.output
    assert [r["stage"] for r in json.loads(out.output)][0] == "reasoning"


def test_logic_list_shows_reasoning_gym_tasks_when_installed():
    from verifiers.logic.reasoning_gym_adapter import available

    rows = json.loads(invoke("logic", "list", "--json").output)["tasks"]
    rg = [r["name"] for r in rows if r["source"] == "reasoning-gym"]
    assert rg == [f"rg_{name}" for name in available()]
    if not available():
        pytest.skip("reasoning-gym is not installed (extra `logic`)")
    assert len(rg) > 10


def test_data_list_and_show(m1_home):
    store = DatasetStore()
    items = pl.DataFrame(
        [
            {
                "id": "a",
                "source": "s",
                "domain": "math",
                "task": "t",
                "prompt": "p",
                "reference": "1",
                "metadata": "{}",
            }
        ],
        schema=ITEM_COLUMNS,
    )
    bad = items.with_columns(pl.lit("b").alias("id"), pl.lit("empty reference").alias("reason"))
    store.write("x-curated", items, steps=[StepCount("clean", 2, 1, "garbled")], quarantine=bad)
    store.write("x-curated", items)
    listed = json.loads(invoke("data", "list", "--json").output)
    assert [(d["name"], d["version"], d["versions"], d["rows"]) for d in listed] == [
        ("x-curated", 2, [1, 2], 1)
    ]
    shown = invoke("data", "show", "x-curated", "--version", "1", "--quarantine")
    assert shown.exit_code == 0 and "x-curated@v1" in shown.output
    assert "clean" in shown.output and "empty" in shown.output  # the reason of the rejected row
    missing = invoke("data", "show", "nope")
    assert missing.exit_code != 0
