"""The algorithms experiment's outputs: steps.csv, summary.json, summary.md (the table: mean, standard
error and 95% interval over seeds), reward.png and heldout.png.

Definitions (stated in summary.md too):

- held-out accuracy: the share of the held-out items (never trained on) whose greedy answer earns
  reward 1, measured by the pipeline's one evaluation; "before" is the shared warm start;
- mean ± SE: over seeds, SE = sample std / sqrt(seeds); the 95% interval is Student's t over seeds;
- reward: the mean reward of every response sampled in a step (all dynamic-sampling rounds included, so
  arms with and without dynamic sampling are scored on the same footing); final reward: its mean over
  the last `window` steps;
- steps to target: the first evaluated step at which a run's held-out accuracy reaches DAPO's final
  held-out accuracy (mean over its seeds): the paper's "CISPO matches DAPO in half the steps", measured
  on held-out accuracy rather than training reward;
- clipped tokens: the share of tokens whose IS ratio left the arm's clip range (CISPO keeps their
  gradient with a capped weight); dropped tokens: the share whose gradient the loss sets to zero (PPO's
  trust region for GRPO and DAPO, unverified responses for RFT; always 0 for CISPO);
- entropy: the policy's mean token entropy on the sampled responses, as the trainer logs it.
"""

from __future__ import annotations

import base64
import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from flows.atomic import atomic_path, atomic_write_text
from flows.experiments.arms import BASELINE, Arm, Size
from flows.experiments.runs import RunResult
from m1model.rl.evaluation import PassRate

