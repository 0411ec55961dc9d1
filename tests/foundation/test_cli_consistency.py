"""CLI habits that hold across commands: `-s` wherever `--set` is, JSON for scripts, the store listed."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore, StepCount

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), terminal_width=200)


@pytest.mark.parametrize(
    "command",
    [
        ["run"],
        ["curate", "run"],
        ["train", "stage", "x"],
        ["train", "curriculum"],
        ["train", "list-stages"],
        ["model", "init"],
    ],
)
def test_every_set_option_has_the_short_form(command):
    out = invoke(*command, "--help")
    assert out.exit_code == 0
    assert "-s" in out.output and "--set" in out.output


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
