"""Deployments: the flows a person schedules and starts from the Prefect UI, with parameter forms.

`m1 ui` starts the Prefect server (SQLite by default; set PREFECT_API_DATABASE_CONNECTION_URL to a
PostgreSQL URL to scale). `m1 deploy` registers the deployments and serves them from this process
(Prefect's `serve`: no work pool or image needed on one machine). Every deployment takes the same
`PipelineConfig` the CLI uses, so the UI shows one form for it.
"""

from __future__ import annotations

import os
import sys

from flows.config import PipelineConfig


def deployments(config: PipelineConfig, cron: str | None = None) -> list:
    from flows.pipeline import pipeline

    params = {"config": config.model_dump(mode="json")}
    return [
        pipeline.to_deployment(
            name="m1-run", parameters=params, cron=cron, tags=["m1", "pipeline"],
            description="The whole pipeline: curate -> model -> SFT -> CISPO -> eval -> report.",
        ),
    ]


def serve_deployments(config: PipelineConfig, cron: str | None = None) -> None:
    from prefect import serve

    serve(*deployments(config, cron))


def start_server(host: str, port: int) -> None:
    """Replace this process with `prefect server start`; analytics off, since the machine may be offline."""
    env = os.environ | {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    print(f"Prefect UI on http://{host}:{port}  (point runs at it: export PREFECT_API_URL=http://{host}:{port}/api)")
    os.execve(sys.executable, [sys.executable, "-m", "prefect", "server", "start", "--host", host,
                               "--port", str(port)], env)
