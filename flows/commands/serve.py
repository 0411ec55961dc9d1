"""`m1 serve ...` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.errors import InputError
from flows.serve_auth import check_exposure, protect

app = typer.Typer(no_args_is_help=True)

# Every service another machine may reach takes these two (see flows/serve_auth.py).
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="M1_API_KEY",
        show_envvar=True,
        help="Require 'Authorization: Bearer KEY' on every request but /health (clients: OPENAI_API_KEY).",
    ),
]
InsecureOpt = Annotated[
    bool, typer.Option("--insecure", help="Allow a non-loopback --host without an API key.")
]


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
    api_key: ApiKeyOpt = None,
    insecure: InsecureOpt = False,
) -> None:
    """Serve every verifier plugin over HTTP: POST /score, GET /verifiers, /health, /metrics."""
    # heavy: fastapi, uvicorn, pebble; not at m1 start-up
    import uvicorn

    from flows.config import load_config
    from verifiers.service import ServiceSettings, create_app

    key = check_exposure(host, api_key, insecure, command="m1 serve rewards")
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
        protect(create_app(settings), key),
        host=host,
        port=port,
        log_level=log_level,
        access_log=log_level == "debug",
    )


@app.command("model")
def model(
    checkpoint: Annotated[Path, typer.Option("--checkpoint", help="m1model checkpoint folder (HF format).")],
    host: Annotated[
        str, typer.Option(help="Interface to bind; 0.0.0.0 to serve other machines.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8001,
    model_name: Annotated[
        str | None, typer.Option(help="Name in /v1/models and replies (default: the folder's name).")
    ] = None,
    max_num_seqs: Annotated[
        int, typer.Option(min=1, help="Requests generating at once (the engine's slots).")
    ] = 64,
    max_num_batched_tokens: Annotated[
        int, typer.Option(min=1, help="Tokens per engine step: decodes plus prefill chunks.")
    ] = 1024,
    kv_cache_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="KV cache positions per softmax layer (default 65536)."),
    ] = None,
    max_model_len: Annotated[
        int | None, typer.Option(min=2, help="Prompt + completion tokens (default: the model's).")
    ] = None,
    threads: Annotated[int, typer.Option(min=0, help="torch intra-op threads (0: torch's default).")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    api_key: ApiKeyOpt = None,
    insecure: InsecureOpt = False,
) -> None:
    """Serve an m1model checkpoint over the OpenAI API: /v1/completions, /v1/chat/completions, /v1/models,
    /metrics; concurrent requests share the engine's steps (continuous batching)."""
    # heavy: torch, transformers, fastapi; not at m1 start-up
    import torch
    import uvicorn

    from m1model.policy import CheckpointError, load_policy
    from m1model.serving import ServerSettings, create_app

    key = check_exposure(host, api_key, insecure, command="m1 serve model")
    if threads:
        torch.set_num_threads(threads)
    try:
        policy, tokenizer = load_policy(checkpoint)
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    settings = ServerSettings(
        model_name=model_name or checkpoint.resolve().name,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        kv_cache_tokens=kv_cache_tokens,
        max_model_len=max_model_len,
    )
    uvicorn.run(
        protect(create_app(policy, tokenizer, settings), key),
        host=host,
        port=port,
        log_level=log_level,
        access_log=log_level == "debug",
    )
