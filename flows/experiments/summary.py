"""The algorithms experiment's outputs: steps.csv, the summary table (mean and spread over seeds), and the
reward-against-step plot with a band per arm.

Definitions (stated in summary.md too):

- reward: the mean reward of every response sampled in a step (all dynamic-sampling rounds included, so
  arms with and without dynamic sampling are scored on the same footing);
- final reward: the mean reward over the last `window` steps of a run;
- steps to reach DAPO: the first step at which a run's reward, averaged over a trailing window of
  `window` steps, reaches DAPO's final reward (mean over its seeds);
- clipped tokens: the share of tokens whose IS ratio left the arm's clip range (CISPO keeps their
  gradient with a capped weight); dropped tokens: the share whose gradient the loss sets to zero (PPO's
  trust region: GRPO and DAPO; always 0 for CISPO);
- entropy: the policy's mean token entropy on the sampled responses, as the trainer logs it.
"""

from __future__ import annotations

import base64
import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flows.atomic import atomic_path, atomic_write_text
from flows.experiments.arms import BASELINE, Arm, Size
from flows.experiments.runs import RunResult

STEP_COLUMNS = (
    "algorithm",
    "seed",
    "step",
    "reward",
    "clip_fraction",
    "masked_fraction",
    "entropy",
    "groups_kept",
    "groups_sampled",
    "response_len_mean",
    "grad_norm",
    "approx_kl",
    "skipped_updates",
    "seconds",
)


def step_rows(results: Sequence[RunResult]) -> list[dict[str, float | str | None]]:
    rows = []
    for r in results:
        for h in r.history:
            row: dict[str, float | str | None] = {"algorithm": r.arm, "seed": r.seed, "step": int(h["step"])}
            row["reward"] = h["reward_mean"]
            for key in STEP_COLUMNS[4:]:
                row[key] = h.get(key)
            rows.append(row)
    return rows


def write_steps_csv(rows: Sequence[dict], path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=STEP_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in STEP_COLUMNS})


def _curve(result: RunResult) -> np.ndarray:
    return np.array([h["reward_mean"] for h in result.history])


def trailing_mean(x: np.ndarray, window: int) -> np.ndarray:
    c = np.cumsum(np.insert(x, 0, 0.0))
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(idx - window, 0)
    return (c[idx] - c[lo]) / (idx - lo)


def _mean_over(history: list[dict[str, float]], key: str) -> float:
    values = [h[key] for h in history if key in h]
    return float(np.mean(values)) if values else float("nan")


@dataclass
class ArmSummary:
    arm: Arm
    final: list[float]  # per seed
    heldout: list[float]
    reach: list[int | None]  # steps to reach DAPO's final reward, per seed
    clipped: list[float]
    dropped: list[float]
    entropy: list[float]
    seconds: list[float]


def summarise(
    results: Sequence[RunResult], arms: Sequence[Arm], window: int
) -> tuple[list[ArmSummary], float]:
    by_arm = {a.name: [r for r in results if r.arm == a.name] for a in arms}
    base_runs = by_arm.get(BASELINE) or next(iter(by_arm.values()))
    target = float(np.mean([_curve(r)[-window:].mean() for r in base_runs]))
    out = []
    for arm in arms:
        runs = by_arm[arm.name]
        reach = []
        for r in runs:
            hit = np.flatnonzero(trailing_mean(_curve(r), window) >= target - 1e-12)
            reach.append(int(hit[0]) + 1 if hit.size else None)
        out.append(
            ArmSummary(
                arm=arm,
                final=[float(_curve(r)[-window:].mean()) for r in runs],
                heldout=[r.heldout_pass for r in runs],
                reach=reach,
                clipped=[_mean_over(r.history, "clip_fraction") for r in runs],
                dropped=[_mean_over(r.history, "masked_fraction") for r in runs],
                entropy=[_mean_over(r.history, "entropy") for r in runs],
                seconds=[r.seconds for r in runs],
            )
        )
    return out, target


def spread(values: Sequence[float], fmt: str = "{:.3f}") -> str:
    """mean ± sample std over seeds (just the value for one seed)."""
    v = [x for x in values if x is not None and not math.isnan(x)]
    if not v:
        return "-"
    if len(v) == 1:
        return fmt.format(v[0])
    return f"{fmt.format(float(np.mean(v)))} ± {fmt.format(float(np.std(v, ddof=1)))}"


def reach_text(reach: Sequence[int | None], steps: int) -> str:
    hit = [r for r in reach if r is not None]
    if not hit:
        return f"not within {steps}"
    text = spread(hit, "{:.1f}")
    return text if len(hit) == len(reach) else f"{text} ({len(hit)}/{len(reach)} seeds)"


TABLE_HEADER = (
    "arm",
    "final reward",
    "held-out pass rate",
    "steps to reach DAPO's final",
    "clipped tokens",
    "dropped tokens",
    "entropy",
    "s / run",
)


def table_rows(summaries: Sequence[ArmSummary], steps: int) -> list[list[str]]:
    return [
        [
            s.arm.name,
            spread(s.final),
            spread(s.heldout),
            reach_text(s.reach, steps),
            spread(s.clipped, "{:.2%}"),
            spread(s.dropped, "{:.2%}"),
            spread(s.entropy),
            f"{np.mean(s.seconds):.0f}",
        ]
        for s in summaries
    ]


