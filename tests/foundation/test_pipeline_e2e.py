"""The walking skeleton end to end, on a smaller size: every filter removes exactly its planted rows,
training changes the weights with finite losses, and the report lands in the store and in Prefect."""

import json
import math

import polars as pl
import pytest

from flows.config import PipelineConfig
from flows.pipeline import PLANTED_BY_STEP, pipeline
from flows.store import DatasetStore

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
        "sft_steps": 30,
        "rl_steps": 2,
        "dynamic_sampling": False,
        "prompts_per_step": 2,
        "group_size": 4,
        "batch_size": 8,
        "max_new_tokens": 6,
        "max_sampling_rounds": 1,
    },
    "eval": {"n_items": 6, "max_new_tokens": 6},
}


PLANTED_SETTING = {
    "exact": "n_exact_duplicates",
    "near": "n_near_duplicates",
    "leak": "n_benchmark_leaks",
    "unparseable": "n_unparseable",
}


@pytest.mark.slow
def test_skeleton_pipeline_end_to_end(prefect_harness, m1_home):
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
    assert all(json.loads(m)["planted"] is None for m in curated["metadata"])

    manifest = store.manifest("e2e-curated")
    assert [s.step for s in manifest.steps] == list(PLANTED_BY_STEP)

    assert result["weights_changed"] is True
    assert len(result["sft_losses"]) == 30 and all(math.isfinite(x) for x in result["sft_losses"])
    assert len(result["rl_metrics"]) == 2 and all(math.isfinite(m["loss"]) for m in result["rl_metrics"])
    assert 0.0 <= result["pass_rate_before"] <= 1.0 and 0.0 <= result["pass_rate_after"] <= 1.0

    report = (m1_home / "runs" / "e2e" / "report.md").read_text()
    assert "| exact-dedup | 74 | 70 | 4 | 4 |" in report
    assert (m1_home / "runs" / "e2e" / "model" / "model.safetensors").exists()
