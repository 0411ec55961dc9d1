"""A stage's report: the per-step metrics as a Prefect table, reward/loss/length curves, mixture weights and
the length-bias monitor as PNGs under M1_HOME, and a markdown summary that embeds the plots.

Not a flow: what the stage flow publishes (Prefect table, PNGs, markdown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from flows.artifacts import embed_png, save_png
from m1model.rl.length_bias import RuleOrder

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
    "perplexity",
    "response_len_p99_ratio",
    "window_length_ready",
    "window_ppl_ready",
    "repetition_truncated",
    "val/all",
)
PANELS = (
    ("reward_mean", "mean reward"),
    ("loss", "policy loss"),
    ("response_len_mean", "response length (tokens)"),
    ("clip_fraction", "tokens with clipped ratio (fraction)"),
)


def metrics_table(history: Sequence[dict[str, float]]) -> list[dict[str, float | None]]:
    """The step metrics a person scans first, plus every mixture key's weight and pass rate."""
    keys = list(TABLE_COLUMNS) + sorted({k for h in history for k in h if k.startswith(("weight/", "pass/"))})
    return [{k: (round(h[k], 4) if k in h else None) for k in keys} for h in history]


def plot_sft(history: Sequence[dict[str, float]], path: Path, title: str) -> Path:
    """The SFT warm start's loss per step."""
    # heavy: matplotlib
    import matplotlib

    matplotlib.use("Agg")
    # heavy: matplotlib
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([h["step"] for h in history], [h["loss"] for h in history])
    ax.set_xlabel("SFT step")
    ax.set_ylabel("answer-token loss")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, path, dpi=90)


def plot_weights(history: Sequence[dict[str, float]], path: Path, title: str) -> Path:
    """Left: each mixture key's sampling weight per step. Right: a key x step heat map of pass rates."""
    # heavy: matplotlib
    import matplotlib

    matplotlib.use("Agg")
    # heavy: matplotlib, numpy
    import matplotlib.pyplot as plt
    import numpy as np

    keys = sorted({k.split("/", 1)[1] for h in history for k in h if k.startswith(("weight/", "pass/"))})
    steps = [int(h["step"]) for h in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 1.6 + 0.35 * max(len(keys), 4)))
    for key in keys:
        points = [(h["step"], h[f"weight/{key}"]) for h in history if f"weight/{key}" in h]
        if points:
            left.plot(*zip(*points, strict=True), marker="o", markersize=3, label=key)
    left.set_title("mixture weight (share of prompts)", fontsize=10)
    left.set_xlabel("RL step")
    left.grid(alpha=0.3)
    if keys:
        left.legend(fontsize=8)
    grid = np.array([[h.get(f"pass/{k}", np.nan) for h in history] for k in keys] or [[np.nan]])
    image = right.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    right.set_yticks(range(len(keys)), keys, fontsize=8)
    right.set_xticks(range(len(steps)), steps, fontsize=7)
    right.set_xlabel("RL step")
    right.set_title("pass rate per key (blank: not sampled)", fontsize=10)
    fig.colorbar(image, ax=right)
    fig.suptitle(title)
    fig.tight_layout()
    return save_png(fig, path, dpi=90)


def plot_curves(history: Sequence[dict[str, float]], path: Path, title: str) -> Path:
    # heavy: matplotlib
    import matplotlib

    matplotlib.use("Agg")  # headless: no display on a training machine
    # heavy: matplotlib
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
    return save_png(fig, path, dpi=90)


def plot_length_bias(history: Sequence[Mapping[str, float]], path, title: str = "length bias"):
    """The length-bias monitor's metrics (m1model.rl.length_bias), per domain: mean length and success per
    step (twin axes, alarm steps marked); the judge's reward and the reward trained on (they differ once
    shaping, normalisation or clipping act); and the reward-length Spearman correlation, the judge's own and
    the trained reward's. Returns the PNG path."""
    # heavy: matplotlib
    import matplotlib

    matplotlib.use("Agg")
    # heavy: matplotlib
    import matplotlib.pyplot as plt

    domains = sorted({k.split("/")[1] for h in history for k in h if k.startswith("length_bias/")})
    fig, axes = plt.subplots(len(domains) or 1, 3, figsize=(15, 3.2 * max(len(domains), 1)), squeeze=False)
    for row, domain in zip(axes, domains, strict=False):
        p = f"length_bias/{domain}"
        rows = [h for h in history if f"{p}/length" in h]
        steps = [h.get("step", i + 1) for i, h in enumerate(rows)]
        ax = row[0]
        ax.plot(steps, [h[f"{p}/length"] for h in rows], marker="o", ms=3, color="tab:blue", label="length")
        ax.set_ylabel("mean length (tokens)", color="tab:blue")
        ax2 = ax.twinx()
        ax2.plot(
            steps, [h.get(f"{p}/success", float("nan")) for h in rows], marker="s", ms=3, color="tab:green"
        )
        ax2.set_ylabel("success (rule-verified)", color="tab:green")
        ax2.set_ylim(-0.05, 1.05)
        alarms = [s for s, h in zip(steps, rows, strict=True) if h.get(f"{p}/alarm")]
        for s in alarms:
            ax.axvline(s, color="tab:red", alpha=0.3)
        ax.set_title(f"{domain}: length vs success ({len(alarms)} alarm steps, red)", fontsize=10)
        ax.set_xlabel("RL step")
        for key, label, style in (("reward_raw", "judge's reward", "-"), ("reward", "trained on", "--")):
            row[1].plot(
                steps, [h.get(f"{p}/{key}", float("nan")) for h in rows], style, marker="o", ms=3, label=label
            )
        row[1].set_title(f"{domain}: mean reward (shaped when mitigation acts)", fontsize=10)
        row[1].set_xlabel("RL step")
        row[1].legend(fontsize=8)
        for key, label, style in (("corr_raw", "judge's reward", "-"), ("corr", "trained on", "--")):
            row[2].plot(
                steps, [h.get(f"{p}/{key}", float("nan")) for h in rows], style, marker="o", ms=3, label=label
            )
        row[2].axhline(0, color="gray", lw=0.5)
        row[2].set_ylim(-1.05, 1.05)
        row[2].set_title(f"{domain}: Spearman(reward, length)", fontsize=10)
        row[2].set_xlabel("RL step")
        row[2].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save_png(fig, path, dpi=100)


