"""Calibration: the pass@k estimator, band selection, and a real run against an HTTP policy."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from flows.logic_calibration import (
    Band,
    CalibrationParams,
    PolicySpec,
    calibrate,
    endpoint_sampler,
    load_bands,
    markdown_report,
    pass_at_k,
    save,
    select_band,
)

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
    policy = PolicySpec(endpoint=oracle_server.url, model="oracle", concurrency=4)
    rows, bands = calibrate(endpoint_sampler(policy), params)

    assert {(r["task"], r["difficulty"]) for r in rows} == {
        (t, d) for t in TASKS for d in range(1, 7)
    }
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
    assert stored["policy"]["endpoint"] == oracle_server.url
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
        ["logic", "calibrate", "--endpoint", oracle_server.url, "--tasks", "lights_out", "--k", "2",
         "--instances", "2"],
    )
    assert out.exit_code == 0, out.output
    assert "lights_out" in out.output
    assert "lights_out" in load_bands()
