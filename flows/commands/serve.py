"""`m1 serve ...` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.errors import InputError

app = typer.Typer(no_args_is_help=True)


@app.command("rewards")
def rewards(
    host: Annotated[
        str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Scoring processes.")] = 2,
    item_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds per item, default and maximum.")
    ] = 30.0,
    max_body_mb: Annotated[
        float, typer.Option(min=0.01, help="Largest request body accepted (413 above).")
    ] = 8.0,
    max_items: Annotated[int, typer.Option(min=1, help="Most items per /score request (413 above).")] = 4096,
    plugin_dir: Annotated[
        list[Path] | None, typer.Option("--plugin-dir", help="Plugin directory (repeatable).")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Pipeline config (for plugin_dirs).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve every verifier plugin over HTTP: POST /score, GET /verifiers, /health, /metrics."""
    import uvicorn

    from flows.config import load_config
    from verifiers.service import ServiceSettings, create_app

    dirs = [str(d) for d in (load_config(config).plugin_dirs if config else [])] + [
        str(d) for d in plugin_dir or []
    ]
    for d in dirs:
        if not Path(d).is_dir():
            raise InputError(f"{d}: plugin directory not found")
    settings = ServiceSettings(
        workers=workers,
        item_timeout_s=item_timeout,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        max_items=max_items,
        plugin_dirs=dirs,
    )
    uvicorn.run(
        create_app(settings), host=host, port=port, log_level=log_level, access_log=log_level == "debug"
    )
