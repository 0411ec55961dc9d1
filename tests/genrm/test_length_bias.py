"""Length bias: shaping/clipping/normalisation units, and real `general` curriculum stages (run_stage on a
store of general items, a tiny model) scored by a pairwise judge that prefers longer responses, served on
loopback: the monitor and shaping wired into the stage (fast), an alarm that stops it (fast), and the run
where the alarm fires and shaping flattens the length (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from flows.config import LengthBiasConfig
from flows.curriculum.report import plot_length_bias
from flows.curriculum.settings import length_bias_settings
from m1model.rl.length_bias import LengthBias, LengthSeeking, slope, spearman
from tests.genrm.length_stage import general_stage
from tests.genrm.scripted import prefers_longer, scripted_judge

ITEM = {"domain": "general", "reference": "one two three four", "prompt": "say it"}


def _words(ids):
    return " ".join(map(str, ids))


def test_shaping_penalises_only_past_slack_times_the_reference():
    cfg = length_bias_settings(LengthBiasConfig(shaping=True, shaping_coef=0.5, shaping_slack=1.5))
    lb = LengthBias(cfg, encode=lambda s: s.split())  # the reference is 4 tokens: 6 are free
    fn = lb.wrap(lambda items, responses: [1.0] * len(items))
    out = fn([ITEM] * 4, [[1] * 3, [1] * 6, [1] * 9, [1] * 30])
    assert out == pytest.approx([1.0, 1.0, 0.75, 0.5])
    math_item = ITEM | {"domain": "math"}
    assert fn([math_item], [[1] * 30]) == [1.0]  # rule-verified domains are left alone


def test_group_normalisation_then_clipping():
    cfg = length_bias_settings(LengthBiasConfig(group_normalize=True, clip_min=-1.0, clip_max=1.0))
    fn = LengthBias(cfg).wrap(lambda items, responses: [0.0, 0.0, 0.0, 4.0, 1.0, 2.0])
    a, b = dict(ITEM), dict(ITEM)
    out = fn([a] * 4 + [b] * 2, [[1]] * 6)
    assert out[:3] == pytest.approx([-np.sqrt(1 / 3)] * 3, abs=1e-4) and out[3] == 1.0  # clipped from sqrt(3)
    assert out[4:] == pytest.approx([-1.0, 1.0], abs=1e-4)


class _Trainer:  # what the hook reads: the step counter and the pool
    def __init__(self):
        self.step = 0
        self.pool = None


def test_alarm_fires_when_length_grows_without_success_and_stop_raises():
    lb = LengthBias(
        length_bias_settings(LengthBiasConfig(window=3, on_alarm="stop")),
        decode=_words,
        success=lambda items, texts: [0.0] * len(items),
    )
    fn, trainer = lb.wrap(lambda items, responses: [len(r) / 10 for r in responses]), _Trainer()
    for step in range(2):
        fn([ITEM] * 4, [[1] * (5 + step * 3 + k) for k in range(4)])
        m = lb.hook(trainer, None)
        trainer.step += 1
        assert "length_bias/general/alarm" not in m and m["length_bias/general/corr"] == pytest.approx(1.0)
    fn([ITEM] * 4, [[1] * (11 + k) for k in range(4)])
    with pytest.raises(LengthSeeking, match="length seeking in domain 'general'"):
        lb.hook(trainer, None)


def test_no_alarm_when_success_grows_with_length():
    lb = LengthBias(
        length_bias_settings(LengthBiasConfig(window=3)),
        decode=_words,
        success=lambda items, texts: [len(t) > 20 for t in texts],
    )
    fn, trainer = lb.wrap(lambda items, responses: [len(r) / 10 for r in responses]), _Trainer()
    for step in range(5):
        fn([ITEM] * 4, [[1] * (4 + step * 3 + k) for k in range(4)])
        m = lb.hook(trainer, None)
        trainer.step += 1
    assert m["length_bias/general/success_trend"] > 0 and m["length_bias/general/alarm"] == 0


def test_the_monitor_counts_how_the_judge_orders_each_prompts_responses_against_the_rule():
    """Within a prompt's group only: two prompts, the second's responses all judged higher, must not count
    as the judge agreeing with the rule across prompts."""
    lb = LengthBias(
        length_bias_settings(LengthBiasConfig()),
        decode=_words,
        success=lambda items, texts: [float(t.startswith("1")) for t in texts],
    )
    judged = [0.9, 0.1, 0.5, 0.5, 1.0, 1.0, 0.2, 0.8]  # prompt a: right, tied; prompt b: tied, wrong
    fn = lb.wrap(lambda items, responses: judged)
    a, b = dict(ITEM), dict(ITEM)
    fn([a] * 4 + [b] * 4, [[1], [2], [1], [2], [1], [2], [1], [2]])
    m = lb.hook(_Trainer(), None)
    # a (rule: 1 0 1 0): 0.9 > 0.1, 0.9 > 0.5, 0.5 > 0.1 right, 0.5 = 0.5 tied
    # b (rule: 1 0 1 0): 1.0 = 1.0 tied, 1.0 > 0.8 right, 0.2 < 1.0 and 0.2 < 0.8 wrong
    assert (m["length_bias/general/pairs_right"], m["length_bias/general/pairs_wrong"]) == (4, 2)
    assert m["length_bias/general/pairs_tied"] == 2
    no_rule = LengthBias(length_bias_settings(LengthBiasConfig()))
    no_rule.wrap(lambda items, responses: judged)([a] * 8, [[1]] * 8)
    assert "length_bias/general/pairs_right" not in no_rule.hook(_Trainer(), None)


def test_spearman_edge_cases():
    assert spearman([1, 1, 1], [1, 2, 3]) == 0.0
    assert spearman([1, 2, 3, 4], [2, 4, 6, 9]) == pytest.approx(1.0)


# -- inside a stage ------------------------------------------------------------------------------------


def _run(folder, url, monkeypatch, **kwargs):
    from flows.config import load_config
    from flows.curriculum.stage import run_stage

    monkeypatch.setenv("M1_GENRM_URL", url)
    return run_stage(load_config(general_stage(folder, **kwargs)), "general")


def test_inside_a_stage_the_monitor_watches_the_judged_domain_and_shaping_acts_on_the_reward(
    tmp_path, monkeypatch
):
    """A few steps of a real general stage whose judge prefers longer texts: the monitor's metrics every
    step, the shaped reward below the judge's wherever responses run past the reference's length, the
    stage's note and plot, and validation on the rule grade (not on the judge)."""
    with scripted_judge(prefers_longer) as (url, script):
        result = _run(
            tmp_path,
            url,
            monkeypatch,
            steps=3,
            sft_steps=5,
            prompts_per_step=4,
            length_bias={"window": 2, "shaping": True, "shaping_coef": 4.0, "shaping_slack": 1.0},
        )
    p = "length_bias/general"
    assert [h["step"] for h in result.history] == [1.0, 2.0, 3.0]
    for h in result.history:
        assert {f"{p}/length", f"{p}/reward_raw", f"{p}/reward", f"{p}/corr", f"{p}/corr_raw"} <= set(h)
        # five SFT steps leave answers far longer than a reference: shaping takes up to 4 off each
        assert h[f"{p}/reward"] < h[f"{p}/reward_raw"] and h[f"{p}/length_ratio"] > 1
    assert f"{p}/alarm" in result.history[-1] and f"{p}/length_trend" in result.history[-1]
    (note,) = [n for n in result.notes if n.startswith("length-bias monitor (general)")]
    assert "x the reference's" in note and "rule-verified success" in note
    assert result.plots[-1].endswith("length_bias.png")
    assert set(result.validation["end"]) == {"val/general", "val/all"}
    # the judge was asked only for training rewards: validation scores the rule grade
    assert len(script.messages) == 2 * sum(int(h["groups_sampled"]) * 4 for h in result.history)


