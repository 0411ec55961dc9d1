"""What a stage leaves to read besides its curves: sampled responses with their rewards per step (a
JSONL file and a Prefect table), and optionally the step metrics as TensorBoard events.

Not a flow: what the stage flow writes beside its checkpoints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flows.atomic import atomic_write_text
from flows.errors import ConfigError

PREVIEW = 300  # characters of prompt and response kept per sample


class SampleLog:
    """Step hook: the first ``per_step`` responses of each step, decoded, with item id and reward.

    Appends to ``path``; on construction drops lines of steps after ``resumed_step``, so a stage resumed
    from a checkpoint does not log the replayed steps twice."""

    def __init__(self, path: Path, tokenizer, per_step: int, resumed_step: int = 0):
        self.path, self.tokenizer, self.per_step = path, tokenizer, per_step
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = [line for line in self.lines() if json.loads(line)["step"] <= resumed_step]
        atomic_write_text(path, "".join(line + "\n" for line in kept))  # a kill here loses no line

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def __call__(self, trainer, batch) -> None:
        rows = []
        for group in batch.sampled_groups:
            item = trainer.pool.items[group.index]
            for response, reward, finish in zip(
                group.responses, group.rewards, group.finish_reasons, strict=True
            ):
                if len(rows) >= self.per_step:
                    break
                rows.append(
                    {
                        "step": trainer.step + 1,
                        "id": item.get("id"),
                        "domain": item.get("domain"),
                        "task": item.get("task"),
                        "prompt": str(item.get("prompt", ""))[:PREVIEW],
                        "response": self.tokenizer.decode(response, skip_special_tokens=True)[:PREVIEW],
                        "reward": round(float(reward), 4),
                        "finish": finish,
                    }
                )
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)

    @staticmethod
    def read(path: str | Path) -> list[dict[str, Any]]:
        path = Path(path)
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tensorboard_writer(folder: Path):
    """A SummaryWriter, or a clear error when the optional `tensorboard` package is missing."""
    try:
        # heavy: torch
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ConfigError(
            "train.tensorboard needs the tensorboard package: pip install 'm1-pipeline[tb]'"
        ) from None
    return SummaryWriter(str(folder))


def write_scalars(writer, metrics: dict[str, float]) -> None:
    step = int(metrics["step"])
    for key, value in metrics.items():
        if key != "step" and isinstance(value, int | float):
            writer.add_scalar(key, value, step)
    writer.flush()
