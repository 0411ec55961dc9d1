from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.bench import app


@pytest.mark.slow
def test_bench_rl_times_the_trainers_in_phases_against_trl():
    pytest.importorskip("trl")
    args = [
        "rl",
        "--batches",
        "1",
        "--rounds",
        "1",
        "--prompts",
        "2",
        "--group-size",
        "2",
        "--max-new-tokens",
        "3",
    ]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250", "M1_BENCH_LOAD_TOLERANCE": "100"})
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): line.split("│")
        for line in result.output.splitlines()
        if line.count("│") > 6
    }
    # the prompt-per-response row shows what running each group's prompt once saves
    assert set(rows) == {"TRL GRPOTrainer", "m1model, prompt per response", "m1model RLTrainer"}
    assert rows["TRL GRPOTrainer"][7].strip() == "1.00x"  # the baseline against itself, same run
    for name in ("m1model, prompt per response", "m1model RLTrainer"):
        assert rows[name][7].strip().endswith("x")
        assert rows[name][3].strip().startswith("0.000")  # pi_old comes with the sampled tokens
    assert "machine load at start" in result.output


def test_bench_rl_rejects_uneven_minibatches():
    result = CliRunner().invoke(app, ["rl", "--prompts", "3", "--group-size", "2", "--updates", "4"])
    assert result.exit_code != 0 and "must divide" in str(result.exception)


def test_the_prompt_per_response_row_computes_the_same_log_probs():
    """The bench's row without prompt sharing does the same work as the trainer's `group_logprobs`."""
    import torch

    from flows.bench.rl import per_response_logprobs
    from m1model.rl.rollout import Group, collate
    from tests.model.conftest import TINY_CONFIGS, tiny_model

    model = tiny_model(**TINY_CONFIGS["lightning_prefix_top2"])
    groups = [
        Group(0, [5, 6, 7, 8], [[10, 11], [12]], [[-1.0, -1.0], [-1.0]], ["stop"] * 2, [1.0, 0.0]),
        Group(1, [9], [[13, 14, 15], [16, 17]], [[-1.0] * 3, [-1.0] * 2], ["stop"] * 2, [0.0, 1.0]),
    ]
    d = collate(groups, normalize_std=False)
    layout = (d.prompt_ids, d.prompt_mask, d.response_ids, d.response_mask, d.group_index)
    ours, ours_entropy = model.group_logprobs(*layout, return_entropy=True)
    theirs, theirs_entropy = per_response_logprobs(model)(*layout, return_entropy=True)
    torch.testing.assert_close(theirs, ours, atol=1e-4, rtol=0)
    torch.testing.assert_close(theirs_entropy, ours_entropy, atol=1e-4, rtol=0)
    assert bool((ours[d.response_mask == 0] == 0).all()) and bool((ours[d.response_mask > 0] < 0).all())
