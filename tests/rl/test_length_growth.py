"""The length-bias monitor's growth measure (m1model/rl/length_bias.py): "length growth" is the
least-squares slope of the per-step mean response length over the last ``window`` steps, divided by the
mean of those step means (relative growth per step), and the alarm needs it strictly above
``length_growth``. Each test holds the alarm's other conditions (flat success, reward-length correlation
1, no reference length) so that the growth alone decides."""

from __future__ import annotations

import pytest

from m1model.rl.length_bias import LengthBias, LengthBiasSettings, slope

ITEM = {"domain": "general", "prompt": "say it"}


def settings(**change) -> LengthBiasSettings:
    base = dict(
        enabled=True, domains=["general"], window=3, length_growth=0.05, success_growth=0.01, min_corr=0.1,
        alarm_ratio=1.5, on_alarm="log", weight_factor=0.5, shaping=False, shaping_coef=0.0,
        shaping_slack=1.5, group_normalize=False, clip_min=None, clip_max=None,
    )  # fmt: skip
    return LengthBiasSettings(**(base | change))


class _Trainer:
    step = 0
    pool = None
    step_hooks: list = []


def monitor(means: list[float], **change) -> list[dict[str, float]]:
    """The hook's metrics after each step whose responses average ``means[i]`` tokens (four responses
    spread around the mean, rewarded by their length: correlation 1; success always 0)."""
    lb = LengthBias(settings(**change), decode=str, success=lambda items, texts: [0.0] * len(items))
    fn = lb.wrap(lambda items, responses: [len(r) / 100 for r in responses])
    out = []
    for mean in means:
        fn([ITEM] * 4, [[1] * (int(mean) + d) for d in (-3, -1, 1, 3)])
        out.append(lb.hook(_Trainer(), None))
    return out


def test_slope_is_the_least_squares_slope_per_step():
    assert slope([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert slope([0.0, 30.0, 0.0, 30.0]) == pytest.approx(6.0)  # the fit, not (last - first) / (n - 1) = 10
    assert slope([5.0]) == 0.0


@pytest.mark.parametrize(
    ("means", "alarm"),
    [
        ([94, 100, 106], True),  # +6 tokens a step on a mean of 100: 6% > 5%
        ([96, 100, 104], False),  # 4% <= 5%
    ],
)
def test_the_alarm_needs_relative_growth_above_the_threshold(means, alarm):
    m = monitor(means)[-1]
    assert m["length_bias/general/length_trend"] == pytest.approx((means[2] - means[0]) / 2 / means[1])
    assert m["length_bias/general/alarm"] == float(alarm)


def test_growth_is_relative_to_the_windows_mean_not_its_first_step():
    # +5 a step: 5% of the mean (100) but 5.26% of the first step (95).
    m = monitor([95, 100, 105], length_growth=0.051)[-1]
    assert m["length_bias/general/length_trend"] == pytest.approx(0.05)
    assert m["length_bias/general/alarm"] == 0.0


def test_growth_is_relative_not_in_tokens():
    # +20 tokens a step is 2% of 1000-token responses: no alarm at 5%.
    m = monitor([980, 1000, 1020])[-1]
    assert (
        m["length_bias/general/length_trend"] == pytest.approx(0.02) and m["length_bias/general/alarm"] == 0
    )


def test_growth_is_fitted_over_the_last_window_steps_only():
    steps = monitor([20, 100, 100, 100])  # a jump, then flat for a whole window
    assert "length_bias/general/alarm" not in steps[1]  # fewer steps than the window: no trend yet
    assert steps[2]["length_bias/general/alarm"] == 1.0  # 20, 100, 100 grows
    assert steps[3]["length_bias/general/length_trend"] == pytest.approx(0.0, abs=1e-9)
    assert steps[3]["length_bias/general/alarm"] == 0.0
