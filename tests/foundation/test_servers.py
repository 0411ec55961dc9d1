"""flows/servers.py: the one way a flow or a bench starts `m1 serve ...` and waits for its /health."""

from __future__ import annotations

import pytest

from flows.errors import InputError
from flows.servers import m1_server


def test_a_server_that_exits_is_named_with_its_last_log_lines(tmp_path):
    args = ["serve", "model", "--checkpoint", str(tmp_path / "missing")]
    with pytest.raises(InputError, match=r"^the test server exited with code 2: .*missing"):
        with m1_server(args, name="test server", timeout_s=120):
            pytest.fail("a server without a checkpoint answered /health")
