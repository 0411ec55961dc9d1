"""Pass-rate filtering against a real HTTP endpoint and the in-process m1model engine."""

from __future__ import annotations

import polars as pl
import pytest

from flows.curate.passrate import passrate_filter
from flows.policy import EndpointSampler
from verifiers.endpoint import Endpoint

ITEMS = pl.DataFrame(
    {
        "id": ["easy", "medium", "hard", "unicode"],
        "prompt": ["1+1?", "2+2?", "3+3?", "Ωμέγα: 5+5?"],
        "answer": ["2", "4", "6", "10"],
    }
)
# How many of the k samples the 'policy' answers correctly, per prompt.
SOLVED = {"1+1?": 8, "2+2?": 4, "3+3?": 0, "Ωμέγα: 5+5?": 2}


def policy(prompt: str, n: int) -> list[str]:
    right = ITEMS.filter(pl.col("prompt") == prompt)["answer"][0]
    return [
        f"Thinking... the answer is \\boxed{{{right if i < SOLVED[prompt] else 'wrong'}}}" for i in range(n)
    ]


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_passrate_keeps_items_strictly_between_bounds(openai_server, api):
    url, seen = openai_server(
        lambda b: policy(b["messages"][-1]["content"], b["n"]),
        lambda b: [policy(p, b["n"]) for p in b["prompt"]],
    )
    sampler = EndpointSampler(Endpoint(url=url, model="policy"), api=api, max_tokens=64)
    res = passrate_filter(ITEMS, sampler, k=8, low=0.0, high=0.9)
    assert res.kept["id"].to_list() == ["medium", "unicode"]
    assert res.kept["pass_rate"].to_list() == [0.5, 0.25]
    assert dict(zip(res.removed["id"], res.removed["reason"], strict=True)) == {
        "easy": "too easy: pass rate 1.0 >= 0.9 (8 samples)",
        "hard": "too hard: pass rate 0.0 <= 0.0 (8 samples)",
    }
    assert res.rates["correct"].to_list() == [8, 4, 0, 2]
    assert all(body["n"] == 8 for body in seen)


@pytest.mark.slow
def test_engine_sampler_runs_the_bundled_model_in_process(tmp_path):
    torch = pytest.importorskip("torch")
    from flows.policy import EngineSampler
    from m1model import M1Config, M1ForCausalLM, train_tokenizer

    tok = train_tokenizer(["what is one plus one? the answer is 2"] * 20, vocab_size=300)
    torch.manual_seed(0)
    cfg = M1Config(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        intermediate_size=32,
        num_local_experts=2,
        num_experts_per_tok=1,
    )
    M1ForCausalLM(cfg).save_pretrained(tmp_path / "ckpt", tokenizer=tok)
    sampler = EngineSampler(tmp_path / "ckpt", max_tokens=6, seed=1)
    samples = sampler.sample(["1+1?", "2+2?"], k=3)
    assert [len(s) for s in samples] == [3, 3] and all(isinstance(t, str) for s in samples for t in s)
    res = passrate_filter(ITEMS.head(2), sampler, k=3)
    assert res.rates["samples"].to_list() == [3, 3]
    assert res.count.rows_in == 2 and res.kept.height + res.removed.height == 2
