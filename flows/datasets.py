"""The names of a run's datasets, defined once.

Each name belongs to the flow that writes it; every reader (the curricula, the DAG, the CLI) refers to
it through this module or, in a curriculum TOML, as ``{run}-<kind>``, which `dataset_name` resolves and
`check_kind` validates.

| kind       | written by                                   | what                                        |
|------------|----------------------------------------------|---------------------------------------------|
| `curated`  | flows/curate/flow.py (`m1 curate run`)       | cleaned, deduplicated, decontaminated items |
| `synlogic` | flows/tasks/logic.py                         | SynLogic-style logic puzzles                |
| `code`     | flows/tasks/code.py                          | programming problems with checked tests     |
| `swe`      | flows/swe/ (validation flow)                 | validated SWE repair tasks                  |
| `general`  | flows/genrm/ (general-task data)             | open-ended prompts with references          |
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from flows.errors import ConfigError

CURATED = "curated"
SYNLOGIC = "synlogic"
CODE = "code"
SWE = "swe"
GENERAL = "general"
KINDS = (CURATED, SYNLOGIC, CODE, SWE, GENERAL)
KIND_DOMAINS = {CURATED: "math", SYNLOGIC: "logic", CODE: "code", SWE: "swe", GENERAL: "general"}
# The config section whose `enabled` switches each kind's producing flow on or off (curation always runs).
KIND_SECTIONS = {SYNLOGIC: "logic", CODE: "code", SWE: "swe", GENERAL: "genrm"}
# Each generated kind's producing flow, "module:function" (imported only when used). Curated data comes
# from the user's sources through `m1 curate run`; these need nothing but the config.
PRODUCERS = {
    SYNLOGIC: "flows.tasks.logic:logic_tasks",
    CODE: "flows.tasks.code:code_tasks",
    SWE: "flows.swe.flow:swe_tasks",
    GENERAL: "flows.genrm.flow:general_tasks",
}


def dataset_name(run: str, kind: str) -> str:
    """``{run}-{kind}``: the store name of a run's dataset of this kind."""
    check_kind(kind)
    return f"{run}-{kind}"


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ConfigError(f"unknown dataset kind {kind!r} (known: {', '.join(KINDS)})")
    return kind


def produced(config, kind: str) -> bool:
    """Whether this run's config switches on the flow that writes datasets of this kind."""
    section = KIND_SECTIONS.get(check_kind(kind))
    return section is None or bool(getattr(getattr(config, section, None), "enabled", False))


def kind_of(template: str) -> str | None:
    """The kind a curriculum's ``{run}-<kind>`` entry names; None for a literal store name."""
    return template.removeprefix("{run}-") if template.startswith("{run}-") else None


def resolve(template: str, run: str) -> str:
    """A curriculum's dataset entry: ``{run}-<kind>`` becomes this run's name for that kind (checked);
    anything else is taken as a literal store name (a user's own dataset)."""
    if template.startswith("{run}-"):
        return dataset_name(run, template.removeprefix("{run}-"))
    return template.replace("{run}", run)


def producer(kind: str) -> Callable[..., dict[str, Any]]:
    """The flow that writes this kind's dataset."""
    module, name = PRODUCERS[kind].split(":")
    return getattr(importlib.import_module(module), name)
