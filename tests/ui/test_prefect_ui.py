"""The Prefect UI in a real browser: a person schedules and inspects the project's flows there.

`m1 ui --port P` starts the server, `m1 deploy --cron ...` registers and serves the deployments (with a
tiny config so runs finish in seconds), and ui_check.mjs drives headless Chromium through the UI:
deployments listed, m1-run's schedule and parameter form, a pipeline run started from the form, its
report artifact, then one curriculum stage rerun on demand with its own report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from m1model.serving import free_port
from tests.processes import started, stop, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

UI_DIR = Path(__file__).parent
ROOT = UI_DIR.parents[1]
CHROMIUM = Path("/usr/bin/chromium")
M1 = [sys.executable, "-c", "from flows.cli import main; main()"]
DEPLOYMENTS = {"m1-run", "m1-curate", "m1-train-stage", "m1-train-curriculum", "m1-logic-calibration"}
# What `m1 deploy` registers as every form's defaults: the whole DAG in seconds on 2 CPU cores.
TINY = [
    "data.n_problems=40",
    "train.sft_steps=2",
    "train.batch_size=4",
    "train.prompts_per_step=4",
    "train.group_size=4",
    "train.max_sampling_rounds=1",
    "eval.n_items=4",
    "model.num_hidden_layers=2",
    "model.num_local_experts=2",
    "model.num_experts_per_tok=1",
    "swe.enabled=false",
    "genrm.enabled=false",  # judge training: minutes, and tested on its own (tests/genrm/test_flow.py)
    "logic.n_items=24",
    "code.n_problems=8",
    "code.tests_per_problem=3",
]
RUN_NAME = "ui-check"  # ui_check.mjs types it into the run forms


def _tools_ready() -> bool:
    return (
        CHROMIUM.exists()
        and shutil.which("node") is not None
        and (UI_DIR / "node_modules" / "playwright-core" / "package.json").exists()
    )


@pytest.fixture(scope="module")
def node() -> str:
    """Chromium, Node and playwright-core: `make test` installs them (scripts/ui-tools.sh); a bare run tries
    too. The script also checks that Chromium starts (a second or two when everything is there)."""
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ui-tools.sh")], capture_output=True, text=True, timeout=900
    )
    if proc.returncode or not _tools_ready():
        pytest.skip(f"browser unavailable: {(proc.stderr or proc.stdout).strip()[-500:]}")
    return shutil.which("node")


def test_schedule_run_and_inspect_flows_in_the_prefect_ui(node, tmp_path, m1_home):
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = os.environ | {
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)  # the UI must find its API from `--port` alone, as for a user
    server_env = env | {"PREFECT_API_LOG_RETRYABLE_ERRORS": "true"}  # why it answered 503, in server.log
    shots = tmp_path / "screenshots"
    shots.mkdir()

    with started([*M1, "ui", "--port", str(port)], tmp_path / "server.log", server_env) as server:
        wait_until(
            lambda: httpx.get(f"{api}/health", timeout=5).json() is True,
            "m1 ui",
            server,
            tmp_path / "server.log",
        )

        client_env = env | {
            "PREFECT_API_URL": api,
            "PREFECT_RUNNER_POLL_FREQUENCY": "2",
        }  # runs start in ~2 s
        deploy = [*M1, "deploy", "--cron", "0 2 * * *", *(a for s in TINY for a in ("--set", s))]
        with started(deploy, tmp_path / "deploy.log", client_env) as serving:

            def registered() -> bool:
                found = httpx.post(f"{api}/deployments/filter", json={}, timeout=5).json()
                return DEPLOYMENTS <= {d["name"] for d in found}

            wait_until(registered, "m1 deploy", serving, tmp_path / "deploy.log")

            check = subprocess.Popen(
                [node, str(UI_DIR / "ui_check.mjs"), f"http://127.0.0.1:{port}", str(shots)],
                cwd=UI_DIR,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            try:
                out, _ = check.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                stop(check)
                out = check.communicate()[0] + "\n(ui_check.mjs stopped after 600 s)"
            finally:
                stop(check)  # a browser left behind by a crashed script

    print(out)  # the checks that ran, with their screenshots (pytest -s or -rP shows them)
    logs = (
        f"\n--- ui_check.mjs\n{out}\n--- m1 deploy\n{(tmp_path / 'deploy.log').read_text()[-4000:]}"
        f"\n--- m1 ui\n{(tmp_path / 'server.log').read_text()[-3000:]}"
    )
    assert check.returncode == 0, f"screenshots in {shots}{logs}"
    # What the UI showed was made by the served flow runs, with the name typed into the forms.
    run_dir = m1_home / "runs" / RUN_NAME
    assert f"# m1 run report: {RUN_NAME}" in (run_dir / "report.md").read_text()
    assert (run_dir / "train" / "reasoning" / "final" / "config.json").exists(), logs


def test_the_log_lines_of_a_run_on_its_own_temporary_server_show_on_its_page(node, tmp_path, m1_home):
    """A command run with no Prefect server configured (its temporary one, as `m1 run` uses): `m1 ui`
    over the database it wrote shows the run's log lines on the run's page."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env |= {"M1_HOME": str(m1_home), "HOME": str(tmp_path)}  # Prefect's database: under M1_HOME
    done = subprocess.run(
        [*M1, "tasks", "logic", "-s", "name=ui-logs", "-s", "logic.n_items=14"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [
        ln.split(" - ", 1)[1]
        for ln in done.stderr.splitlines()
        if "Flow run 'ui-logs-logic-tasks-steps'" in ln
    ]
    step = next(
        line for line in lines if line.startswith("generate: ")
    )  # a step's line, as the console had it

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with started([*M1, "ui", "--port", str(port)], tmp_path / "server.log", env) as server:
        wait_until(
            lambda: httpx.get(f"{api}/health", timeout=5).json() is True,
            "m1 ui",
            server,
            tmp_path / "server.log",
        )
        runs = httpx.post(
            f"{api}/flow_runs/filter",
            json={"flow_runs": {"name": {"any_": ["ui-logs-logic-tasks-steps"]}}},
            timeout=30,
        ).json()
        assert len(runs) == 1, runs
        check = subprocess.run(
            [node, str(UI_DIR / "ui_logs.mjs"), f"http://127.0.0.1:{port}", runs[0]["id"], str(shots), step],
            cwd=UI_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
    print(check.stdout)
    assert check.returncode == 0, f"screenshots in {shots}\n{check.stdout}\n{check.stderr}"
    assert step[:60] in check.stdout
