"""A stage's report: the per-step metrics as a Prefect table, reward/loss/length curves as a PNG under
M1_HOME, and a markdown summary that embeds the plot."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

from flows.atomic import atomic_path

TABLE_COLUMNS = (
    "step",
    "reward_mean",
    "loss",
    "response_len_mean",
    "max_new_tokens",
    "groups_kept",
    "clip_fraction",
    "masked_fraction",
    "is_weight_mean",
    "ratio_max",
    "approx_kl",
    "entropy",
    "grad_norm",
    "logprob_corr",
)
PANELS = (
    ("reward_mean", "mean reward"),
    ("loss", "policy loss"),
    ("response_len_mean", "response length (tokens)"),
    ("clip_fraction", "tokens with clipped ratio (fraction)"),
)


def metrics_table(history: Sequence[dict[str, float]]) -> list[dict[str, float | None]]:
    return [{k: (round(h[k], 4) if k in h else None) for k in TABLE_COLUMNS} for h in history]


def plot_curves(history: Sequence[dict[str, float]], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # headless: no display on a training machine
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.2), sharex=True)
    last_step = max((h["step"] for h in history), default=1)
    for ax, (key, label) in zip(axes, PANELS, strict=True):
        points = [(h["step"], h[key]) for h in history if key in h]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", markersize=3)
        else:  # every step skipped its update: no group had rewards that differed
            ax.text(0.5, 0.5, "no updates", ha="center", va="center", transform=ax.transAxes, color="gray")
        ax.set_xlim(0.5, last_step + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("RL step")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    return path


def stage_markdown(
    stage: str, start_from: str, final: Path, history: Sequence[dict[str, float]], plot: Path | None
) -> str:
    lines = [
        f"# Training stage `{stage}`",
        "",
        f"- started from: `{start_from}`",
        f"- final model: `{final}`",
        f"- RL steps: {len(history)}",
    ]
    if history:
        first, last = history[0], history[-1]
        lines.append(
            f"- mean reward: {first['reward_mean']:.3f} (step 1) -> {last['reward_mean']:.3f} "
            f"(step {int(last['step'])})"
        )
        lines.append(f"- all steps finite: {all(h.get('finite') == 1.0 for h in history)}")
    if plot is not None:
        data = base64.b64encode(plot.read_bytes()).decode()
        lines += ["", f"![curves](data:image/png;base64,{data})", "", f"Plot file: `{plot}`"]
    return "\n".join(lines) + "\n"