STEP_COLUMNS = (
    "algorithm",  # the arm
    "seed",
    "step",
    "reward",
    "loss",
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
            row["reward"] = h.get("reward_mean")
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
    return np.array([h["reward_mean"] for h in result.history if "reward_mean" in h])


def _mean_over(history: list[dict[str, float]], key: str) -> float:
    values = [h[key] for h in history if key in h]
    return float(np.mean(values)) if values else float("nan")


@dataclass(frozen=True)
class Estimate:
    """Mean over seeds with its standard error and Student-t 95% interval (None with one seed)."""

    values: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else float("nan")

    @property
    def se(self) -> float | None:
        n = len(self.values)
        return float(np.std(self.values, ddof=1) / math.sqrt(n)) if n > 1 else None

    @property
    def interval(self) -> tuple[float, float] | None:
        if self.se is None:
            return None
        half = float(stats.t.ppf(0.975, len(self.values) - 1)) * self.se
        return self.mean - half, self.mean + half

    def text(self, fmt: str = "{:.3f}") -> str:
        if not self.values:
            return "-"
        return fmt.format(self.mean) + ("" if self.se is None else f" ± {fmt.format(self.se)}")

    def interval_text(self, fmt: str = "{:.3f}") -> str:
        return (
            "-"
            if self.interval is None
            else f"{fmt.format(self.interval[0])} to {fmt.format(self.interval[1])}"
        )


@dataclass
class ArmSummary:
    arm: Arm
    seeds: list[int]
    after: Estimate  # held-out accuracy at the end
    final: list[float | None]  # final training reward per seed (None for SFT)
    reach: list[int | None]  # steps to reach DAPO's final held-out accuracy, per seed
    clipped: list[float]
    dropped: list[float]
    entropy: list[float]
    seconds: list[float]
    curves: list[list[tuple[int, PassRate]]]


def summarise(
    results: Sequence[RunResult], arms: Sequence[Arm], window: int
) -> tuple[list[ArmSummary], float]:
    """Per arm, its numbers over seeds; and the target of 'steps to target' (DAPO's final held-out
    accuracy, or the first arm's when there is no DAPO arm)."""
    by_arm = {a.name: [r for r in results if r.arm == a.name] for a in arms}
    base_runs = by_arm.get(BASELINE) or next(iter(by_arm.values()))
    target = float(np.mean([r.heldout_after for r in base_runs]))
    out = []
    for arm in arms:
        runs = by_arm[arm.name]
        reach = []
        for r in runs:
            hit = [step for step, p in r.heldout_curve if step > 0 and p.rate >= target - 1e-12]
            reach.append(hit[0] if hit else None)
        out.append(
            ArmSummary(
                arm=arm,
                seeds=[r.seed for r in runs],
                after=Estimate(tuple(r.heldout_after for r in runs)),
                final=[float(_curve(r)[-window:].mean()) if _curve(r).size else None for r in runs],
                reach=reach,
                clipped=[_mean_over(r.history, "clip_fraction") for r in runs],
                dropped=[_mean_over(r.history, "masked_fraction") for r in runs],
                entropy=[_mean_over(r.history, "entropy") for r in runs],
                seconds=[r.seconds for r in runs],
                curves=[r.heldout_curve for r in runs],
            )
        )
    return out, target


def summary_json(summaries: Sequence[ArmSummary], warm: PassRate) -> dict:
    """The contract: {"heldout_items": N, "arms": {ARM: [{"seed", "heldout_before", "heldout_after",
    "final_reward", "steps_to_target", "heldout_curve"}, ...]}}."""
    return {
        "heldout_items": warm.n,
        "arms": {
            s.arm.name: [
                {
                    "seed": seed,
                    "heldout_before": warm.rate,
                    "heldout_after": after,
                    "final_reward": final,
                    "steps_to_target": reach,
                    "heldout_curve": [[step, p.rate] for step, p in curve],
                }
                for seed, after, final, reach, curve in zip(
                    s.seeds, s.after.values, s.final, s.reach, s.curves, strict=True
                )
            ]
            for s in summaries
        },
    }


def _spread(values: Sequence[float | None], fmt: str = "{:.3f}") -> str:
    v = tuple(x for x in values if x is not None and not math.isnan(x))
    return Estimate(v).text(fmt)


def reach_text(reach: Sequence[int | None], steps: int) -> str:
    hit = [r for r in reach if r is not None]
    if not hit:
        return f"not within {steps}"
    text = _spread(hit, "{:.1f}")
    return text if len(hit) == len(reach) else f"{text} ({len(hit)}/{len(reach)} seeds)"


TABLE_HEADER = (
    "arm",
    "held-out after (mean ± SE)",
    "95% interval",
    "change vs warm start",
    "final reward",
    "steps to DAPO's held-out",
    "clipped tokens",
    "dropped tokens",
    "entropy",
    "s / run",
)


def table_rows(summaries: Sequence[ArmSummary], warm: PassRate, steps: int) -> list[list[str]]:
    return [
        [
            s.arm.name,
            s.after.text(),
            s.after.interval_text(),
            f"{s.after.mean - warm.rate:+.3f}",
            _spread(s.final),
            reach_text(s.reach, steps),
            _spread(s.clipped, "{:.2%}"),
            _spread(s.dropped, "{:.2%}"),
            _spread(s.entropy),
            f"{np.mean(s.seconds):.0f}",
        ]
        for s in summaries
    ]


def goals_check(summaries: Sequence[ArmSummary], warm: PassRate) -> list[str]:
    """The experiment's goals, each said as met or not with its numbers."""
    by = {s.arm.name: s for s in summaries}
    lines = []
    rl = [s for s in summaries if s.arm.method == "rl"]
    if rl:
        below = [s.arm.name for s in rl if s.after.interval is None or not s.after.interval[0] > warm.rate]
        lines.append(
            "Every RL arm ends above the warm start with its 95% lower bound above it: "
            + ("met." if not below else f"not met by {', '.join(below)}.")
        )
    if "cispo" in by:
        gain = by["cispo"].after.mean - warm.rate
        lines.append(
            f"CISPO gains {gain:+.3f} over the warm start: {'met' if gain >= 0.10 else 'not met'} (goal +0.10)."
        )
    if "cispo" in by and "rft" in by:
        c, r = by["cispo"].after, by["rft"].after
        lines.append(
            f"CISPO {c.mean:.3f} vs rejection sampling {r.mean:.3f}: "
            f"{'met' if c.mean >= r.mean else 'not met'} (goal: CISPO >= RFT)."
        )
    if "cispo" in by and "sft" in by:
        c, f = by["cispo"].after, by["sft"].after
        lines.append(
            f"For reference, SFT continued on gold answers with the same optimiser steps ends at {f.mean:.3f}."
        )
    return lines


def claim_check(summaries: Sequence[ArmSummary], steps: int) -> str:
    """What the run says about 'CISPO reaches DAPO's final held-out accuracy in half the steps'."""
    by = {s.arm.name: s for s in summaries}
    if "cispo" not in by or BASELINE not in by:
        return "The claim needs both a cispo and a dapo arm."
    cispo, dapo = by["cispo"], by[BASELINE]
    gap = cispo.after.mean - dapo.after.mean
    noise = math.sqrt((cispo.after.se or 0.0) ** 2 + (dapo.after.se or 0.0) ** 2)
    parts = [
        f"Final held-out accuracy: CISPO {cispo.after.mean:.3f} vs DAPO {dapo.after.mean:.3f} "
        f"(difference {gap:+.3f}, standard error {noise:.3f} over seeds)."
    ]
    c_hit, d_hit = [r for r in cispo.reach if r], [r for r in dapo.reach if r]
    if c_hit and d_hit:
        ratio = np.mean(c_hit) / np.mean(d_hit)
        verdict = "supports" if ratio <= 0.5 and len(c_hit) == len(cispo.reach) else "does not support"
        parts.append(
            f"CISPO reached DAPO's final held-out accuracy after {np.mean(c_hit):.1f} steps on average "
            f"({len(c_hit)}/{len(cispo.reach)} seeds), DAPO after {np.mean(d_hit):.1f}: a ratio of "
            f"{ratio:.2f}; this run {verdict} 'CISPO matches DAPO in half the steps' (ratio <= 0.5)."
        )
    else:
        parts.append(
            f"CISPO did not reach DAPO's final held-out accuracy within {steps} steps on any seed: this run "
            "does not support 'CISPO matches DAPO in half the steps'."
        )
    if abs(gap) < 2 * noise or noise == 0:
        parts.append(
            "The two arms differ by less than two standard errors: at this size they are not distinguishable, "
            "so no ordering between them is claimed."
        )
    return " ".join(parts)


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
            "section 5 stability options (on CISPO)",
            [a for a in arms if a.name == "cispo" or a.kind == "stability"],
        ),
    ]
    return [(t, a) for t, a in panels if a]


