"""Real processes for the scale-out and fault tests: `m1` commands as subprocesses, a reward service
reachable from other machines (on 0.0.0.0, with an API key), a throwaway PostgreSQL cluster."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from glob import glob
from pathlib import Path

import httpx
import pytest

from m1model.serving import free_port
from tests.processes import started, wait_until

ROOT = Path(__file__).resolve().parents[2]
M1 = [sys.executable, "-c", "from flows.cli import main; main()"]
API_KEY = "test-key-0123456789"


def healthy(url: str) -> Callable[[], bool]:
    return lambda: httpx.get(url, timeout=2).status_code == 200


# A plugin whose items report the scoring worker's pid and can take a while: the fault test kills the
# worker that is scoring a given item.
SLOW_PLUGIN = """
import os
import time
from pathlib import Path

from verifiers.base import Reward

class Slow:
    name, version = "slow", "1"

    def verify(self, items):
        out = []
        for item in items:
            if item.get("pid_file"):
                Path(item["pid_file"]).write_text(str(os.getpid()))
            time.sleep(item.get("sleep", 0))
            out.append(Reward(float(len(item["response"])), {"pid": os.getpid()}))
        return out
"""


@pytest.fixture(scope="session")
def reward_service(tmp_path_factory) -> Iterator[dict]:
    """`m1 serve rewards` on 0.0.0.0 with 2 workers and the key from M1_API_KEY, as another machine
    would reach it; yields its url, process and an authorised client."""
    tmp = tmp_path_factory.mktemp("rewards")
    (tmp / "plugins").mkdir()
    (tmp / "plugins" / "slow.py").write_text(SLOW_PLUGIN)
    port = free_port()
    args = [*M1, "serve", "rewards", "--host", "0.0.0.0", "--port", str(port), "--workers", "2"]
    args += ["--item-timeout", "30", "--log-level", "warning", "--plugin-dir", str(tmp / "plugins")]
    url = f"http://127.0.0.1:{port}"
    with started(args, tmp / "serve.log", os.environ | {"M1_API_KEY": API_KEY}) as proc:
        wait_until(
            lambda: httpx.get(f"{url}/health", timeout=2).json()["status"] == "ok",
            "m1 serve rewards",
            proc,
            tmp / "serve.log",
        )
        headers = {"Authorization": f"Bearer {API_KEY}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            yield {"url": url, "proc": proc, "client": client, "tmp": tmp}


def _pg_bin() -> Path | None:
    found = sorted(glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _pg_user() -> pwd.struct_passwd | None:
    """PostgreSQL refuses to run as root: as root, Debian's `postgres` user or our `m1-postgres`."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "m1-postgres"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise LookupError("no user to run PostgreSQL as")


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl, password auth, 127.0.0.1 on a free port):
    yields the Prefect server's URL for its database `prefect`, and removes it all afterwards."""
    try:
        user = _pg_user()
        ready = _pg_bin() is not None
    except LookupError:
        ready = False
    if not ready:  # `make test` installs it; a bare run tries too
        proc = subprocess.run(
            ["bash", str(ROOT / "scripts" / "postgres.sh")], capture_output=True, text=True, timeout=900
        )
        reason = (proc.stderr or proc.stdout).strip()[-500:]
        if proc.returncode or _pg_bin() is None:
            pytest.skip(f"PostgreSQL unavailable: {reason}")
        try:
            user = _pg_user()
        except LookupError:
            pytest.skip(f"PostgreSQL unavailable: no user to run it as: {reason}")
    bin_dir = _pg_bin()
    # Outside pytest's tmp_path: the server's user must be able to reach its folder.
    root = Path(tempfile.mkdtemp(prefix="m1-pg-", dir="/tmp"))
    data, password = root / "data", "m1-" + os.urandom(8).hex()
    (root / "pw").write_text(password)
    as_user: list[str] = []
    if user is not None:
        for p in (root, root / "pw"):
            os.chown(p, user.pw_uid, user.pw_gid)
        as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    port = free_port()

    def run(*args: str) -> None:
        proc = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=300, cwd=root)
        if proc.returncode:
            pytest.fail(f"{Path(args[0]).name} failed: {proc.stderr[-2000:]}")

    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "prefect", f"--pwfile={root / 'pw'}"]
    run(*initdb, "--auth=scram-sha-256")
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    try:
        env = os.environ | {"PGPASSWORD": password}
        subprocess.run(
            [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "prefect", "prefect"],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield f"postgresql+asyncpg://prefect:{password}@127.0.0.1:{port}/prefect"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)
