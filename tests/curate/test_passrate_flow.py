"""The pass-rate filter as the DAG runs it: over datasets already in the store, each filtered into a new
version that names the version it came from, with the policy an endpoint or the run's SFT model."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.config import PipelineConfig
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore, StepCount

# How many of k=4 samples the scripted policy gets right, per prompt: 4 (too easy), 2 (kept), 0 (too hard).
SOLVED = {"What is 2 + 2?": 4, "What is 3 + 4?": 2, "What is 9 * 9?": 0}
ANSWERS = {"What is 2 + 2?": "4", "What is 3 + 4?": "7", "What is 9 * 9?": "81"}


def items() -> pl.DataFrame:
    rows = [
        {
            "id": f"q{i}",
            "source": "t",
            "domain": "math",
            "task": "arith",
            "prompt": p,
            "reference": f"\\boxed{{{a}}}",
            "metadata": "{}",
        }
        for i, (p, a) in enumerate(ANSWERS.items())
    ]
    return pl.DataFrame(rows, schema=ITEM_COLUMNS)


def policy(body: dict) -> list[str]:
    prompt = body["messages"][-1]["content"].strip()
    return [f"\\boxed{{{ANSWERS[prompt] if i < SOLVED[prompt] else 'no'}}}" for i in range(body["n"])]


@pytest.mark.slow
def test_pass_rate_flow_filters_into_a_new_version(prefect_harness, tmp_path, openai_server):
    from flows.curate.flow import pass_rate_flow
    from flows.curriculum.plan import base_refs

    url, seen = openai_server(policy)
    cfg = PipelineConfig.model_validate(
        {
            "name": "pr",
            "home": str(tmp_path / "home"),
            "curate": {
                "pass_rate": {"enabled": True, "k": 4, "policy": {"endpoint": {"url": url, "model": "p"}}}
            },
        }
    )
    store = DatasetStore(cfg.home)
    store.write("pr-curated", items(), steps=[StepCount("clean", 3, 3, "")])
    out = pass_rate_flow(cfg, ["pr-curated"])
    assert store.read("pr-curated")["id"].to_list() == ["q1"]
    manifest = store.manifest("pr-curated")
    assert manifest.version == 2 and manifest.params["filtered_from"] == "pr-curated@v1"
    assert [s.step for s in manifest.steps] == ["clean", "pass-rate"]
    reasons = dict(store.quarantine("pr-curated").select("id", "reason").iter_rows())
    assert reasons["q0"].startswith("too easy") and reasons["q2"].startswith("too hard")
    assert all(body["n"] == 4 for body in seen)
    # the SFT model the filter used is not made stale by the filtered version
    assert base_refs(store, [manifest.ref]) == ["pr-curated@v1"]
    # a rerun resumes from cache: the policy is not asked again
    asked = len(seen)
    store.write("pr-curated", store.read("pr-curated", 1))  # the same items as before, as v3
    again = pass_rate_flow(cfg, ["pr-curated"])
    assert len(seen) == asked and {s for _, s in again["tasks"]} == {"Cached"}
    assert out["manifests"]["pr-curated"]["rows"] == 1


@pytest.mark.slow
def test_the_default_policy_is_a_checkpoint_sampled_in_process(prefect_harness, tmp_path):
    """In `m1 run` the policy is the SFT warm start: a real m1model checkpoint through the engine."""
    import torch

    from flows.curate.flow import pass_rate_flow
    from flows.curriculum.prompts import answer_text, prompt_text
    from m1model import M1Config, M1ForCausalLM, train_tokenizer

    rows = items().to_dicts()
    tok = train_tokenizer([prompt_text(r) + answer_text(r) for r in rows] * 10, vocab_size=300)
    torch.manual_seed(0)
    config = M1Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    M1ForCausalLM(config).save_pretrained(tmp_path / "base", tokenizer=tok)
    cfg = PipelineConfig.model_validate(
        {
            "name": "pr",
            "home": str(tmp_path / "home"),
            "curate": {"pass_rate": {"enabled": True, "k": 2, "policy": {"max_tokens": 4}}},
        }
    )
    store = DatasetStore(cfg.home)
    store.write("pr-curated", items())
    out = pass_rate_flow(cfg, ["pr-curated"], default_policy=str(tmp_path / "base"))
    rates = out["manifests"]["pr-curated"]
    assert rates["version"] == 2 and rates["params"]["filtered_from"] == "pr-curated@v1"
    removed = store.quarantine("pr-curated")
    assert removed.height + store.read("pr-curated").height == 3  # every item judged, none lost
    assert all("pass rate" in r for r in removed["reason"])
    assert json.loads(json.dumps(rates))["steps"][-1]["step"] == "pass-rate"


@pytest.mark.slow
def test_pass_rate_flow_on_dask_equals_the_local_run(prefect_harness, dask_cluster, tmp_path, openai_server):
    """The same filter with its shards on 3 Dask worker processes: the same rows, pass rates, quarantine
    reasons and step counts as on local threads (the workers call the policy endpoint themselves)."""
    from flows.curate.flow import pass_rate_flow

    url, seen = openai_server(policy)
    outputs = {}
    for kind in ("local", "dask"):
        runner = {"kind": kind, "shards": 3} | ({"dask_address": dask_cluster} if kind == "dask" else {})
        cfg = PipelineConfig.model_validate(
            {
                "name": "pr",
                "home": str(tmp_path / kind),
                "runner": runner,
                "curate": {
                    "pass_rate": {"enabled": True, "k": 4, "policy": {"endpoint": {"url": url, "model": "p"}}}
                },
            }
        )
        store = DatasetStore(cfg.home)
        store.write("pr-curated", items())
        before = _dask_transitions(dask_cluster)
        out = pass_rate_flow(cfg, ["pr-curated"])
        assert {state for _, state in out["tasks"]} == {"Completed"} and len(out["tasks"]) == 3
        assert (_dask_transitions(dask_cluster) > before) == (kind == "dask")  # ran on the cluster
        outputs[kind] = (
            store.read("pr-curated"),
            store.quarantine("pr-curated").drop("step"),
            [(s.step, s.rows_in, s.rows_out, s.reason) for s in store.manifest("pr-curated").steps],
        )
    local, dask = outputs["local"], outputs["dask"]
    assert local[0]["id"].to_list() == ["q1"]
    assert local[0].equals(dask[0]) and local[1].equals(dask[1]) and local[2] == dask[2]
    assert len(seen) == 2 * 3  # every prompt asked once per run: nothing skipped or repeated on Dask


def _dask_transitions(address: str) -> int:
    from distributed import Client

    with Client(address) as client:
        return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
