"""`m1 run`, `m1 ui`, `m1 deploy`: the whole pipeline and its Prefect deployments."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
