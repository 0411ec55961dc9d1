"""`m1 bench <name>`: every module in this package registers its benchmark on `app`.

A benchmark measures its baseline in the same run and prints ratios, never absolute targets.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(no_args_is_help=True)

for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_mod.name}")
