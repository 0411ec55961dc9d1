"""`m1 verify` and `m1 verifiers list`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    verifiers_app = typer.Typer(no_args_is_help=True)
    app.add_typer(verifiers_app, name="verifiers", help="Reward verifier plugins.")
