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
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from flows.errors import InputError

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]


@contextmanager
def m1_server(args: Sequence[str], *, name: str, port: int = 0, timeout_s: float = 180.0) -> Iterator[str]:
    """Runs ``m1 <args> --port PORT`` and yields its root URL (``http://127.0.0.1:PORT``) once its
    ``/health`` answers 200 with status "ok"; terminates it on exit (killed after 15 s). A server that
    exits first, or is not ready within ``timeout_s``, is an InputError naming ``name``."""
    with m1_servers([args], name=name, ports=[port], timeout_s=timeout_s) as (base,):
        yield base


@contextmanager
def m1_servers(
    args_each: Sequence[Sequence[str]],
    *,
    name: str,
    ports: Sequence[int] | None = None,
    timeout_s: float = 180.0,
) -> Iterator[list[str]]:
    """`m1_server` for several servers (an ensemble of judges), started at once so that each loads its
    model while the others load theirs; yields their root URLs, in order, once every one is healthy.
    ``ports`` (0: a free one) default to free ports, all different."""
    from m1model.serving import free_port  # heavy: the model server's package (torch), only when serving

    wanted = list(ports) if ports is not None else [0] * len(args_each)
    if len(wanted) != len(args_each):
        raise ValueError(f"{len(args_each)} servers and {len(wanted)} ports")
    chosen: list[int] = []
    for port in wanted:
        while not port or port in chosen:  # two free_port calls may return the same port
            port = free_port()
        chosen.append(port)
    with ExitStack() as stack:
        started = [
            stack.enter_context(_started(args, port)) for args, port in zip(args_each, chosen, strict=True)
        ]
        for proc, base, log in started:
            wait_healthy(proc, base, timeout_s, log, name)
        yield [base for _, base, _ in started]


@contextmanager
def _started(args: Sequence[str], port: int) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    """The child ``m1 <args> --port PORT`` with its log, terminated on exit (killed after 15 s)."""
    with tempfile.NamedTemporaryFile("w+", prefix="m1-server-", suffix=".log") as log:
        proc = subprocess.Popen([*M1, *args, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
        try:
            yield proc, f"http://127.0.0.1:{port}", Path(log.name)
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