def _figure(n_panels: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n_panels, figsize=(6.5 * n_panels, 4.2), sharey=True, squeeze=False)
    return plt, fig, axes[0]


def _save(plt, fig, path: Path, title: str) -> Path:
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return path


def plot_reward(results: Sequence[RunResult], arms: Sequence[Arm], path: Path, title: str) -> Path:
    """Training reward against step per RL arm: mean over seeds, band ± one std."""
    panels = [(t, [a for a in group if a.method == "rl"]) for t, group in _panels(arms)]
    plt, fig, axes = _figure(len(panels))
    for ax, (name, group) in zip(axes, panels, strict=True):
        for arm in group:
            curves = [_curve(r) for r in results if r.arm == arm.name]
            if curves and curves[0].size:
                _band(ax, np.arange(1, len(curves[0]) + 1), curves, arm.name)
        _style(ax, name, "mean sampled reward (band: ± 1 std over seeds)")
    return _save(plt, fig, path, title)


def plot_heldout(
    results: Sequence[RunResult], arms: Sequence[Arm], warm: PassRate, path: Path, title: str
) -> Path:
    """Held-out accuracy against step per arm (SFT continued included), the warm start dashed."""
    plt, fig, axes = _figure(len(_panels(arms)))
    for ax, (name, group) in zip(axes, _panels(arms), strict=True):
        for arm in group:
            runs = [r for r in results if r.arm == arm.name]
            if runs:
                steps = [s for s, _ in runs[0].heldout_curve]
                _band(ax, steps, [[p.rate for _, p in r.heldout_curve] for r in runs], arm.name)
        ax.axhline(warm.rate, color="grey", linestyle="--", linewidth=1, label="warm start")
        _style(ax, name, f"held-out accuracy, {warm.n} items (band: ± 1 std over seeds)")
    return _save(plt, fig, path, title)


