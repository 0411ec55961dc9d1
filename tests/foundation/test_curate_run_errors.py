"""`m1 curate run` on bad input: one line, exit 2, in its first seconds (before the Prefect server
starts, so nothing is written under M1_HOME, Prefect's database included)."""

from __future__ import annotations

import json
import sys

import pytest

from flows.cli import main

GOOD = {"question": "What is 40 + 2?", "answer": "42"}


@pytest.mark.parametrize(
    ("source", "overrides", "expected"),
    [
        ({"path": "{d}/missing.jsonl"}, [], "missing.jsonl: file not found"),
        (
            {"path": "{d}/good.jsonl", "mapping": {"prompt": "nope"}},
            [],
            "good.jsonl: mapping prompt=nope: no column 'nope' (has: question, answer)",
        ),
        (
            {"path": "{d}/good.jsonl", "preset": "gsm8k"},
            [],
            "good.jsonl: line 1: answer: no final '#### <answer>'",
        ),
        (
            {"path": "{d}/good.jsonl", "preset": "gsm9k"},
            [],
            "curate.sources.0.preset: Value error, unknown preset",
        ),
        ({"path": "{d}/good.jsonl"}, ["curate.pass_rate.enabled=true"], "curate.pass_rate needs a policy"),
        (
            {"path": "{d}/good.jsonl"},
            ["data.benchmarks=[{path: {d}/bench.jsonl}]"],
            "bench.jsonl: file not found",
        ),
        ({"path": "{d}/good.jsonl"}, ["curate.sft_path={d}/sft.jsonl"], "sft.jsonl: file not found"),
        (
            {"path": "{d}/good.jsonl"},
            ["curate.minhash.treshold=0.5"],
            "override 'curate.minhash.treshold=0.5'",
        ),
    ],
    ids=["missing", "mapping", "preset-row", "preset-name", "pass-rate", "benchmark", "sft", "override"],
)
def test_bad_curation_input_is_one_line_before_prefect(
    tmp_path, m1_home, monkeypatch, capsys, source, overrides, expected
):
    (tmp_path / "good.jsonl").write_text(json.dumps(GOOD) + "\n")
    lines = ["[[curate.sources]]"]
    for key, value in source.items():
        if isinstance(value, dict):  # an inline table
            value = "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
        else:
            value = json.dumps(value.replace("{d}", str(tmp_path)))
        lines.append(f"{key} = {value}")
    config = tmp_path / "run.toml"
    config.write_text("\n".join(lines) + "\n")
    args = [a for o in overrides for a in ("-s", o.replace("{d}", str(tmp_path)))]
    monkeypatch.setattr(sys, "argv", ["m1", "curate", "run", "-c", str(config), *args])
    with pytest.raises(SystemExit) as done:
        main()
    err = capsys.readouterr().err
    assert done.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and expected in err, err
    assert not m1_home.exists()
