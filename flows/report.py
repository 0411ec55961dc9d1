"""The run report: what each filter removed, how training went, pass rate before and after."""

from __future__ import annotations

from dataclasses import dataclass, field

from flows.store import StepCount


@dataclass
class RunReport:
    name: str
    steps: list[StepCount] = field(default_factory=list)
    planted: dict[str, int] = field(default_factory=dict)  # step -> planted rows it should remove
    quarantined: int = 0
    datasets: list[str] = field(default_factory=list)
    sft_losses: list[float] = field(default_factory=list)
    rl_metrics: list[dict[str, float]] = field(default_factory=list)
    pass_rate_before: float | None = None
    pass_rate_after: float | None = None
    eval_items: int = 0
    checkpoint: str = ""
    weights_changed: bool = False

    def to_markdown(self) -> str:
        lines = [
            f"# m1 run report: {self.name}",
            "",
            "## Data curation",
            "",
            "| step | rows in | rows out | removed | planted | why |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for s in self.steps:
            planted = self.planted.get(s.step)
            lines.append(
                f"| {s.step} | {s.rows_in} | {s.rows_out} | {s.removed} | "
                f"{'' if planted is None else planted} | {s.reason} |"
            )
        lines += [
            "",
            f"Quarantined at ingest: {self.quarantined}.",
            f"Datasets: {', '.join(self.datasets) or '-'}",
            "",
            "## Training",
            "",
        ]
        if self.sft_losses:
            lines.append(
                f"SFT warm start: {len(self.sft_losses)} steps, loss {self.sft_losses[0]:.3f} -> "
                f"{self.sft_losses[-1]:.3f}."
            )
        if self.rl_metrics:
            keys = [
                k
                for k in ("loss", "reward_mean", "is_weight_mean", "clip_fraction", "response_len")
                if k in self.rl_metrics[0]
            ]
            lines += ["", "| RL step | " + " | ".join(keys) + " |", "|---:|" + "---:|" * len(keys)]
            for i, m in enumerate(self.rl_metrics):
                lines.append(f"| {i + 1} | " + " | ".join(f"{m[k]:.4g}" for k in keys) + " |")
        lines += [
            "",
            f"Weights changed by training: {'yes' if self.weights_changed else 'NO'}.",
            f"Checkpoint: `{self.checkpoint}`",
            "",
            "## Evaluation",
            "",
        ]
        if self.pass_rate_before is not None:
            lines.append(
                f"Pass rate on {self.eval_items} held-out items: {self.pass_rate_before:.1%} before "
                f"training, {self.pass_rate_after:.1%} after."
            )
        return "\n".join(lines) + "\n"
