"""Curriculum stages as data: each stage names its task mixture, generation length window, budget and
algorithm overrides. Bundled curricula are TOML files in this folder (`tiny`, `m1`); a user's own file
is passed by path. Stage k starts from stage k-1's final checkpoint, so any stage can be rerun alone.

The M1 paper (section 4.3) starts with rule-verified reasoning tasks and mixes general tasks in later
with dynamic weights; section 5 grows the generation window when the 99th percentile of response
lengths approaches the current limit. Both are expressible here: `mixture` per stage, and
`min_new_tokens`..`max_new_tokens` as the window the trainer widens within a stage.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from flows.errors import ConfigError

BUNDLED = Path(__file__).resolve().parent
DEFAULT_VERIFIERS = {"math": "math", "logic": "logic", "code": "code"}  # domain -> verifier plugin


class Stage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    mixture: dict[str, float] = Field(
        description="'domain' or 'domain/task' -> sampling weight; the most specific key wins for an item"
    )
    steps: int = Field(ge=0, description="RL steps (generation batches) in this stage")
    min_new_tokens: int | None = Field(
        None, ge=1, description="start of the generation window (default: max)"
    )
    max_new_tokens: int = Field(ge=1, description="end of the generation window")
    window_step: int = Field(
        0, ge=0, description="tokens added to the window when p99 length nears it; 0: fixed"
    )
    min_difficulty: float | None = Field(None, description="drop items whose metadata difficulty is lower")
    overrides: dict[str, Any] = Field(default_factory=dict, description="TrainConfig fields for this stage")

    @model_validator(mode="after")
    def _check(self) -> Stage:
        if not self.mixture or any(w < 0 for w in self.mixture.values()) or sum(self.mixture.values()) <= 0:
            raise ValueError("mixture needs at least one positive weight and no negative ones")
        if self.min_new_tokens is not None and self.min_new_tokens > self.max_new_tokens:
            raise ValueError("min_new_tokens must not exceed max_new_tokens")
        return self

    @property
    def start_new_tokens(self) -> int:
        return self.min_new_tokens or self.max_new_tokens


class Curriculum(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    datasets: list[str] = Field(
        description="dataset-store names to draw items from; '{run}' is replaced by the run name"
    )
    verifiers: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_VERIFIERS),
        description="domain -> verifier plugin name (see `m1 verifiers list`)",
    )
    stages: list[Stage]

    @model_validator(mode="after")
    def _unique(self) -> Curriculum:
        if not self.stages:
            raise ValueError("a curriculum needs at least one stage")
        names = [s.name for s in self.stages]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"stage names must be unique, repeated: {', '.join(dup)}")
        return self

    def index(self, stage: str) -> int:
        for i, s in enumerate(self.stages):
            if s.name == stage:
                return i
        raise ConfigError(
            f"curriculum {self.name!r} has no stage {stage!r} (stages: {', '.join(self.names)})"
        )

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def dataset_names(self, run: str) -> list[str]:
        return [d.replace("{run}", run) for d in self.datasets]


def bundled() -> list[str]:
    return sorted(p.stem for p in BUNDLED.glob("*.toml"))


def curriculum_path(ref: str) -> Path:
    """A bundled curriculum's name (``tiny``) or a path to a TOML file."""
    if ref in bundled():
        return BUNDLED / f"{ref}.toml"
    path = Path(ref)
    if not path.exists():
        raise ConfigError(
            f"{ref}: curriculum not found (bundled: {', '.join(bundled())}; or give a .toml path)"
        )
    return path


def load_curriculum(ref: str) -> Curriculum:
    path = curriculum_path(ref)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed toml: {exc}") from None
    try:
        return Curriculum.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(p) for p in e["loc"]) or "curriculum"
        raise ConfigError(f"{path}: {where}: {e['msg']}") from None
