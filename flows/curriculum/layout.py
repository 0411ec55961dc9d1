"""Where a run's training outputs live: ``$M1_HOME/runs/<run>/train/{base,<stage>}/``.

Not a flow: where the training flows write, one definition for their modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flows.config import PipelineConfig
from flows.store import DatasetStore


@dataclass
class StagePaths:
    root: Path

    @property
    def checkpoints(self) -> Path:
        """Resumable trainer state, one folder per saved step."""
        return self.root / "checkpoints"

    @property
    def final(self) -> Path:
        """The stage's model + tokenizer (HF format): the next stage starts here."""
        return self.root / "final"


def train_root(config: PipelineConfig) -> Path:
    return DatasetStore(config.home).root / "runs" / config.name / "train"


def stage_paths(config: PipelineConfig, stage: str) -> StagePaths:
    return StagePaths(train_root(config) / stage)