def length_bias_notes(history: Sequence[Mapping[str, float]], domains: Sequence[str]) -> list[str]:
    """A line per judged domain (``domains``) the length-bias monitor watched: length (and its multiple of
    the reference's) at the first and last step, the judge's reward and rule-verified success (means over
    the first and last third of the steps: one step's batch is noisy), the judge's reward-length Spearman,
    and the alarms. When the judge's reward rose while success did not, the line says the policy is
    learning what the judge rewards rather than what the rule checks (its errors, not only length)."""
    out = []
    for domain in sorted(domains):
        p = f"length_bias/{domain}"
        rows = [h for h in history if f"{p}/length" in h]
        if not rows:
            continue
        first, last = rows[0], rows[-1]
        alarms = [int(h["step"]) for h in rows if h.get(f"{p}/alarm")]
        corr = sum(h.get(f"{p}/corr_raw", 0.0) for h in rows) / len(rows)
        said = f"{len(alarms)} alarm steps (first at step {alarms[0]})" if alarms else "no alarm"
        reward, success = _thirds(rows, f"{p}/reward_raw"), _thirds(rows, f"{p}/success")
        line = (
            f"length-bias monitor ({domain}): mean length {first[f'{p}/length']:.1f}{_ratio(first, p)} -> "
            f"{last[f'{p}/length']:.1f}{_ratio(last, p)} tokens, the judge's reward {_pair(reward)} and "
            f"rule-verified success {_pair(success)} (first and last third of the steps), the judge's "
            f"reward-length Spearman {corr:+.2f} on average{_order(rows, p)}; {said}"
        )
        if reward and success and reward[1] - reward[0] >= GAP and success[1] - success[0] < GAP / 2:
            line += (
                "; the judge's reward rose while rule-verified success did not: the policy is learning what "
                "the judge rewards, not what the rule checks"
            )
        out.append(line)
    return out


def _order(rows: Sequence[Mapping[str, float]], p: str) -> str:
    """How the judge ordered the pairs of one prompt's rollouts that the success rule tells apart, over the
    stage (m1model/rl/length_bias.py `rule_order`); empty when the rule told none apart."""
    right, wrong, tied = (
        int(sum(h.get(f"{p}/pairs_{k}", 0) for h in rows)) for k in ("right", "wrong", "tied")
    )
    if not right + wrong + tied:
        return ""
    share = RuleOrder(right, wrong, tied).share
    return (
        f"; of its rollouts' pairs that the rule tells apart the judge orders {right} as the rule does, "
        f"{wrong} the other way and ties {tied} ({share:.2f}, ties as half; 0.5 is no signal)"
    )


GAP = 0.05  # a rise in the judge's mean reward (on its 0-1 scale) that is more than one step's noise


def _thirds(rows: Sequence[Mapping[str, float]], key: str) -> tuple[float, float] | None:
    """(mean over the first third of the steps that have ``key``, over the last third), or None."""
    values = [h[key] for h in rows if key in h and h[key] == h[key]]  # NaN: no checkable response
    if not values:
        return None
    n = max(1, len(values) // 3)
    return sum(values[:n]) / n, sum(values[-n:]) / n


def _pair(v: tuple[float, float] | None) -> str:
    return "-" if v is None else f"{v[0]:.2f} -> {v[1]:.2f}"


def _ratio(h: Mapping[str, float], p: str) -> str:
    return f" ({h[f'{p}/length_ratio']:.2f}x the reference's)" if f"{p}/length_ratio" in h else ""


def stage_markdown(summary: dict, history: Sequence[dict[str, float]]) -> str:
    """The stage's report: where it started, reward and validation before/after, warnings, plots."""
    lines = [
        f"# Training stage `{summary['stage']}`",
        "",
        f"- started from: `{summary['start_from']}`",
        f"- final model: `{summary['final']}`",
        f"- RL steps: {len(history)}",
    ]
    if history:
        first, last = history[0], history[-1]
        lines.append(
            f"- mean reward: {first['reward_mean']:.3f} (step 1) -> {last['reward_mean']:.3f} "
            f"(step {int(last['step'])})"
        )
        lines.append(f"- all steps finite: {all(h.get('finite') == 1.0 for h in history)}")
        lines.append(
            f"- responses stopped by repetition: {int(sum(h.get('repetition_truncated', 0) for h in history))}"
        )
    val = summary.get("validation") or {}
    keys = sorted(set(val.get("start", {})) | set(val.get("end", {})))
    if keys:
        lines += ["", "| held-out set | pass rate at start | at end |", "|---|---:|---:|"]
        for key in keys:
            fmt = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
            lines.append(
                f"| {key.removeprefix('val/')} | {fmt(val.get('start', {}).get(key))} | {fmt(val.get('end', {}).get(key))} |"
            )
    for warning in summary.get("warnings", []):
        lines += ["", f"**Warning:** {warning}"]
    if summary.get("notes"):
        lines += ["", *[f"- {n}" for n in summary["notes"]]]
    for plot in summary.get("plots", []):
        lines += ["", embed_png(plot, Path(plot).stem), "", f"Plot file: `{plot}`"]
    return "\n".join(lines) + "\n"
