"""The algorithms experiment's outputs: steps.csv, summary.json, summary.md (the table: mean, standard
error and 95% interval over seeds), heldout.csv (each run's held-out numbers), reward.png and heldout.png
(the numbers: flows/experiments/estimates.py; the plots: flows/experiments/plots.py).

Definitions (stated in summary.md too):

- held-out accuracy: the share of the held-out items (never trained on) whose greedy answer earns
  reward 1, measured by the pipeline's one evaluation; "before" is the shared warm start;
- sampled held-out accuracy (mean@k): the share of k answers per held-out item, sampled at temperature
  1 as training samples them, that earn reward 1, at the warm start and at the end of each run: the
  quantity the policy gradient maximises, where greedy decoding reads only the distribution's mode;
- mean ± SE: over seeds, SE = sample std / sqrt(seeds); the 95% interval is Student's t over seeds;
- reward: the mean reward of every response sampled in a step (all dynamic-sampling rounds included, so
  arms with and without dynamic sampling are scored on the same footing); final reward: its mean over
  the last `window` steps;
- steps to target: the first evaluated step at which a run's held-out accuracy reaches DAPO's final
  held-out accuracy (mean over its seeds): the paper's "CISPO matches DAPO in half the steps", measured
  on held-out accuracy rather than training reward; 0 when the warm start already meets it;
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
from pathlib import Path

import numpy as np

from flows.atomic import atomic_path, atomic_write_text
from flows.experiments.arms import BASELINE, Arm, Size
from flows.experiments.estimates import ArmSummary, Estimate, summarise, summary_json, target_arm
from flows.experiments.plots import plot_heldout, plot_reward
from flows.experiments.runs import RunResult
from m1model.rl.evaluation import PassRate, SampledPassRate

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


HELDOUT_COLUMNS = (
    "arm",
    "seed",
    "greedy_before",
    "greedy_after",
    "sampled_before",
    "sampled_after",
    "samples",
)


def write_heldout_csv(results: Sequence[RunResult], warm_sampled: SampledPassRate | None, path: Path) -> None:
    """One row per run: its held-out accuracy greedy and sampled (mean@k), before (the warm start) and after."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HELDOUT_COLUMNS)
        for r in results:
            sampled = r.sampled_after
            writer.writerow(
                [
                    r.arm,
                    r.seed,
                    r.heldout_curve[0][1].rate,
                    r.heldout_after,
                    "" if warm_sampled is None else warm_sampled.rate,
                    "" if sampled is None else sampled.rate,
                    "" if sampled is None else sampled.samples,
                ]
            )


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
    "sampled held-out after (mean@{samples})",
    "final reward",
    "steps to {target}'s held-out",
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
            s.sampled.text(),
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
            f"{'met' if c.mean >= r.mean else 'not met'} (goal: CISPO >= RFT; {_gap_text(c, r)})."
            + _sampled_comparison(by["cispo"].sampled, by["rft"].sampled, "RFT")
        )
    if "cispo" in by and "sft" in by:
        c, f = by["cispo"].after, by["sft"].after
        lines.append(
            f"For reference, SFT continued on gold answers with the same optimiser steps ends at {f.mean:.3f}."
        )
    return lines


def _difference(a: Estimate, b: Estimate) -> tuple[float, float]:
    """a - b in the mean, and its standard error over seeds (0 with one seed)."""
    return a.mean - b.mean, math.sqrt((a.se or 0.0) ** 2 + (b.se or 0.0) ** 2)


def _gap_text(a: Estimate, b: Estimate) -> str:
    gap, noise = _difference(a, b)
    within = "within" if abs(gap) < 2 * noise or noise == 0 else "beyond"
    return f"difference {gap:+.3f}, standard error {noise:.3f}: {within} two standard errors"


def _sampled_comparison(cispo: Estimate, other: Estimate, name: str) -> str:
    """CISPO against another arm on sampled held-out accuracy ("" when the run sampled none)."""
    if not cispo.values or not other.values:
        return ""
    order = f"CISPO >= {name}" if cispo.mean >= other.mean else f"CISPO < {name}"
    return (
        f" Sampled at temperature 1 (mean@k, from the distribution training samples): CISPO "
        f"{cispo.mean:.3f} vs {name} {other.mean:.3f}, {order} ({_gap_text(cispo, other)})."
    )