def test_inside_a_stage_an_alarm_with_on_alarm_stop_ends_the_stage_with_its_reason(tmp_path, monkeypatch):
    """Thresholds any step meets (their arithmetic is tested above and in tests/rl/test_length_growth.py):
    the alarm fires as soon as the window is full, and `stop` ends the stage there, with the reason."""
    always = {
        "window": 2,
        "length_growth": -10.0,
        "success_growth": 10.0,
        "min_corr": -2.0,
        "alarm_ratio": 0.0,
        "on_alarm": "stop",
    }
    with scripted_judge(prefers_longer) as (url, _):
        result = _run(
            tmp_path, url, monkeypatch, steps=4, sft_steps=5, prompts_per_step=4, length_bias=always
        )
    assert len(result.history) == 1  # step 2's hook raised before its step was recorded
    (warning,) = result.warnings
    assert warning.startswith("length seeking in domain 'general' at step 2") and "on_alarm = stop" in warning


STEPS = 12
ALARM_WITHIN = 10  # the stated bound: the biased judge's alarm fires by this step


def growth(lengths: list[float]) -> float:
    """From the mean of the first four steps to the mean of the last four."""
    return float(np.mean(lengths[-4:]) - np.mean(lengths[:4]))


@pytest.mark.slow
def test_in_a_general_stage_a_length_preferring_judge_trips_the_alarm_and_shaping_flattens_the_length(
    tmp_path, monkeypatch
):
    """The one run where the monitor fires: a `general` stage trained on a judge that prefers the longer
    text (the constraint rules off, so the judge alone scores), then the same stage with shaping."""
    common = {"steps": STEPS, "sft_steps": 200}
    with scripted_judge(prefers_longer) as (url, _):
        biased = _run(tmp_path / "biased", url, monkeypatch, length_bias={"window": 4}, **common)
        shaped = _run(
            tmp_path / "shaped",
            url,
            monkeypatch,
            length_bias={"window": 4, "shaping": True, "shaping_coef": 4.0, "shaping_slack": 1.0},
            **common,
        )
    p = "length_bias/general"
    alarms = [int(h["step"]) for h in biased.history if h.get(f"{p}/alarm")]
    lengths = [h[f"{p}/length"] for h in biased.history]
    assert alarms and alarms[0] <= ALARM_WITHIN, (alarms, lengths)
    assert lengths[-1] > 1.3 * lengths[0], lengths
    success = [h[f"{p}/success"] for h in biased.history]
    assert np.mean(success[-4:]) <= np.mean(success[:4]) + 0.05  # longer, not more often right
    assert any(n.startswith("length-bias monitor (general)") and "alarm steps" in n for n in biased.notes)

    shaped_lengths = [h[f"{p}/length"] for h in shaped.history]
    shaped_alarms = [int(h["step"]) for h in shaped.history if h.get(f"{p}/alarm")]
    # shaping bites only past the reference's length, so one overshoot may still alarm before the penalty
    # pulls the length back; after that the shaped stage stays quiet, the biased one does not
    assert len(shaped_alarms) < len(alarms) / 2 and all(s <= STEPS // 2 for s in shaped_alarms), (
        shaped_alarms,
        alarms,
        shaped_lengths,
    )
    assert slope(lengths) / np.mean(lengths) > 0.05, lengths
    assert growth(shaped_lengths) < growth(lengths) / 2, (lengths, shaped_lengths)
    assert np.mean(shaped_lengths[-4:]) < 0.6 * np.mean(lengths[-4:]), (lengths, shaped_lengths)
    png = next(p for p in biased.plots if p.endswith("length_bias.png"))
    assert plot_length_bias(biased.history, tmp_path / "length.png").stat().st_size > 10_000 and png
