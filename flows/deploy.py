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
    """The pipeline (optionally on a schedule), its curation and training parts, and logic calibration.

    `train-stage` is how a person reruns one curriculum stage on demand: pick the stage in the form.
    """
    from flows.curate.flow import curate_flow
    from flows.curriculum import load_curriculum
    from flows.logic_calibration import logic_calibration
    from flows.pipeline import pipeline
    from flows.train import train_curriculum, train_stage

    params = {"config": config.model_dump(mode="json")}
    first_stage = load_curriculum(config.train.curriculum).stages[0].name
    return [
        pipeline.to_deployment(
            name="m1-run",
            parameters=params,
            cron=cron,
            tags=["m1", "pipeline"],
            description="The whole pipeline: curate -> model -> SFT -> CISPO -> eval -> report.",
        ),
        curate_flow.to_deployment(
            name="m1-curate",
            parameters=params,
            tags=["m1", "data"],
            description="Data curation into the dataset store: clean, dedup, decontaminate, answers, pass rate.",
        ),
        train_stage.to_deployment(
            name="m1-train-stage",
            parameters=params | {"stage": first_stage, "restart": False},
            tags=["m1", "train"],
            description="Rerun one curriculum stage from the previous stage's final model (resumes by default).",
        ),
        train_curriculum.to_deployment(
            name="m1-train-curriculum",
            parameters=params,
            tags=["m1", "train"],
            description="Every curriculum stage in order.",
        ),
        logic_calibration.to_deployment(
            name="m1-logic-calibration",
            tags=["m1", "logic"],
            description="pass@k per logic task and difficulty for a policy; stores each task's training band.",
        ),
    ]


def serve_deployments(config: PipelineConfig, cron: str | None = None) -> None:
    from prefect import serve

    serve(*deployments(config, cron))


def start_server(host: str, port: int) -> None:
    """Replace this process with `prefect server start`; analytics off, since the machine may be offline."""
    env = os.environ | {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    ui_api = _ui_api_url(host, port)
    if ui_api:
        env["PREFECT_UI_API_URL"] = ui_api
    print(
        f"Prefect UI on http://{host}:{port}  (point runs at it: export PREFECT_API_URL=http://{host}:{port}/api)"
    )
    os.execve(
        sys.executable,
        [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)],
        env,
    )


def _ui_api_url(host: str, port: int) -> str | None:
    """The API address the UI's page calls, unless the user configured one (a reverse proxy, say).

    Prefect hands the UI `PREFECT_API_URL` or else `PREFECT_SERVER_API_HOST/PORT`, never the `--port` the
    server was started with, so `m1 ui --port 4300` would serve a UI that calls :4200 and shows "Can't
    connect to Server API" (PrefectHQ/prefect#18895, #22986).
    """
    from prefect.settings import get_current_settings

    if "api_url" in get_current_settings().server.ui.model_fields_set:
        return None
    browser_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # a browser cannot call 0.0.0.0
    if ":" in browser_host:
        browser_host = f"[{browser_host}]"
    return f"http://{browser_host}:{port}/api"
