"""flows/servers.py: the one way a flow or a bench starts `m1 serve ...` and waits for its /health."""

from __future__ import annotations

import httpx
import pytest

from flows.errors import InputError
from flows.servers import m1_server, m1_servers
from m1model.serving import free_port


def test_a_server_that_exits_is_named_with_its_last_log_lines(tmp_path):
    args = ["serve", "model", "--checkpoint", str(tmp_path / "missing")]
    with pytest.raises(InputError, match=r"^the test server exited with code 2: .*missing"):
        with m1_server(args, name="test server", timeout_s=120):
            pytest.fail("a server without a checkpoint answered /health")


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_servers_start_together_on_different_ports_and_all_stop_on_exit():
    args = ["serve", "rewards", "--workers", "1", "--log-level", "warning"]
    with m1_servers([args, args], name="reward service", timeout_s=120) as bases:
        assert len(set(bases)) == 2
        assert all(_answers(base) for base in bases)
    assert not any(_answers(base) for base in bases)


def test_one_server_failing_stops_the_others(tmp_path):
    good = ["serve", "rewards", "--workers", "1", "--log-level", "warning"]
    bad = ["serve", "model", "--checkpoint", str(tmp_path / "missing")]
    port = free_port()
    with pytest.raises(InputError, match=r"^the ensemble exited with code 2"):
        # the good one is waited for first, so it is up when the bad one's exit is found
        with m1_servers([good, bad], name="ensemble", ports=[port, 0], timeout_s=120):
            pytest.fail("a server without a checkpoint answered /health")
    assert not _answers(f"http://127.0.0.1:{port}")
