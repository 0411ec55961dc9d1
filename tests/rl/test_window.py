"""The generation window widens only when the p99 length nears it AND the perplexity has converged."""

import math

import numpy as np

from m1model.rl.window import LengthWindow

FULL = np.array([20] * 99 + [19])  # p99 at the window of 20
SHORT = np.array([5] * 100)


def steps(window: LengthWindow, lengths, nlls) -> list[dict]:
    return [window.observe(lengths, nll) for nll in nlls]


def test_widens_when_both_signals_hold():
    w = LengthWindow(20, limit=30, step=8, ppl_steps=3, ppl_tol=0.05)
    got = steps(w, FULL, [1.0, 1.0, 1.0, 1.0])
    assert [m["window_widened"] for m in got] == [0, 0, 0, 1]  # 3 stable changes need 4 steps
    assert got[-1]["window_length_ready"] == 1 and got[-1]["window_ppl_ready"] == 1
    assert w.current == 28
    # convergence is measured afresh at the new length; the limit clamps a step that would overshoot
    steps(w, np.array([28] * 100), [0.5] * 4)
    assert w.current == 30
    assert not w.widens and steps(w, np.array([30] * 100), [0.5] * 5)[-1]["window_widened"] == 0


def test_long_responses_alone_do_not_widen_while_perplexity_moves():
    w = LengthWindow(20, limit=40, step=4, ppl_steps=3, ppl_tol=0.05)
    got = steps(w, FULL, [2.0, 1.5, 1.0, 0.5, 0.2, 0.1])  # perplexity still falling fast
    assert all(m["window_length_ready"] == 1 for m in got)
    assert all(m["window_ppl_ready"] == 0 for m in got) and w.current == 20
    assert got[1]["perplexity_change"] == abs(math.exp(1.5) - math.exp(2.0)) / math.exp(2.0)


def test_converged_perplexity_alone_does_not_widen_short_responses():
    w = LengthWindow(20, limit=40, step=4)
    got = steps(w, SHORT, [1.0] * 6)
    assert got[-1]["window_ppl_ready"] == 1 and got[-1]["window_length_ready"] == 0
    assert w.current == 20 and got[-1]["response_len_p99_ratio"] == 0.25


def test_state_round_trip():
    w = LengthWindow(20, limit=40, step=4)
    steps(w, FULL, [1.0, 1.01])
    again = LengthWindow(20, limit=40, step=4)
    again.load_state_dict(w.state_dict())
    assert again.current == w.current and again.perplexities == w.perplexities
