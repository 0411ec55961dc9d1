"""Bringing one's own data, as a new user would: a JSONL in another schema, mapped by configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.config import PipelineConfig
from flows.store import DatasetStore
from tests.curricula import short_tiny

M1 = str(Path(sys.executable).with_name("m1"))


def user_file(path: Path, n: int = 30) -> Path:
    rows = [
        {
            "uid": f"u{i}",
            "question": f"A farmer has {i + 3} cows and buys {2 * i + 1} more cows at the market today. How many cows are there now on the farm?",
            "solution": f"\\boxed{{{3 * i + 4}}}",
            "level": 1 + i % 3,
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_sources_are_mapped_and_recorded(prefect_harness, tmp_path):
    from flows.curate.flow import curate_flow

    data = user_file(tmp_path / "mine.jsonl")
    cfg = PipelineConfig.model_validate(
        {
            "name": "byo",
            "home": str(tmp_path / "home"),
            "curate": {"sources": [{"path": str(data), "mapping": {"metadata.difficulty": "level"}}]},
        }
    )
    out = curate_flow(cfg)
    store = DatasetStore(cfg.home)
    curated = store.read("byo-curated")
    assert (
        set(curated["id"]) <= {f"u{i}" for i in range(30)} and curated.height > 20
    )  # the user's rows, by uid
    meta = json.loads(curated["metadata"][0])
    assert meta["difficulty"] in (1, 2, 3) and "level" not in meta
    (recorded,) = out["manifest"]["params"]["source_columns"]
    assert recorded["mapping"] == {
        "metadata.difficulty": "level",
        "id": "uid",
        "prompt": "question",
        "reference": "solution",
    }
    assert sorted(recorded["inferred"]) == ["id", "prompt", "reference"]
    # the bundled generator did not run, so its settings are not recorded as if it had
    assert not set(out["manifest"]["params"]) & {"n_problems", "n_near_duplicates", "seed"}


@pytest.mark.slow
def test_m1_run_trains_on_the_configured_sources_only(tmp_path):
    data = user_file(tmp_path / "mine.jsonl", n=40)
    config = tmp_path / "run.toml"
    config.write_text(
        f"""
name = "byo"
[[curate.sources]]
path = "{data}"
mapping = {{ "metadata.difficulty" = "level" }}
[model]
hidden_size = 32
num_hidden_layers = 2
intermediate_size = 32
num_local_experts = 2
num_experts_per_tok = 1
softmax_every = 2
vocab_size = 300
[train]
curriculum = "{short_tiny()}"
sft_steps = 5
prompts_per_step = 2
group_size = 2
batch_size = 4
max_sampling_rounds = 1
[eval]
n_items = 4
max_new_tokens = 4
[logic]
n_items = 24
[code]
n_problems = 8
tests_per_problem = 3
[swe]
enabled = false
[genrm]
enabled = false
"""
    )
    env = os.environ | {"M1_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    proc = subprocess.run(
        [M1, "run", "-c", str(config)], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if "mine.jsonl: columns " in ln]
    assert set(line.split(": columns ", 1)[1].split(", ")) == {
        "metadata.difficulty <- level",
        "id <- uid (inferred)",
        "prompt <- question (inferred)",
        "reference <- solution (inferred)",
    }
    store = DatasetStore(tmp_path / "home")
    curated = store.read("byo-curated")
    assert set(curated["source"]) == {"mine"}  # nothing from the bundled generator
    samples = (tmp_path / "home" / "runs" / "byo" / "train" / "reasoning" / "samples.jsonl").read_text()
    math = [s for s in map(json.loads, samples.splitlines()) if s["domain"] == "math"]
    assert math and all(s["id"].startswith("u") for s in math)  # the curated domain is the user's


def test_benchmarks_take_a_column_mapping(prefect_harness, tmp_path):
    """A benchmark whose text column is `question` is found by its usual name; an odd name is mapped;
    a file with no text column is one clear error before anything runs."""
    from flows.curate.flow import benchmarks
    from flows.errors import InputError
    from flows.pipeline import preflight

    usual, odd = tmp_path / "usual.jsonl", tmp_path / "odd.jsonl"
    usual.write_text(json.dumps({"question": "What is 40 + 2?", "answer": "42"}) + "\n")
    odd.write_text(json.dumps({"text_of_item": "What is 6 * 7?"}) + "\n")
    cfg = PipelineConfig.model_validate(
        {
            "data": {
                "benchmarks": [
                    {"path": str(usual)},
                    {"path": str(odd), "mapping": {"prompt": "text_of_item"}},
                ]
            }
        }
    )
    got = benchmarks(cfg.data)
    assert got["usual"]["prompt"].to_list() == ["What is 40 + 2?"] and got["usual"][
        "reference"
    ].to_list() == ["42"]
    assert got["odd"]["prompt"].to_list() == ["What is 6 * 7?"]
    bad = PipelineConfig.model_validate(
        {"data": {"benchmarks": [{"path": str(odd)}]}, "swe": {"enabled": False}}
    )
    with pytest.raises(InputError, match=r"benchmark odd .*: no prompt column .*mapping"):
        preflight(bad)
