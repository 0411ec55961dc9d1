"""The algorithms experiment's plots (reward.png, heldout.png): per arm, the mean over seeds with a band of
one standard deviation, a panel for the algorithms and baselines and one for section 5's stability options."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from flows.artifacts import save_png
from flows.experiments.arms import Arm
from flows.experiments.estimates import reward_curve
from flows.experiments.runs import RunResult
from m1model.rl.evaluation import PassRate


def _style(ax, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("RL step (generation batch; SFT: the same optimiser steps)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _band(ax, steps, curves, label):
    curves = np.asarray(curves, dtype=float)
    mean = curves.mean(0)
    std = curves.std(0, ddof=1) if len(curves) > 1 else np.zeros_like(mean)
    (line,) = ax.plot(steps, mean, label=label, linewidth=1.6)
    ax.fill_between(steps, mean - std, mean + std, color=line.get_color(), alpha=0.18)


def _panels(arms: Sequence[Arm]) -> list[tuple[str, list[Arm]]]:
    panels = [
        ("baselines and algorithms", [a for a in arms if a.kind in ("baseline", "algorithm")]),
        (
            "section 5 stability options and diagnostics (on CISPO)",
            [a for a in arms if a.name == "cispo" or a.kind in ("stability", "diagnostic")],
        ),
    ]
    return [(t, a) for t, a in panels if a]


def _figure(n_panels: int):
    import matplotlib  # heavy, and only plots need it; the Agg backend must be chosen before pyplot loads

    matplotlib.use("Agg")
    # heavy: matplotlib
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n_panels, figsize=(6.5 * n_panels, 4.2), sharey=True, squeeze=False)
    return fig, axes[0]


def _save(fig, path: Path, title: str) -> Path:
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)


def plot_reward(results: Sequence[RunResult], arms: Sequence[Arm], path: Path, title: str) -> Path:
    """Training reward against step per RL arm: mean over seeds, band ± one std."""
    panels = [(t, [a for a in group if a.method == "rl"]) for t, group in _panels(arms)]
    fig, axes = _figure(len(panels))
    for ax, (name, group) in zip(axes, panels, strict=True):
        for arm in group:
            curves = [reward_curve(r) for r in results if r.arm == arm.name]
            if curves and curves[0].size:
                _band(ax, np.arange(1, len(curves[0]) + 1), curves, arm.name)
        _style(ax, name, "mean sampled reward (band: ± 1 std over seeds)")
    return _save(fig, path, title)


def plot_heldout(
    results: Sequence[RunResult], arms: Sequence[Arm], warm: PassRate, path: Path, title: str
) -> Path:
    """Held-out accuracy against step per arm (SFT continued included), the warm start dashed."""
    fig, axes = _figure(len(_panels(arms)))
    for ax, (name, group) in zip(axes, _panels(arms), strict=True):
        for arm in group:
            runs = [r for r in results if r.arm == arm.name]
            if runs:
                steps = [s for s, _ in runs[0].heldout_curve]
                _band(ax, steps, [[p.rate for _, p in r.heldout_curve] for r in runs], arm.name)
        ax.axhline(warm.rate, color="grey", linestyle="--", linewidth=1, label="warm start")
        _style(ax, name, f"held-out accuracy, {warm.n} items (band: ± 1 std over seeds)")
    return _save(fig, path, title)
