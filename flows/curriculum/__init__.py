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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from flows.datasets import KIND_DOMAINS, check_kind, kind_of, resolve
from flows.errors import ConfigError
from verifiers.scoring import DEFAULT_VERIFIERS

BUNDLED = Path(__file__).resolve().parent


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
    max_difficulty: float | None = Field(None, description="drop items whose metadata difficulty is higher")
    dynamic_weights: bool = Field(
        True, description="move each mixture key's weight with its recent pass rate (section 4.3)"
    )
    weight_floor: float = Field(
        0.2, ge=0, le=1, description="share of its configured weight a key keeps at pass rate 0 or 1"
    )
    pass_rate_steps: int = Field(4, ge=1, description="steps over which a key's recent pass rate is taken")
    raise_difficulty_above: float | None = Field(
        None,
        gt=0,
        le=1,
        description="raise a key's minimum difficulty by one when its pass rate exceeds this",
    )
    overrides: dict[str, Any] = Field(default_factory=dict, description="TrainConfig fields for this stage")
    requires: list[str] = Field(
        default_factory=list,
        description="dataset kinds this stage exists for (e.g. general): absent when their flow is switched off",
    )

    @model_validator(mode="after")
    def _check(self) -> Stage:
        if not self.mixture or any(w < 0 for w in self.mixture.values()) or sum(self.mixture.values()) <= 0:
            raise ValueError("mixture needs at least one positive weight and no negative ones")
        if self.min_new_tokens is not None and self.min_new_tokens > self.max_new_tokens:
            raise ValueError("min_new_tokens must not exceed max_new_tokens")
        if (
            None not in (self.min_difficulty, self.max_difficulty)
            and self.min_difficulty > self.max_difficulty
        ):
            raise ValueError("min_difficulty must not exceed max_difficulty")
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
    eval_verifiers: dict[str, str] = Field(
        default_factory=dict,
        description="domain -> verifier that scores held-out evaluation where it is not the training one "
        "(the general items: `general-rule`, the rule grade their judge never sees)",
    )
    overrides: dict[str, Any] = Field(
        default_factory=dict, description="TrainConfig fields for every stage (a stage's own win)"
    )
    stages: list[Stage]
    switched_off: list[str] = Field(default_factory=list, description="stages this run's config switches off")

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
        if stage in self.switched_off:
            raise ConfigError(f"stage {stage!r} of curriculum {self.name!r} is switched off by this config")
        raise ConfigError(
            f"curriculum {self.name!r} has no stage {stage!r} (stages: {', '.join(self.names)})"
        )

    def verifier_names(self, evaluation: bool = False) -> dict[str, str]:
        """domain -> verifier plugin: training's, or with ``evaluation`` held-out evaluation's."""
        names = dict(self.verifiers or DEFAULT_VERIFIERS)
        return names | self.eval_verifiers if evaluation else names

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def dataset_names(self, run: str) -> list[str]:
        return [resolve(d, run) for d in self.datasets]

    def active(
        self,
        produced: Callable[[str], bool],
        why: Callable[[str], str] | None = None,
        trained: Callable[[str], bool] = lambda kind: True,
    ) -> tuple[Curriculum, list[str]]:
        """This curriculum without what a run switches off: datasets whose producing flow is disabled
        (``produced(kind)`` is False; ``why(kind)`` says why, "its flow is switched off" by default), the
        mixture keys of the domains only they supply, and stages left with no mixture at all. A kind that
        is produced but not ``trained`` on (the general tasks when the run's judge fails its gate) keeps
        its dataset (the base's warm start and the held-out evaluation read it) and loses its stages and
        mixture keys. Returns the pruned curriculum and a line per thing removed."""
        notes: list[str] = []
        datasets, dropped_domains = [], set()
        for d in self.datasets:
            kind = kind_of(d)
            if kind is not None and not produced(kind):
                notes.append(f"dataset {d}: {why(kind) if why else 'its flow is switched off'}")
                dropped_domains.add(KIND_DOMAINS.get(kind, kind))
            else:
                datasets.append(d)
                if kind is not None and not trained(kind):
                    dropped_domains.add(KIND_DOMAINS.get(kind, kind))
        stages = []
        for stage in self.stages:
            if off := [k for k in stage.requires if not produced(check_kind(k))]:
                notes.append(f"stage {stage.name}: switched off (needs {', '.join(off)})")
                continue
            if untrained := [k for k in stage.requires if not trained(check_kind(k))]:
                notes.append(f"stage {stage.name}: switched off (no training on {', '.join(untrained)})")
                continue
            mixture = {k: w for k, w in stage.mixture.items() if k.split("/")[0] not in dropped_domains}
            if mixture != stage.mixture:
                gone = sorted(set(stage.mixture) - set(mixture))
                notes.append(f"stage {stage.name}: mixture without {', '.join(gone)}")
            if mixture and sum(mixture.values()) > 0:
                stages.append(stage.model_copy(update={"mixture": mixture}))
            else:
                notes.append(f"stage {stage.name}: switched off (nothing left in its mixture)")
        if not stages:
            raise ConfigError(f"curriculum {self.name}: every stage is switched off by this config")
        off = [s.name for s in self.stages if s.name not in {t.name for t in stages}]
        return self.model_copy(update={"datasets": datasets, "stages": stages, "switched_off": off}), notes


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