def seeds_to_separate(gap: float, noise: float, seeds: int) -> str:
    """How many seeds per arm would put a difference this large two standard errors from zero, if the
    seeds' spread stayed as measured: SE shrinks as 1/sqrt(seeds), so seeds x (2 SE / gap)^2."""
    if noise == 0:
        return (
            "The seeds agree exactly, so their spread says nothing about how many more would separate them."
        )
    if gap == 0:
        return "With equal means, no number of seeds would separate them."
    needed = math.ceil(seeds * (2 * noise / abs(gap)) ** 2 - 1e-9)  # 2.0000000001 seeds are 2
    return (
        f"At this size, separating a difference of {abs(gap):.3f} at two standard errors would take about "
        f"{needed} seeds per arm, if the spread over seeds stays as measured."
    )


def claim_check(summaries: Sequence[ArmSummary], steps: int) -> str:
    """What the run says about 'CISPO reaches DAPO's final held-out accuracy in half the steps'."""
    by = {s.arm.name: s for s in summaries}
    if "cispo" not in by or BASELINE not in by:
        return "The claim needs both a cispo and a dapo arm."
    cispo, dapo = by["cispo"], by[BASELINE]
    gap, noise = _difference(cispo.after, dapo.after)
    parts = [
        f"Final held-out accuracy: CISPO {cispo.after.mean:.3f} vs DAPO {dapo.after.mean:.3f} "
        f"(difference {gap:+.3f}, standard error {noise:.3f} over seeds)."
    ]
    c_hit = [r for r in cispo.reach if r is not None]
    d_hit = [r for r in dapo.reach if r is not None]
    if d_hit and not np.mean(d_hit):
        parts.append(
            "DAPO's warm start already meets its own final held-out accuracy (steps to target 0): a run that "
            "starts at the target says nothing about 'CISPO matches DAPO in half the steps'."
        )
    elif c_hit and d_hit:
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
        parts.append(seeds_to_separate(gap, noise, len(cispo.seeds)))
    return " ".join(parts) + _sampled_comparison(cispo.sampled, dapo.sampled, "DAPO")


def markdown(
    summaries: Sequence[ArmSummary],
    target: float,
    size: Size,
    warm: PassRate,
    *,
    window: int,
    warm_sampled: SampledPassRate | None = None,
    source: str,
    n_train: int,
    seconds: float,
    images: Sequence[tuple[str, Path]] = (),
    embed: bool = False,
) -> str:
    seeds = len(summaries[0].seeds) if summaries else 0
    name = target_arm([s.arm for s in summaries]).upper()
    lines = [
        "# RL on the pipeline's math and logic items: does it learn, and CISPO vs DAPO vs GRPO",
        "",
        f"Size: {size.describe()}.",
        f"Data: {source}; {n_train} training items, {warm.n} held-out items (never trained on).",
        f"Warm start (shared by every run): held-out {warm}"
        + (f"; sampled at temperature 1 {warm_sampled}." if warm_sampled is not None else "."),
        f"Wall time: {seconds / 60:.1f} min.",
        "",
        "| "
        + " | ".join(TABLE_HEADER).format(target=name, samples=warm_sampled.samples if warm_sampled else "k")
        + " |",
        "|" + "---|" * len(TABLE_HEADER),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(summaries, warm, size.steps)]
    lines += [
        "",
        "Arms: " + "; ".join(f"**{s.arm.name}**: {s.arm.describe()}" for s in summaries) + ".",
        "",
        f"Held-out accuracy: greedy answers with reward 1, {warm.n} items. Mean ± SE over {seeds} seeds; the 95% "
        f"interval is Student's t over seeds. Final reward: mean sampled reward over the last {window} steps. "
        f"Steps to {name}'s held-out: first evaluated step (every {size.eval_every}) whose held-out "
        f"accuracy reaches {target:.3f}, {name}'s final."
        + (
            f" Sampled held-out after: {warm_sampled.samples} answers per item sampled at temperature 1 "
            "(as training samples), the share with reward 1 (mean@k), at the end of each run."
            if warm_sampled is not None
            else ""
        ),
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
    warm_sampled: SampledPassRate | None = None,
    **info,
) -> tuple[Path, str]:
    """DIR/steps.csv, summary.json, summary.md, heldout.csv, reward.png and heldout.png; returns (folder,
    the markdown with the images embedded, for a Prefect artifact)."""
    window = max(1, min(5, size.steps // 3 or 1))
    output.mkdir(parents=True, exist_ok=True)
    write_steps_csv(step_rows(results), output / "steps.csv")
    write_heldout_csv(results, warm_sampled, output / "heldout.csv")
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

    def render(embed: bool) -> str:
        return markdown(
            summaries,
            target,
            size,
            warm,
            window=window,
            warm_sampled=warm_sampled,
            images=images,
            embed=embed,
            **info,
        )

    atomic_write_text(output / "summary.md", render(embed=False))
    return output, render(embed=True)
