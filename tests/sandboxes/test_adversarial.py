"""Hostile programs: each must be contained, get the right status and leave no process behind.

Runs on every backend (`sandbox` fixture); the docker runs are marked `docker`.
"""

from __future__ import annotations

import os
import socket
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from sandboxes import Limits

pytestmark = pytest.mark.usefixtures("nothing_left_behind")


def py(source: str) -> dict[str, str]:
    return {"main.py": textwrap.dedent(source)}


def test_fork_bomb(sandbox):
    r = sandbox.run(
        ["python3", "main.py"],
        files=py("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """),
        limits=Limits(processes=16, cpu_s=1, wall_s=1.5),
    )
    assert r.status == "timeout"


def test_memory_bomb(sandbox):
    r = sandbox.run(
        ["python3", "main.py"],
        files=py("""
        hog = []
        while True:
            hog.append(bytearray(8 << 20))
    """),
        limits=Limits(memory_mb=128),
    )
    assert r.status == "memory", r.describe()


def test_infinite_loop_hits_cpu_limit(sandbox):
    r = sandbox.run(["python3", "-c", "while True: pass"], limits=Limits(cpu_s=1, wall_s=10))
    assert r.status == "timeout"
    assert r.signal is not None


def test_sleep_past_wall_limit(sandbox):
    r = sandbox.run(["python3", "-c", "import time; time.sleep(60)"], limits=Limits(wall_s=1))
    assert r.status == "timeout"
    assert r.wall_s < 30  # stopped at the limit, not when the program chose to end


def test_huge_output_is_cut(sandbox):
    r = sandbox.run(
        ["python3", "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
        limits=Limits(output_bytes=100_000),
    )
    assert r.status == "output_limit"
    assert r.truncated
    assert len(r.stdout) + len(r.stderr) <= 100_000


def test_daemonised_child_does_not_survive(sandbox):
    r = sandbox.run(
        ["python3", "main.py"],
        files=py("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
        print("parent done")
    """),
    )
    assert r.status == "ok" and r.stdout == b"parent done\n"


def test_cannot_read_secrets_or_host_environment(sandbox, monkeypatch):
    monkeypatch.setenv("M1_TEST_SECRET", "hunter2-" + uuid.uuid4().hex)
    r = sandbox.run(
        ["python3", "main.py"],
        files=py("""
        import glob, os
        try:
            print("SHADOW", open("/etc/shadow").read())
        except OSError as e:
            print("shadow denied:", type(e).__name__)
        print("ENV", dict(os.environ))
        for path in glob.glob("/proc/*/environ"):
            try:
                print(path, open(path, "rb").read())
            except OSError:
                pass
    """),
    )
    assert r.status == "ok", r.describe()
    assert b"SHADOW" not in r.stdout and b"shadow denied" in r.stdout
    assert os.environ["M1_TEST_SECRET"].encode() not in r.stdout
    env = eval(r.stdout.split(b"ENV ", 1)[1].split(b"\n", 1)[0])  # the dict the program printed
    assert set(env) <= {"PATH", "HOME", "LANG", "PWD", "HOSTNAME", "LC_CTYPE"}


def test_cannot_write_outside_work_dir(sandbox, tmp_path):
    marker = f"m1-escape-{uuid.uuid4().hex}"
    r = sandbox.run(
        ["python3", "main.py", marker],
        files=py("""
        import sys
        marker = sys.argv[1]
        for d in ["/etc", "/usr", "/usr/bin", "/", "/work/..", "/tmp", "/work"]:
            try:
                with open(f"{d}/{marker}", "w") as f:
                    f.write("x")
                print("wrote", d)
            except OSError:
                print("denied", d)
    """),
    )
    assert r.status == "ok", r.describe()
    lines = set(r.stdout.decode().splitlines())
    for d in ["/etc", "/usr", "/usr/bin"]:
        assert f"denied {d}" in lines
    assert "wrote /work" in lines  # the work dir itself is the program's to use
    for d in ["/etc", "/usr", "/usr/bin", "/", "/tmp", str(tmp_path)]:
        assert not (Path(d) / marker).exists(), f"the program wrote into the host's {d}"


def test_no_network_not_even_host_loopback(sandbox):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        r = sandbox.run(
            ["python3", "main.py", str(port)],
            files=py("""
            import socket, sys
            for host in ["127.0.0.1", "1.1.1.1", "deb.debian.org"]:
                try:
                    socket.create_connection((host, int(sys.argv[1]) if host == "127.0.0.1" else 80), timeout=1)
                    print("connected", host)
                except OSError as e:
                    print("blocked", host, type(e).__name__)
        """),
        )
    finally:
        server.close()
    assert r.status == "ok", r.describe()
    assert b"connected" not in r.stdout
    assert r.stdout.count(b"blocked") == 3


def test_killing_the_parent_is_contained(sandbox):
    r = sandbox.run(
        ["python3", "main.py", str(os.getpid())],
        files=py("""
        import os, signal, sys, time
        for pid in [int(sys.argv[1]), 1, os.getppid()]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)
        print("still here")
    """),
    )
    # The program's only parent in there is the sandbox's own supervisor; killing it ends the run.
    assert r.status == "killed", r.describe()


def test_kill_everything_it_can_see(sandbox):
    r = sandbox.run(["python3", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"])
    assert r.status in ("killed", "ok"), r.describe()  # it may only take down its own sandbox


def test_fork_bomb_does_not_starve_a_concurrent_run(sandbox):
    from concurrent.futures import ThreadPoolExecutor

    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    with ThreadPoolExecutor(2) as pool:
        bombing = pool.submit(sandbox.run, ["python3", "-c", bomb], limits=Limits(processes=16, wall_s=2))
        time.sleep(0.5)  # let the bomb reach its process limit first
        normal = sandbox.run(
            ["python3", "-c", "import os\nif os.fork() == 0: os._exit(0)\nos.wait(); print('ok')"]
        )
        assert bombing.result().status == "timeout"
    assert normal.status == "ok" and normal.stdout == b"ok\n"  # its own process budget, untouched
