"""A server of this project (`m1 serve ...`) in a child process, for as long as a caller needs it.

Not a flow: the one way the flows and the benches start such a server and wait until it can answer (the
run's judge, flows/genrm/serve.py; the reward service under load, `m1 bench rewards`). The child runs on
its own core instead of competing with the caller in one interpreter; its output goes to a temporary log
(never a pipe nobody reads, which would stall a chatty server), whose last lines name what went wrong.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from flows.errors import InputError

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]


@contextmanager
def m1_server(args: Sequence[str], *, name: str, port: int = 0, timeout_s: float = 180.0) -> Iterator[str]:
    """Runs ``m1 <args> --port PORT`` and yields its root URL (``http://127.0.0.1:PORT``) once its
    ``/health`` answers 200 with status "ok"; terminates it on exit (killed after 15 s). A server that
    exits first, or is not ready within ``timeout_s``, is an InputError naming ``name``."""
    from m1model.serving import free_port  # heavy: the model server's package (torch), only when serving

    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.NamedTemporaryFile("w+", prefix="m1-server-", suffix=".log") as log:
        proc = subprocess.Popen([*M1, *args, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_healthy(proc, base, timeout_s, Path(log.name), name)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_healthy(proc: subprocess.Popen, url: str, timeout_s: float, log: Path, name: str) -> None:
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace").strip().splitlines()[-3:]
                raise InputError(f"the {name} exited with code {proc.returncode}: {' | '.join(tail)}")
            try:
                reply = client.get(f"{url}/health")
                if reply.status_code == 200 and reply.json().get("status") == "ok":
                    return
            except (httpx.HTTPError, ValueError):  # not listening yet, or not JSON yet
                pass
            time.sleep(0.2)
    raise InputError(f"the {name} at {url} did not become healthy within {timeout_s:.0f} s")