def markdown(
    summaries: Sequence[ArmSummary],
    target: float,
    size: Size,
    warm: PassRate,
    *,
    window: int,
    source: str,
    n_train: int,
    seconds: float,
    images: Sequence[tuple[str, Path]] = (),
    embed: bool = False,
) -> str:
    seeds = len(summaries[0].seeds) if summaries else 0
    lines = [
        "# RL on the pipeline's math and logic items: does it learn, and CISPO vs DAPO vs GRPO",
        "",
        f"Size: {size.describe()}.",
        f"Data: {source}; {n_train} training items, {warm.n} held-out items (never trained on).",
        f"Warm start (shared by every run): held-out {warm}.",
        f"Wall time: {seconds / 60:.1f} min.",
        "",
        "| " + " | ".join(TABLE_HEADER) + " |",
        "|" + "---|" * len(TABLE_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summaries, warm, size.steps)]
    lines += [
        "",
        "Arms: " + "; ".join(f"**{s.arm.name}**: {s.arm.describe()}" for s in summaries) + ".",
        "",
        f"Held-out accuracy: greedy answers with reward 1, {warm.n} items. Mean ± SE over {seeds} seeds; the 95% "
        f"interval is Student's t over seeds. Final reward: mean sampled reward over the last {window} steps. "
        f"Steps to DAPO's held-out: first evaluated step (every {size.eval_every}) whose held-out accuracy "
        f"reaches {target:.3f}, DAPO's final.",
        "Clipped: tokens whose IS ratio left the clip range; dropped: tokens whose gradient the loss zeroed.",
        "",
        "**Goals:**",
        "",
        *[f"- {line}" for line in goals_check(summaries, warm)],
        "",
        "**The paper's claim (CISPO matches DAPO in half the steps):** " + claim_check(summaries, size.steps),
    ]
    for alt, image in images:
        if embed and image.exists():
            lines += ["", f"![{alt}](data:image/png;base64,{base64.b64encode(image.read_bytes()).decode()})"]
        else:
            lines += ["", f"![{alt}]({image.name})"]
    return "\n".join(lines) + "\n"


def write_outputs(
    output: Path,
    results: Sequence[RunResult],
    arms: Sequence[Arm],
    size: Size,
    warm: PassRate,
    **info,
) -> tuple[Path, str]:
    """DIR/steps.csv, summary.json, summary.md, reward.png and heldout.png; returns (folder, the markdown
    with the images embedded, for a Prefect artifact)."""
    window = max(1, min(5, size.steps // 3 or 1))
    output.mkdir(parents=True, exist_ok=True)
    write_steps_csv(step_rows(results), output / "steps.csv")
    summaries, target = summarise(results, arms, window)
    atomic_write_text(output / "summary.json", json.dumps(summary_json(summaries, warm), indent=1) + "\n")
    title = f"({len(summaries[0].seeds) if summaries else 0} seeds per arm)"
    images = [
        (
            "held-out accuracy against step",
            plot_heldout(results, arms, warm, output / "heldout.png", f"held-out accuracy {title}"),
        ),
        (
            "reward against step",
            plot_reward(results, arms, output / "reward.png", f"training reward {title}"),
        ),
    ]
    text = markdown(summaries, target, size, warm, window=window, images=images, **info)
    atomic_write_text(output / "summary.md", text)
    return output, markdown(summaries, target, size, warm, window=window, images=images, embed=True, **info)
