"""Docker-only pieces: the locally built base image and what the container is allowed."""

from __future__ import annotations

import pytest

from sandboxes.images import ensure_image, image_tag

pytestmark = pytest.mark.docker


def test_image_is_cached_by_content_tag(docker_sandbox):
    assert docker_sandbox.image == image_tag(cpp=True)
    assert ensure_image(docker_sandbox.client) == docker_sandbox.image  # present: no rebuild
    assert docker_sandbox.has_tool("python3") and not docker_sandbox.has_tool("no-such-tool")


def test_container_has_no_capabilities_and_no_privileges(docker_sandbox):
    r = docker_sandbox.run(["sh", "-c", "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; id -u"])
    assert r.status == "ok", r.describe()
    fields = dict(line.split(":\t") for line in r.stdout.decode().splitlines() if ":\t" in line)
    assert int(fields["CapEff"], 16) == 0
    assert fields["NoNewPrivs"] == "1"
    assert int(r.stdout.split()[-1]) != 0
