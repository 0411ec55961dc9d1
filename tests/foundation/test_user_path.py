"""A path a user takes across commands on a fresh M1_HOME, as deployments: `m1-curate` then
`m1-train-curriculum` started one after the other from the Prefect API (as the UI does). The same path
through the CLI, and the other orders, are tests/foundation/test_orders.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.curricula import short_tiny

SMALL = {
    "name": "user",
    "data": {
        "n_problems": 40,
        "n_exact_duplicates": 2,
        "n_near_duplicates": 2,
        "n_benchmark_leaks": 2,
        "n_unparseable": 2,
    },
    "model": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "intermediate_size": 32,
        "num_local_experts": 2,
        "num_experts_per_tok": 1,
        "softmax_every": 2,
        "vocab_size": 300,
    },
    "train": {
        "curriculum": short_tiny(),  # tiny.toml at 4 RL steps a stage (tests/curricula.py)
        "sft_steps": 10,
        "prompts_per_step": 2,
        "group_size": 2,
        "batch_size": 4,
        "max_sampling_rounds": 1,
    },
    "eval": {"n_items": 4, "max_new_tokens": 4},
    "logic": {"n_items": 24},
    "code": {"n_problems": 8, "tests_per_problem": 3},
    "genrm": {"enabled": False},  # its judge training has its own test (tests/genrm/test_flow.py)
}
M1 = str(Path(sys.executable).with_name("m1"))


def run(args, env, timeout=600):
    return subprocess.run([M1, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.slow
def test_curate_then_curriculum_deployments_from_the_api(prefect_harness, tmp_path):
    """`m1 deploy` serves the deployments; starting m1-curate and then m1-train-curriculum through the
    API (what the UI's Run button does) works on a fresh store."""
    import asyncio

    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL

    config = tmp_path / "run.json"
    config.write_text(json.dumps(SMALL))
    env = os.environ | {
        "M1_HOME": str(tmp_path / "home"),
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
    }
    served = subprocess.Popen(
        [M1, "deploy", "-c", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        for name in ("m1-curate/m1-curate", "train-curriculum/m1-train-curriculum"):
            asyncio.run(_wait_for_deployment(name, served))
        for name in ("m1-curate/m1-curate", "train-curriculum/m1-train-curriculum"):
            flow_run = run_deployment(name, timeout=600)
            assert flow_run.state.is_completed(), (name, flow_run.state)
    finally:
        served.send_signal(signal.SIGTERM)
        served.wait(timeout=60)
    finals = sorted(
        p.parent.parent.name
        for p in (tmp_path / "home" / "runs" / "user" / "train").glob("*/final/config.json")
    )
    assert finals == ["length-window", "reasoning"]


async def _wait_for_deployment(name: str, served: subprocess.Popen, timeout: float = 180) -> None:
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    deadline = time.monotonic() + timeout
    async with get_client() as client:
        while time.monotonic() < deadline:
            assert served.poll() is None, served.stdout.read()
            try:
                deployment = await client.read_deployment_by_name(name)
            except ObjectNotFound:
                deployment = None
            # registered by this test's `m1 deploy`, not left on the session's server by an earlier test
            if deployment and deployment.parameters.get("config", {}).get("name") == SMALL["name"]:
                return
            time.sleep(1)
    raise AssertionError(f"{name} was not registered within {timeout} s")
