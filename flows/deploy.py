"""Deployments: the flows a person schedules and starts from the Prefect UI, with parameter forms.

`m1 ui` starts the Prefect server (SQLite by default; `--database postgresql+asyncpg://...`, or
PREFECT_API_DATABASE_CONNECTION_URL, puts it on PostgreSQL, for many workers and machines). `m1 deploy`
registers the deployments and serves them from this process (Prefect's `serve`: no work pool or image
needed on one machine). Every deployment takes the same
`PipelineConfig` the CLI uses, so the UI shows one form for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

import httpx

from flows.config import PipelineConfig
from flows.curriculum import load_curriculum
from flows.datasets import PRODUCERS, producer
from flows.errors import InputError, M1Error


def deployments(config: PipelineConfig, cron: str | None = None) -> list:
    """The pipeline (optionally on a schedule), each of its data subflows, its training parts, and logic
    calibration.

    `train-stage` is how a person reruns one curriculum stage on demand: pick the stage in the form.
    """
    # heavy: torch, transformers, prefect
    from flows.curate.flow import curate_flow
    from flows.logic_calibration import logic_calibration
    from flows.pipeline import pipeline
    from flows.train import train_curriculum, train_stage

    params = {"config": config.model_dump(mode="json")}
    first_stage = load_curriculum(config.train.curriculum).stages[0].name
    producers = [
        producer(kind).to_deployment(
            name=f"m1-{kind}",
            parameters=params,
            tags=["m1", "data"],
            description=f"Build {{run}}-{kind} into the dataset store ({PRODUCERS[kind]}).",
        )
        for kind in PRODUCERS
    ]
    return producers + [
        pipeline.to_deployment(
            name="m1-run",
            parameters=params,
            cron=cron,
            tags=["m1", "pipeline"],
            description="The whole DAG: curate -> task data -> SFT -> pass-rate -> curriculum -> eval -> report.",
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


_START_ONE = "start one with `m1 ui`, or point PREFECT_API_URL at a running one"


def serve_deployments(config: PipelineConfig, cron: str | None = None) -> None:
    """Serve the deployments from this process (Prefect's `serve`) until SIGTERM or Ctrl-C.

    On the way out Prefect's runner pauses every deployment's schedule through the API, with the
    client's retries and backoff: when the server went away first, that takes minutes. So a stop first
    asks the server's /health (2 s); when it does not answer, we say so and stop without the pause
    (there is nothing to pause it on).
    """
    # heavy: prefect
    from prefect.runner import Runner
    from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

    if not _server_reachable():  # registering the deployments would fail with a traceback
        raise M1Error(f"the Prefect server at {PREFECT_API_URL.value()} is unreachable; {_START_ONE}")
    served = deployments(config, cron)
    runner = Runner(name="m1-deploy", pause_on_shutdown=True)
    for d in served:
        runner.add_deployment(d)
    request = _StopRequest()
    # Runner.start() installs `runner.handle_sigterm` for SIGTERM: it must record the request too.
    runner.handle_sigterm = request
    signal.signal(signal.SIGTERM, request)
    signal.signal(signal.SIGINT, request)
    names = "\n".join(f"  {d.flow_name}/{d.name}" for d in served)
    where = PREFECT_UI_URL.value() or PREFECT_API_URL.value() or "the ephemeral Prefect server"
    serving = (
        f"m1 deploy: deployments being served (start runs from {where}, or with "
        f"`prefect deployment run NAME`; Ctrl-C or SIGTERM stops):\n{names}"
    )
    asyncio.run(_serve_until_stopped(runner, request, serving))


class _StopRequest:
    """The signal handler: it only records the stop, and the serving loop acts on it.

    An exception raised from a signal handler lands in whatever code runs at that moment; Prefect's
    runner start-up swallowed a KeyboardInterrupt that way, and the process kept serving. A second
    signal while the stop is under way exits at once.
    """

    def __init__(self) -> None:
        self.signals = 0
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __call__(self, signum: int, frame: object) -> None:
        self.signals += 1
        if self.signals > 1:
            print("m1 deploy: second signal; exiting now", file=sys.stderr, flush=True)
            os._exit(128 + signum)
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: we are on the way out already
                self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self) -> None:
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self.signals:  # came before the loop ran
            self._event.set()
        await self._event.wait()


async def _serve_until_stopped(runner, request: _StopRequest, serving_message: str) -> None:
    """Run ``runner`` until a stop is requested; ``serving_message`` once it polls for runs (a script
    waiting for it knows the deployments are registered and served)."""
    # heavy: prefect
    from prefect.settings import PREFECT_API_URL

    async def started() -> None:
        while not runner.started:
            await asyncio.sleep(0.05)
        print(serving_message, flush=True)

    serving = asyncio.ensure_future(runner.start())
    stopped = asyncio.ensure_future(request.wait())
    announced = asyncio.ensure_future(started())
    await asyncio.wait([serving, stopped], return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    announced.cancel()
    unreachable = f"the Prefect server at {PREFECT_API_URL.value()} is unreachable"
    if serving.done():  # the runner gave up on its own: start-up failed
        if serving.exception() is not None and not await asyncio.to_thread(_server_reachable):
            raise M1Error(f"{unreachable}; {_START_ONE}")
        return serving.result()
    if not await asyncio.to_thread(_server_reachable):
        print(
            f"m1 deploy: {unreachable}; stopping without pausing the schedules", file=sys.stderr, flush=True
        )
        runner.pause_on_shutdown = False
    if runner.started:  # cancels in-flight runs and the polling, then start() leaves the runner
        await runner.astop()
    else:  # still starting up (against a server that may be gone): nothing runs yet
        serving.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await serving


def _server_reachable(timeout_s: float = 2.0) -> bool:
    # heavy: prefect
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:  # an ephemeral server in this process: it goes when we go
        return True
    try:
        return httpx.get(f"{url.rstrip('/')}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def start_server(host: str, port: int, database: str | None = None) -> None:
    """Replace this process with `prefect server start`; analytics off, since the machine may be offline.

    ``database``: the server's database URL (``postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB``),
    checked before the server starts, so a wrong password or a stopped database is one clear line.
    """
    env = os.environ | {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    ui_api = _ui_api_url(host, port)
    if ui_api:
        env["PREFECT_UI_API_URL"] = ui_api
    if database:
        database = database_url(database)
        _check_database(database)
        for name in ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL"):
            env[name] = database
        print(f"Prefect database: {_masked(database)}")
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
    # heavy: prefect
    from prefect.settings import get_current_settings

    if "api_url" in get_current_settings().server.ui.model_fields_set:
        return None
    browser_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # a browser cannot call 0.0.0.0
    if ":" in browser_host:
        browser_host = f"[{browser_host}]"
    return f"http://{browser_host}:{port}/api"


def database_url(url: str) -> str:
    """A Prefect server database URL: PostgreSQL through asyncpg (``postgresql://`` is read as that), or
    SQLite through aiosqlite."""
    # heavy: sqlalchemy
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        parsed = None
    if parsed is not None and parsed.drivername in ("postgresql", "postgres", "postgresql+asyncpg"):
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    if parsed is not None and parsed.drivername == "sqlite+aiosqlite":
        return url
    raise InputError(
        f"--database {_masked(url)}: expected postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DATABASE "
        "(or sqlite+aiosqlite:///PATH)"
    )


def _masked(url: str) -> str:
    # heavy: sqlalchemy
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<not a database URL>"


def _check_database(url: str, timeout_s: float = 10.0) -> None:
    """Connect once with asyncpg (what the server will use); an unreachable database is an InputError."""
    # heavy: sqlalchemy
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.drivername != "postgresql+asyncpg":
        return

    async def connect() -> None:
        # lazy: optional extra [dist] (asyncpg)
        import asyncpg

        conn = await asyncpg.connect(
            parsed.set(drivername="postgresql").render_as_string(hide_password=False), timeout=timeout_s
        )
        await conn.close()

    try:
        asyncio.run(connect())
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the user's to fix, in one line
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot connect to the Prefect database {_masked(url)}: {reason}") from None