def claim_check(summaries: Sequence[ArmSummary], steps: int) -> str:
    """What the run says about 'CISPO matches DAPO in half the steps', whatever it says."""
    by = {s.arm.name: s for s in summaries}
    if "cispo" not in by or BASELINE not in by:
        return "The claim needs both a cispo and a dapo arm."
    cispo, dapo = by["cispo"], by[BASELINE]
    c_hit, d_hit = [r for r in cispo.reach if r], [r for r in dapo.reach if r]
    gap = np.mean(cispo.final) - np.mean(dapo.final)
    noise = math.sqrt(
        (np.var(cispo.final, ddof=1) if len(cispo.final) > 1 else 0.0) / max(len(cispo.final), 1)
        + (np.var(dapo.final, ddof=1) if len(dapo.final) > 1 else 0.0) / max(len(dapo.final), 1)
    )
    parts = [
        f"Final reward: CISPO {np.mean(cispo.final):.3f} vs DAPO {np.mean(dapo.final):.3f} "
        f"(difference {gap:+.3f}, standard error {noise:.3f} over seeds)."
    ]
    if c_hit and d_hit:
        ratio = np.mean(c_hit) / np.mean(d_hit)
        verdict = "supports" if ratio <= 0.5 and len(c_hit) == len(cispo.reach) else "does not support"
        parts.append(
            f"CISPO reached DAPO's final reward after {np.mean(c_hit):.1f} steps on average "
            f"({len(c_hit)}/{len(cispo.reach)} seeds), DAPO after {np.mean(d_hit):.1f}: a ratio of "
            f"{ratio:.2f}; this run {verdict} 'CISPO matches DAPO in half the steps' (ratio <= 0.5)."
        )
    else:
        parts.append(
            f"CISPO did not reach DAPO's final reward within {steps} steps on any seed: this run does not "
            "support 'CISPO matches DAPO in half the steps'."
        )
    if abs(gap) < 2 * noise:
        parts.append("The final rewards differ by less than two standard errors: at this size the arms are not "
                     "distinguishable by final reward.")  # fmt: skip
    return " ".join(parts)


def plot(results: Sequence[RunResult], arms: Sequence[Arm], path: Path, title: str) -> Path:
    """Reward against step: per arm the mean over seeds, with a band of ± one std; one panel for the
    algorithms, one for CISPO and its section-5 variants."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("CISPO vs DAPO vs GRPO", [a for a in arms if a.kind == "algorithm"]),
        (
            "section 5 stability options (on CISPO)",
            [a for a in arms if a.name == "cispo" or a.kind == "stability"],
        ),
    ]
    panels = [(t, a) for t, a in panels if a]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), sharey=True, squeeze=False)
    for ax, (name, group) in zip(axes[0], panels, strict=True):
        for arm in group:
            curves = np.array([_curve(r) for r in results if r.arm == arm.name])
            if not curves.size:
                continue
            steps = np.arange(1, curves.shape[1] + 1)
            mean = curves.mean(0)
            std = curves.std(0, ddof=1) if len(curves) > 1 else np.zeros_like(mean)
            (line,) = ax.plot(steps, mean, label=arm.name, linewidth=1.6)
            ax.fill_between(steps, mean - std, mean + std, color=line.get_color(), alpha=0.18)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("RL step (generation batch)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("mean reward (band: ± 1 std over seeds)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return path


def markdown(
    summaries: Sequence[ArmSummary],
    target: float,
    size: Size,
    *,
    window: int,
    source: str,
    warm_pass: float,
    n_train: int,
    n_heldout: int,
    seconds: float,
    image: Path | None = None,
) -> str:
    lines = [
        "# CISPO vs DAPO vs GRPO on the pipeline's math and logic items",
        "",
        f"Size: {size.describe()}.",
        f"Data: {source}; {n_train} training items, {n_heldout} held-out items.",
        f"Warm start: held-out pass rate {warm_pass:.3f} before RL (shared by every run).",
        f"Wall time: {seconds / 60:.1f} min.",
        "",
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "---|" * len(TABLE_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summaries, size.steps)]
    lines += [
        "",
        "Arms: " + "; ".join(f"**{s.arm.name}**: {s.arm.describe()}" for s in summaries) + ".",
        "",
        f"Mean ± std over {size.seeds} seeds. Final reward: mean over the last {window} steps. Steps to reach "
        f"DAPO's final: first step whose trailing {window}-step mean reaches {target:.3f} (DAPO's final reward).",
        "Clipped: tokens whose IS ratio left the clip range; dropped: tokens whose gradient the loss zeroed.",
        "",
        "**The paper's claim (CISPO matches DAPO in half the steps):** " + claim_check(summaries, size.steps),
    ]
    if image is not None and image.exists():
        data = base64.b64encode(image.read_bytes()).decode()
        lines += ["", f"![reward against step](data:image/png;base64,{data})"]
    return "\n".join(lines) + "\n"


def write_outputs(
    output: Path,
    results: Sequence[RunResult],
    arms: Sequence[Arm],
    size: Size,
    **info,
) -> tuple[Path, str]:
    """DIR/steps.csv, DIR/reward.png and DIR/summary.md; returns (folder, the markdown with the image
    embedded, for a Prefect artifact)."""
    window = max(1, min(5, size.steps // 3 or 1))
    output.mkdir(parents=True, exist_ok=True)
    write_steps_csv(step_rows(results), output / "steps.csv")
    summaries, target = summarise(results, arms, window)
    image = plot(results, arms, output / "reward.png", f"reward against step ({size.seeds} seeds per arm)")
    text = markdown(summaries, target, size, window=window, **info)
    atomic_write_text(output / "summary.md", text + "\n![reward against step](reward.png)\n")
    return output, markdown(summaries, target, size, window=window, image=image, **info)
