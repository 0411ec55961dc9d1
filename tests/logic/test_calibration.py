"""Calibration: the pass@k estimator, band selection, and a real run against an HTTP policy."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from flows.config import EndpointConfig, PolicyConfig
from flows.logic_calibration import (
    Band,
    CalibrationParams,
    calibrate,
    load_bands,
    markdown_report,
    pass_at_k,
    save,
    select_band,
)
from flows.policy import make_sampler
from flows.store import DatasetStore

TASKS = ["lights_out", "n_queens"]


@pytest.mark.parametrize(("n", "c", "k"), [(4, 0, 1), (4, 1, 1), (5, 2, 3), (6, 3, 6), (8, 1, 4)])
def test_pass_at_k_matches_enumerating_every_k_subset(n, c, k):
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    exact = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
    assert math.isclose(pass_at_k(n, c, k), exact)


def test_pass_at_k_rejects_impossible_counts():
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_band_runs_from_first_learnable_level_to_last_solvable_level():
    cells = {1: (1.0, 1.0), 2: (0.75, 1.0), 3: (0.3, 0.8), 4: (0.1, 0.4), 5: (0.0, 0.0)}
    assert select_band(cells) == Band(3, 4, select_band(cells).reason)


def test_band_skips_a_learnable_level_only_when_it_is_not_the_lowest():
    cells = {1: (0.4, 1.0), 2: (0.6, 1.0), 3: (0.2, 0.5), 4: (0.0, 0.0), 5: (0.05, 0.2)}
    band = select_band(cells)
    assert (band.low, band.high) == (1, 5)


def test_band_for_a_task_always_solved_is_its_hardest_level():
    band = select_band({1: (1.0, 1.0), 2: (0.9, 1.0), 3: (0.5, 1.0)})
    assert (band.low, band.high) == (3, 3)


def test_no_band_for_a_task_never_solved():
    band = select_band({1: (0.0, 0.0), 2: (0.0, 0.0)})
    assert (band.low, band.high) == (None, None)
    assert "never" in band.reason


def test_calibration_against_an_http_policy(oracle_server, m1_home):
    params = CalibrationParams(tasks=TASKS, k=4, instances=3)
    oracle_server.load(TASKS, params.instances)
    policy = PolicyConfig(endpoint=EndpointConfig(url=oracle_server.url, model="oracle", concurrency=4))
    rows, bands = calibrate(make_sampler(policy), params)

    assert {(r["task"], r["difficulty"]) for r in rows} == {(t, d) for t in TASKS for d in range(1, 7)}
    for row in rows:
        assert row["samples"] == params.k * params.instances
        if row["difficulty"] == 1:
            assert row["pass_rate"] == 1.0
        if row["difficulty"] >= 5:  # the oracle never answers correctly there
            assert row["pass_rate"] == 0.0 and row["pass_at_k"] == 0.0
    for task, band in bands.items():
        mine = {r["difficulty"]: r for r in rows if r["task"] == task}
        assert band.low is not None and 2 <= band.low <= band.high <= 4
        assert 0 < mine[band.low]["pass_rate"] < 0.5
        assert all(not 0 < mine[d]["pass_rate"] < 0.5 for d in range(1, band.low))
        assert mine[band.high]["pass_at_k"] > 0

    result = save(rows, bands, params, policy)
    assert load_bands() == bands
    stored = json.loads((m1_home / "logic" / "bands.json").read_text())
    assert stored["policy"]["endpoint"]["url"] == oracle_server.url
    png = (m1_home / "logic" / "calibration_heatmap.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert result["dataset"] == "logic_calibration@v1"
    report = markdown_report(rows, bands, params.k, m1_home / "logic" / "calibration_heatmap.png")
    assert "| n_queens |" in report and "data:image/png;base64," in report


@pytest.mark.slow
def test_calibration_flow_and_cli(oracle_server, prefect_harness, m1_home):
    from typer.testing import CliRunner

    from flows.cli import app

    oracle_server.load(["lights_out"], 2)
    out = CliRunner().invoke(
        app,
        [
            "logic",
            "calibrate",
            "--endpoint",
            oracle_server.url,
            "--tasks",
            "lights_out",
            "--k",
            "2",
            "--instances",
            "2",
            "--difficulties",
            "1,2,5",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "lights_out" in out.output
    band = load_bands()["lights_out"]
    assert (band.low, band.high) == (2, 2)  # the oracle always solves level 1 and never level 5
    rates = DatasetStore().read("logic_calibration")
    assert sorted(rates["difficulty"].to_list()) == [1, 2, 5]


@pytest.mark.slow  # importing transformers/torch and sampling dominate: ~10 s
def test_calibration_with_an_m1model_checkpoint(tmp_path):
    """A real (untrained, tiny) m1model policy sampled through m1model.Engine end to end."""
    import torch

    from m1model import M1Config, M1ForCausalLM, train_tokenizer
    from verifiers.logic import get_task

    task = get_task("lights_out")
    corpus = [task.generate(d, s).prompt for d in (1, 2) for s in range(3)] * 4
    tok = train_tokenizer(corpus, vocab_size=300)
    torch.manual_seed(0)
    config = M1Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        block_size=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    M1ForCausalLM(config).save_pretrained(tmp_path / "ckpt", tokenizer=tok)

    policy = PolicyConfig(checkpoint=str(tmp_path / "ckpt"), max_tokens=8)
    params = CalibrationParams(tasks=["lights_out"], difficulties=[1, 2], k=2, instances=2)
    rows, bands = calibrate(make_sampler(policy), params)
    assert [(r["difficulty"], r["samples"]) for r in rows] == [(1, 4), (2, 4)]
    assert all(0.0 <= r["pass_rate"] <= 1.0 and 0.0 <= r["pass_at_k"] <= 1.0 for r in rows)
    cells = {r["difficulty"]: (r["pass_rate"], r["pass_at_k"]) for r in rows}
    assert bands["lights_out"] == select_band(cells)


def test_checkpoint_policy_needs_a_checkpoint_folder(tmp_path):
    from flows.errors import InputError

    with pytest.raises(InputError, match="no config.json"):
        make_sampler(PolicyConfig(checkpoint=str(tmp_path))).sample(["a prompt"], 1)
