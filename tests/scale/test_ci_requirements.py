"""Under CI (`.ci/run` sets M1_REQUIRE_DOCKER, _POSTGRES and _BROWSER), a test that would skip because its
service cannot start fails with the reason; elsewhere it skips and says why."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.slow

DOCKER_TEST = "tests/sandboxes/test_docker.py::test_image_is_cached_by_content_tag"


def _pytest(env: dict[str, str]) -> subprocess.CompletedProcess:
    # An engine that is not there: what a machine without Docker looks like to the sandbox.
    env = os.environ | {"DOCKER_HOST": "unix:///nonexistent/docker.sock"} | env
    args = [sys.executable, "-m", "pytest", DOCKER_TEST, "-p", "no:cacheprovider", "-rsE", "-q"]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_unavailable_docker_skips_with_its_reason_outside_ci():
    out = _pytest({"M1_REQUIRE_DOCKER": "0"})
    assert out.returncode == 0, out.stdout[-3000:]
    assert "1 skipped" in out.stdout and "Docker engine unavailable" in out.stdout


def test_unavailable_docker_fails_the_run_under_ci():
    out = _pytest({"M1_REQUIRE_DOCKER": "1"})
    assert out.returncode == 1, out.stdout[-3000:]
    assert "M1_REQUIRE_DOCKER=1 requires this test to run, but it skipped" in out.stdout
    assert "skipped: Docker engine unavailable: Docker engine not reachable" in out.stdout


def test_ci_entry_point_requires_every_service_and_runs_make_test():
    script = (ROOT / ".ci" / "run").read_text()
    for env in ("M1_REQUIRE_DOCKER", "M1_REQUIRE_POSTGRES", "M1_REQUIRE_BROWSER"):
        assert f"export {env}=${{{env}:-1}}" in script
    assert script.rstrip().endswith("make test")
