"""The walking skeleton end to end, on a smaller size: every filter removes exactly its planted rows,
training changes the weights with finite losses, and the report lands in the store and in Prefect."""

import json
import math

import polars as pl
import pytest

from flows.config import PipelineConfig
from flows.pipeline import PLANTED_BY_STEP, pipeline
from flows.store import DatasetStore
from tests.curricula import short_tiny

SMALL = {
    "name": "e2e",
    "data": {
        "n_problems": 60,
        "n_exact_duplicates": 4,
        "n_near_duplicates": 4,
        "n_benchmark_leaks": 3,
        "n_unparseable": 3,
    },
    "model": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "intermediate_size": 48,
        "num_local_experts": 2,
        "num_experts_per_tok": 1,
        "softmax_every": 2,
        "vocab_size": 320,
    },
    "train": {
        "curriculum": short_tiny(),  # tiny.toml at 4 RL steps a stage (tests/curricula.py)
        "sft_steps": 30,
        "dynamic_sampling": False,
        "prompts_per_step": 2,
        "group_size": 4,
        "batch_size": 8,
        "max_new_tokens": 6,
        "max_sampling_rounds": 1,
    },
    "eval": {"n_items": 6, "max_new_tokens": 6},
    "logic": {"n_items": 28},
    "code": {"n_problems": 8, "tests_per_problem": 3},
    "swe": {"enabled": False},  # the Docker-marked test below runs the DAG with it
    # a judge trained in seconds, which loses to a constant baseline: what is tested is that the DAG serves
    # and uses it, so the gate (tests/genrm/test_judge_gate.py) is off
    "genrm": {
        "gate": False,
        "general_items": 24,
        "train_prompts": 8,
        "eval_prompts": 4,
        "judge_steps": 10,
        "judge_model": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "intermediate_size": 32,
            "softmax_every": 2,
            "vocab_size": 320,
        },
    },
}


PLANTED_SETTING = {
    "exact": "n_exact_duplicates",
    "near": "n_near_duplicates",
    "leak": "n_benchmark_leaks",
    "unparseable": "n_unparseable",
}


@pytest.mark.slow
def test_pipeline_composes_the_real_flows(prefect_harness, m1_home):
    from prefect.artifacts import Artifact

    config = PipelineConfig.model_validate(SMALL)
    result = pipeline(config)

    store = DatasetStore(m1_home)
    curated = store.read("e2e-curated")
    rejected = store.quarantine("e2e-curated")
    planted = rejected.with_columns(
        pl.col("metadata")
        .map_elements(lambda m: json.loads(m)["planted"], return_dtype=pl.String)
        .alias("planted")
    )
    for step, kind in PLANTED_BY_STEP.items():
        removed = planted.filter(pl.col("step") == step)
        assert removed.height == SMALL["data"][PLANTED_SETTING[kind]]
        assert set(removed["planted"].to_list()) == {kind}, f"{step} removed unplanted rows"
    assert curated.height == SMALL["data"]["n_problems"]
    # the DAG ran the curation flow itself: all its steps, clean included
    assert [s.step for s in store.manifest("e2e-curated").steps] == ["clean", *PLANTED_BY_STEP]

    stages = [s["stage"] for s in result["stages"]]
    assert stages == ["reasoning", "general", "length-window"]
    assert stages == [s["stage"] for s in json.loads(_list_stages(config))]
    general = json.loads(
        (m1_home / "runs" / "e2e" / "train" / "general" / "final" / "training.json").read_text()
    )
    assert any(k.startswith("length_bias/general/") for k in general["history"][-1])  # the monitor ran
    assert any(k == "pass/general" for h in general["history"] for k in h)  # judged rewards came back
    for s in result["stages"]:
        assert all(math.isfinite(x) for x in (s["reward_first"], s["reward_last"]))
    assert "val/all" in result["before"] and "val/all" in result["after"]
    assert any("pass-rate filtering: off" in n for n in result["notes"])

    report = (m1_home / "runs" / "e2e" / "report.md").read_text()
    assert "| exact-dedup | 74 | 70 | 4 | 4 |" in report
    assert "| m1-curate | e2e-curated@v1 | 74 | 60 | 14 |" in report
    plots = [p for s in result["stages"] for p in s["plots"]]
    assert len(plots) == 2 * len(stages) + 1  # curves and weights per stage; the general stage's length bias
    assert report.count("data:image/png;base64,") == len(plots) + 1  # and the judge's evaluation
    assert "before training" in report and "# Generative reward model" in report
    assert Artifact.get("run-report-e2e") is not None
    assert (m1_home / "runs" / "e2e" / "train" / stages[-1] / "final" / "model.safetensors").exists()


def _list_stages(config) -> str:
    from flows.curriculum.plan import stage_table

    return json.dumps(stage_table(config))


@pytest.mark.slow
@pytest.mark.docker
def test_pipeline_with_swe_tasks(prefect_harness, m1_home):
    """The SWE subflow in the DAG: tasks from a real repository, validated in containers, a rollout of
    the final policy scored by the repair reward beside the gold patch."""
    config = PipelineConfig.model_validate(
        SMALL | {"name": "swe", "swe": {"repos": ["isodate"], "n_tasks": 1, "eval_rollouts": 1}}
    )
    result = pipeline(config)
    assert any(s["dataset"].startswith("swe-swe@") for s in result["subflows"])
    report = (m1_home / "runs" / "swe" / "report.md").read_text()
    assert "## SWE repair rollouts" in report
    (row,) = [line for line in report.splitlines() if line.startswith("| isodate")]
    assert row.rstrip().endswith("| 1.0 |")  # the gold patch resolves the task in its container
