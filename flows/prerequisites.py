"""The machine prerequisites of `m1 run`'s subflows, checked before the first one starts.

Each producer module (flows/datasets.py `PRODUCERS`) declares what its flow needs from the machine in a
``PREREQUISITES`` tuple of names from `sandboxes.prerequisites` (``()`` when nothing). `m1 run`'s preflight
checks the union over the producers the config switches on, all at once, and fails with one line that
names each missing piece, who needs it, and the one command that installs them all; a producer's own
preflight (`m1 tasks code`, say) checks its own. The Makefile's `run` recipe runs the same scripts first.

tests/foundation/test_prerequisites.py holds every producer to its declaration: it runs each one with every
prerequisite absent and checks that the failure comes from the preflight, or that the flow used none.
"""

from __future__ import annotations

import importlib

from flows.datasets import KIND_SECTIONS, PRODUCERS, produced
from flows.errors import InputError
from sandboxes import prerequisites as machine
from sandboxes.prerequisites import get, install_command


class PrerequisitesMissing(InputError):
    """The machine lacks what the run needs; the message says what and the command that installs it."""


def declared(kind: str) -> tuple[str, ...]:
    """The prerequisites a producer's module declares (a module without the declaration is a bug)."""
    module = importlib.import_module(PRODUCERS[kind].split(":")[0])
    names = getattr(module, "PREREQUISITES", None)
    if not isinstance(names, tuple):
        raise TypeError(
            f"{module.__name__} must declare PREREQUISITES, a tuple of names from sandboxes.prerequisites "
            "(() when its flow needs nothing from the machine)"
        )
    for name in names:
        get(name)  # a typo is a KeyError naming the known ones
    return names


def needed(config) -> dict[str, tuple[str, ...]]:
    """Producer kind -> its prerequisites, for every producer this config switches on."""
    return {kind: declared(kind) for kind in PRODUCERS if produced(config, kind)}


def check(needs: dict[str, tuple[str, ...]]) -> None:
    """Raise PrerequisitesMissing naming everything missing for these producers (kind -> names)."""
    users: dict[str, list[str]] = {}
    for kind, names in needs.items():
        for name in names:
            users.setdefault(name, []).append(kind)
    absent = machine.missing(users)
    if not absent:
        return
    parts = [
        f"{get(name).what} for the {', '.join(users[name])} tasks: {why}" for name, why in absent.items()
    ]
    switches = sorted({f"{KIND_SECTIONS[k]}.enabled=false" for name in absent for k in users[name]})
    raise PrerequisitesMissing(
        f"missing on this machine: {'; '.join(parts)}. Install with `{install_command(absent)}` "
        f"(`make run` does), or switch off what needs it: {', '.join(switches)}"
    )
