"""The Docker sandbox without an engine: what it asks the docker SDK for, and how it reads the answers.

A recording double stands at the SDK boundary (docker-py's `containers.create/run/list`, a container's
`attach/start/wait/reload/kill/remove`); the real engine runs the same code in the docker tests
(tests/sandboxes -m docker). These tests pin the container's walls exactly: no network, read-only root,
memory without swap, a pids limit, an unrounded CPU share, dropped capabilities, a wall-deadline kill,
the output cap, and that every container is removed whatever happens.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import docker.errors
import pytest
import requests.exceptions

from sandboxes import container, images
from sandboxes.container import (
    BACKSTOP_S,
    LABEL,
    OWNER_LABEL,
    DockerSandbox,
    cleanup_on_signals,
    reap_orphans,
    remove_live,
)
from sandboxes.limits import Limits
from sandboxes.usage import TIME
from sandboxes.workspace import WORK_MOUNT, Workspace
from tests.fakes.docker import FakeDocker, api_error


@pytest.fixture
def ws(tmp_path) -> Workspace:
    (tmp_path / "work").mkdir()
    (tmp_path / "meta").mkdir()
    return Workspace(tmp_path / "work", tmp_path / "meta", 880_123, 880_124)


def sandbox(client: FakeDocker, **kw) -> DockerSandbox:
    return DockerSandbox("m1-test-image", client=client, **kw)


LIMITS = Limits(
    cpu_s=2.5, wall_s=4.2, memory_mb=300, processes=40, file_size_mb=8, open_files=50, output_bytes=100
)


# -- the container's walls ----------------------------------------------------------------------------


def test_create_asks_for_every_wall(ws):
    client = FakeDocker()
    sandbox(client, tmpfs={"/testbed": 256}, cpus=1.5).run_in(ws, ["prog", "a b"], stdin=b"in", limits=LIMITS)
    (c,) = client.created
    kw = dict(c.kwargs)
    assert c.image == "m1-test-image"
    assert kw.pop("user") == "880123:880124"  # the run's own unprivileged uid and gid
    assert kw.pop("working_dir") == WORK_MOUNT
    assert kw.pop("hostname") == "sandbox"
    assert kw.pop("network_mode") == "none"  # no network at all
    assert kw.pop("read_only") is True
    assert kw.pop("volumes") == {
        str(ws.path): {"bind": "/work", "mode": "rw"},
        str(ws.meta): {"bind": "/run/m1", "mode": "rw"},
    }
    assert kw.pop("tmpfs") == {"/tmp": "rw,nosuid,nodev,size=64m", "/testbed": "rw,nosuid,nodev,size=256m"}
    assert kw.pop("mem_limit") == "300m"
    assert kw.pop("memswap_limit") == "300m"  # equal to the memory limit: no swap to hide in
    assert kw.pop("pids_limit") == 40  # fork bombs stop here
    assert kw.pop("nano_cpus") == 1_500_000_000  # 1.5 CPUs, not truncated to 1
    assert kw.pop("ulimits") == [
        {"Name": "cpu", "Soft": 3, "Hard": 4},  # 2.5 s of CPU rounds up to whole seconds
        {"Name": "fsize", "Soft": 8 << 20, "Hard": 8 << 20},
        {"Name": "nofile", "Soft": 50, "Hard": 50},
        {"Name": "core", "Soft": 0, "Hard": 0},
    ]
    assert kw.pop("cap_drop") == ["ALL"]
    assert kw.pop("security_opt") == ["no-new-privileges"]
    assert kw.pop("ipc_mode") == "private"
    assert kw.pop("init") is True
    assert kw.pop("log_config") == {"Type": "none", "Config": {}}
    assert kw.pop("labels") == {LABEL: "880123", OWNER_LABEL: container._OWNER}
    assert kw == {}, f"unchecked arguments: {kw}"


@pytest.mark.parametrize(("cpu_s", "soft"), [(0.2, 1), (1.0, 1), (1.01, 2), (7.0, 7)])
def test_cpu_rlimit_is_whole_seconds_rounded_up_never_zero(ws, cpu_s, soft):
    client = FakeDocker()
    sandbox(client).run_in(ws, ["p"], limits=Limits(cpu_s=cpu_s))
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in client.created[0].kwargs["ulimits"]}
    assert ulimits["cpu"] == (soft, soft + 1)  # SIGXCPU at the soft limit, SIGKILL a second later


def test_defaults_one_cpu_and_only_tmp(ws):
    client = FakeDocker()
    sb = sandbox(client)
    assert (sb.tmpfs, sb.cpus, sb.image) == ({"/tmp": 64}, 1.0, "m1-test-image")
    sb.run_in(ws, ["p"])
    kw = client.created[0].kwargs
    assert kw["nano_cpus"] == 1_000_000_000
    assert kw["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=64m"}
    assert kw["mem_limit"] == "256m" and kw["pids_limit"] == 32
    assert client.created[0].stdin_seen == b""  # no stdin given: an empty file


def test_a_caller_may_resize_tmp(ws):
    client = FakeDocker()
    sandbox(client, tmpfs={"/tmp": 8}).run_in(ws, ["p"])
    assert client.created[0].kwargs["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=8m"}


def test_network_only_when_the_limits_allow_it(ws):
    client = FakeDocker()
    sandbox(client).run_in(ws, ["p"], limits=Limits(network=True))
    assert client.created[0].kwargs["network_mode"] == "bridge"


def test_command_runs_the_program_under_gnu_time_with_a_backstop(ws):
    client = FakeDocker()
    sandbox(client).run_in(ws, ["prog", "a b", "$HOME"], stdin=b"the input", limits=LIMITS)
    (c,) = client.created
    cmd = c.command
    # 4.2 s of wall time rounds up to 5, plus the backstop: the container ends even if we die
    assert cmd[:4] == ["timeout", "-s", "KILL", str(5 + BACKSTOP_S)]
    assert BACKSTOP_S == 30
    report = cmd[cmd.index("-o") + 1]
    assert re.fullmatch(r"/run/m1/usage-[0-9a-f]{32}", report)
    assert cmd[4:] == [
        TIME,
        "-f",
        "m1-usage %x %U %S %M",
        "-o",
        report,
        "--",
        "/bin/sh",
        "-c",
        cmd[-5],
        "sh",
    ] + [
        "prog",
        "a b",
        "$HOME",
    ]
    assert re.fullmatch(r'exec "\$@" < /run/m1/stdin-[0-9a-f]{32}', cmd[-5])
    assert c.stdin_seen == b"the input"  # the program's stdin file is in place before it starts
    assert list(ws.meta.iterdir()) == []  # stdin and report files are gone afterwards


def test_the_program_sees_argv_and_stdin_through_the_shell(ws, tmp_path):
    """The shell line, run for real: argv reaches the program unchanged and stdin is the file."""
    client = FakeDocker()
    sandbox(client).run_in(ws, ["p"], stdin=b"x")
    cmd = client.created[0].command
    stdin_file = tmp_path / "stdin"
    stdin_file.write_bytes(b"hello input")
    shell = cmd[cmd.index("/bin/sh") + 2].rsplit("< ", 1)[0] + f"< {stdin_file}"
    out = subprocess.run(
        [
            "/bin/sh",
            "-c",
            shell,
            "sh",
            sys.executable,
            "-c",
            "import sys; print(sys.argv[1:], input())",
            "a b",
            "*",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == "['a b', '*'] hello input\n"


def test_a_run_reports_what_gnu_time_saw(ws):
    client = FakeDocker(chunks=[(b"out1", None), (None, b"err"), (b"out2", b"")])
    r = sandbox(client).run_in(ws, ["p"])
    assert r.status == "ok", r.describe()
    assert (r.exit_code, r.signal, r.cpu_s, r.max_rss_mb) == (0, None, 0.3, 10.0)
    assert (r.stdout, r.stderr, r.truncated) == (b"out1out2", b"err", False)
    assert 0 <= r.wall_s < 5
    (c,) = client.created
    names = [call[0] for call in c.calls]
    assert names == ["attach", "start", "wait", "reload", "remove"]
    assert c.calls[0][1] == {"stdout": True, "stderr": True, "stream": True, "demux": True, "logs": False}
    assert c.calls[2] == ("wait", 5.0)  # the caller's wall deadline
    assert c.calls[-1] == ("remove", True)
    assert c.live_at_start  # registered while it runs, so a signal handler can remove it
    assert container._live == {}  # and forgotten once removed


def test_exit_codes_and_runtime_errors(ws):
    # the report file is within the program's reach (it may write anything there): bytes that are not
    # UTF-8 must not crash the reader
    client = FakeDocker(
        report=b"prog: \xff\nCommand exited with non-zero status 3\nm1-usage 3 0.01 0.00 1024\n"
    )
    r = sandbox(client).run_in(ws, ["p"], stdin=b"")
    assert (r.status, r.exit_code, r.signal) == ("runtime_error", 3, None)


def test_wall_deadline_kills_and_counts_as_timeout(ws):
    client = FakeDocker(report=None, wait_errors=[requests.exceptions.ReadTimeout()])
    r = sandbox(client).run_in(ws, ["p"], limits=LIMITS)
    assert (r.status, r.exit_code, r.signal) == ("timeout", None, signal.SIGKILL)
    c = client.created[0]
    assert [call for call in c.calls if call[0] in ("wait", "kill")] == [
        ("wait", 4.2),
        ("kill",),
        ("wait", 30),
    ]
    assert c.calls[-1] == ("remove", True)


def test_a_dropped_connection_at_the_deadline_also_kills(ws):
    client = FakeDocker(report=None, wait_errors=[requests.exceptions.ConnectionError()])
    r = sandbox(client).run_in(ws, ["p"])
    assert r.status == "timeout"
    assert ("kill",) in client.created[0].calls


def test_killed_without_a_report_is_sigkill(ws):
    client = FakeDocker(report=None)
    r = sandbox(client).run_in(ws, ["p"])
    assert (r.status, r.exit_code, r.signal) == ("killed", None, signal.SIGKILL)
    assert r.cpu_s == r.max_rss_mb == 0.0  # no report: no usage to show


def test_oom_killed_container_is_a_memory_status(ws):
    client = FakeDocker(report="Command terminated by signal 9\nm1-usage 0 0.01 0.00 1024\n", oom_killed=True)
    r = sandbox(client).run_in(ws, ["p"])
    assert r.status == "memory"


def test_output_cap_stops_the_container(ws, monkeypatch):
    daemons = []

    class Thread(threading.Thread):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            daemons.append(self.daemon)

    monkeypatch.setattr(container.threading, "Thread", Thread)
    client = FakeDocker(chunks=[(b"x" * 60, None), (b"y" * 60, b"e"), (b"z", None)])
    r = sandbox(client).run_in(ws, ["p"], limits=LIMITS)
    # the reader and the killer: neither may keep the interpreter from exiting
    assert daemons == [True, True]
    assert r.status == "output_limit"
    assert r.truncated
    assert r.stdout == b"x" * 60 + b"y" * 40 and r.stderr == b""
    assert ("kill",) in client.created[0].calls


def test_create_failure_is_a_sandbox_error(ws):
    client = FakeDocker(create_error=docker.errors.ImageNotFound("no such image"))
    r = sandbox(client).run_in(ws, ["p"], stdin=b"abc")
    assert r.status == "sandbox_error"
    assert r.stderr.decode().startswith("could not create the container: no such image")
    assert (
        list(ws.meta.iterdir()) == []
    )  # its stdin file is gone: a later run in this work dir cannot read it


def test_engine_failure_mid_run_is_a_sandbox_error_and_cleans_up(ws):
    client = FakeDocker(reload_error=docker.errors.APIError("engine went away"))
    r = sandbox(client).run_in(ws, ["p"], stdin=b"abc")
    assert r.status == "sandbox_error"
    assert r.stderr.decode().startswith("the container failed: engine went away")
    assert client.created[0].calls[-1] == ("remove", True)
    assert list(ws.meta.glob("stdin-*")) == []
    assert container._live == {}


def test_empty_argv_is_refused(ws):
    with pytest.raises(ValueError) as err:
        sandbox(FakeDocker()).run_in(ws, [])
    assert str(err.value) == "argv must name a program"


# -- tools, the engine, the image ------------------------------------------------------------------------


def test_has_tool_asks_a_networkless_container_once():
    client = FakeDocker(run_output=b"/usr/bin/g++\n")
    sb = sandbox(client)
    assert sb.has_tool("g++") is True
    assert sb.has_tool("g++") is True
    assert client.ran == [
        ("m1-test-image", ["sh", "-c", "command -v g++ || true"], {"network_mode": "none", "remove": True})
    ]
    client.run_output = b"\n"
    assert sb.has_tool("javac") is False
    assert sb._tools == {"g++": True, "javac": False}


def test_default_image_and_engine(monkeypatch):
    client = FakeDocker()
    asked = []
    monkeypatch.setattr(container, "engine", lambda: client)
    monkeypatch.setattr(container, "ensure_image", lambda c, cpp: asked.append((c, cpp)) or f"img-{cpp}")
    assert DockerSandbox().image == "img-True"
    sb = DockerSandbox(cpp=False)
    assert sb.image == "img-False" and sb.client is client
    assert asked == [(client, True), (client, False)]


def test_engine_reports_how_to_start_docker(monkeypatch):
    def unreachable(**kw):
        raise docker.errors.DockerException("connection refused")

    monkeypatch.setattr(docker, "from_env", unreachable)
    with pytest.raises(
        container.SandboxUnavailable, match=r"not reachable \(connection refused\).*docker-engine\.sh"
    ):
        container.engine()


def test_engine_pings_with_a_timeout(monkeypatch):
    client, seen = FakeDocker(), []
    monkeypatch.setattr(docker, "from_env", lambda **kw: seen.append(kw) or client)
    assert container.engine() is client
    assert seen == [{"timeout": 60}] and client.pings == 1


def test_ping_failure_is_unavailable(monkeypatch):
    client = FakeDocker(ping_error=docker.errors.APIError("503"))
    monkeypatch.setattr(docker, "from_env", lambda **kw: client)
    with pytest.raises(container.SandboxUnavailable):
        container.engine()


# -- kill, remove, the live registry, signals, orphans ----------------------------------------------------


class Box:
    def __init__(self, cid="x", *, kill_error=None, remove_error=None, labels=None) -> None:
        self.id = cid
        self.calls: list = []
        self.kill_error, self.remove_error = kill_error, remove_error
        self.labels = labels or {}

    def kill(self):
        self.calls.append("kill")
        if self.kill_error:
            raise self.kill_error

    def remove(self, force=False):
        self.calls.append(("remove", force))
        if self.remove_error:
            raise self.remove_error


def test_kill_ignores_an_exited_container_only():
    box = Box(kill_error=api_error(409))
    container._kill(box)
    assert box.calls == ["kill"]
    with pytest.raises(docker.errors.DockerException):
        container._kill(Box(kill_error=docker.errors.DockerException("other")))


@pytest.mark.parametrize("error", [None, api_error(404, docker.errors.NotFound), api_error(409)])
def test_remove_tolerates_gone_or_in_progress(error):
    box = Box("b1", remove_error=error)
    container._live["b1"] = box
    container._remove(box)
    assert box.calls == [("remove", True)]
    assert "b1" not in container._live


def test_removing_an_unregistered_container_is_fine():
    box = Box("never-registered")
    container._remove(box)
    assert box.calls == [("remove", True)]


def test_remove_raises_other_engine_errors_but_forgets_the_container():
    box = Box("b2", remove_error=api_error(500))
    container._live["b2"] = box
    with pytest.raises(docker.errors.APIError):
        container._remove(box)
    assert "b2" not in container._live


def test_remove_live_counts_what_it_removed():
    good, bad, other = Box("g"), Box("b", remove_error=api_error(500)), Box("o")
    container._live.update(g=good, b=bad, o=other)
    assert remove_live() == 2
    assert good.calls == [("remove", True)] and bad.calls == [("remove", True)]
    assert container._live == {}
    assert remove_live() == 0


def test_at_exit_removes_live_containers(monkeypatch):
    calls = []
    monkeypatch.setattr(container, "remove_live", lambda: calls.append(1))
    container._at_exit()
    assert calls == []  # nothing live: nothing to do
    container._live["z"] = Box("z")
    try:
        container._at_exit()
    finally:
        container._live.clear()
    assert calls == [1]


def test_after_fork_the_child_owns_nothing(monkeypatch):
    container._live["p"] = Box("p")
    monkeypatch.setattr(container.os, "getpid", lambda: 424242)
    monkeypatch.setattr(container, "_OWNER", "before")
    container._fork_reset()
    assert container._OWNER == f"{container._boot_id()}:424242"
    assert container._live == {}


def test_owner_is_boot_id_and_pid():
    assert container._OWNER == f"{Path('/proc/sys/kernel/random/boot_id').read_text().strip()}:{os.getpid()}"


def test_boot_id_without_proc(monkeypatch):
    class NoProc:
        def __init__(self, path):
            assert path == "/proc/sys/kernel/random/boot_id"

        def read_text(self):
            raise OSError("no /proc")

    monkeypatch.setattr(container, "Path", NoProc)
    assert container._boot_id() == "unknown-boot"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_remove_live_containers_then_interrupt(monkeypatch, sig):
    removed = []
    monkeypatch.setattr(container, "remove_live", lambda: removed.append(sig))
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(KeyboardInterrupt, match=f"stopped by {sig.name}"):
        with cleanup_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.getsignal(signal.SIGTERM)
            assert signal.getsignal(sig) not in before.values()
            os.kill(os.getpid(), sig)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
    assert removed == [sig]
    assert {s: signal.getsignal(s) for s in before} == before


def test_signal_handlers_only_in_the_main_thread():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    seen = []

    def worker():
        with cleanup_on_signals():
            seen.append({s: signal.getsignal(s) for s in before})
        seen.append("after")

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [before, "after"]


def test_alive():
    assert container._alive(os.getpid())
    child = subprocess.Popen(["true"])
    child.wait()
    assert not container._alive(child.pid)


def test_alive_when_not_ours_to_signal(monkeypatch):
    def denied(pid, sig):
        assert sig == 0
        raise PermissionError

    monkeypatch.setattr(container.os, "kill", denied)
    assert container._alive(1)


def test_reap_orphans_removes_only_containers_whose_owner_is_gone():
    boot = container._boot_id()
    dead = subprocess.Popen(["true"])
    dead.wait()
    mine = Box("mine", labels={OWNER_LABEL: f"{boot}:{os.getpid()}"})
    gone = Box("gone", labels={OWNER_LABEL: f"{boot}:{dead.pid}"})
    rebooted = Box("rebooted", labels={OWNER_LABEL: f"other-boot:{os.getpid()}"})
    garbled = Box("garbled", labels={OWNER_LABEL: f"{boot}:abc"})
    unlabelled = Box("unlabelled")
    stuck = Box("stuck", labels={OWNER_LABEL: "x:1"}, remove_error=docker.errors.DockerException("busy"))
    client = FakeDocker(listing=[mine, gone, rebooted, garbled, unlabelled, stuck])
    assert reap_orphans(client) == 4
    assert client.listed == [{"all": True, "filters": {"label": OWNER_LABEL}, "ignore_removed": True}]
    assert mine.calls == []
    for box in (gone, rebooted, garbled, unlabelled, stuck):
        assert box.calls == [("remove", True)], box.id


# -- the base image: tagged by its build script's content, built once when missing -------------------------


@pytest.fixture
def build_script(monkeypatch, tmp_path) -> Path:
    """A stand-in build script (the mutation runs' copy of the tree has no scripts/)."""
    script = tmp_path / "build.sh"
    script.write_text("echo one\n")
    monkeypatch.setattr(images, "BUILD_SCRIPT", script)
    return script


def test_image_tag_names_the_build_scripts_content(build_script):
    digest = hashlib.sha256(b"echo one\n").hexdigest()[:12]
    assert images.image_tag() == f"m1-sandbox:py-cpp-{digest}"
    assert images.image_tag(cpp=False) == f"m1-sandbox:py-{digest}"
    build_script.write_text("echo two\n")  # an edited script names a new image
    digest = hashlib.sha256(b"echo two\n").hexdigest()[:12]
    assert images.image_tag() == f"m1-sandbox:py-cpp-{digest}"


def test_the_build_script_is_the_checkouts():
    assert images.BUILD_SCRIPT.parts[-2:] == ("scripts", "build-sandbox-image.sh")
    assert images.BUILD_SCRIPT.parent.parent == Path(images.__file__).resolve().parents[1]


def test_image_needs_its_build_script(monkeypatch, tmp_path):
    monkeypatch.setattr(images, "BUILD_SCRIPT", tmp_path / "missing.sh")
    with pytest.raises(container.SandboxUnavailable, match=r"missing\.sh not found: .*source checkout"):
        images.image_tag()


def test_present_image_is_not_rebuilt(monkeypatch, build_script, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(images.subprocess, "run", lambda *a, **k: pytest.fail("built"))
    client = FakeDocker(have={images.image_tag(cpp=False): 0})
    assert images.ensure_image(client, cpp=False) == images.image_tag(cpp=False)
    assert client.got == [images.image_tag(cpp=False)]
    assert (tmp_path / "m1-sandbox-image.lock").exists()  # builds are serialised by this lock file


@pytest.mark.parametrize(("cpp", "flag"), [(True, ["--cpp"]), (False, [])])
def test_missing_image_is_built_by_the_script(monkeypatch, build_script, cpp, flag):
    ran = []
    monkeypatch.setattr(
        images.subprocess,
        "run",
        lambda args, **kw: ran.append((args, kw)) or subprocess.CompletedProcess(args, 0, "", ""),
    )
    tag = images.image_tag(cpp=cpp)
    assert images.ensure_image(FakeDocker(), cpp=cpp) == tag
    assert ran == [(["bash", str(images.BUILD_SCRIPT), tag, *flag], {"capture_output": True, "text": True})]


def test_a_failed_image_build_says_why(monkeypatch, build_script):
    err = "x" * 3000 + "debootstrap failed\n"
    monkeypatch.setattr(
        images.subprocess, "run", lambda args, **kw: subprocess.CompletedProcess(args, 1, "", err)
    )
    with pytest.raises(container.SandboxUnavailable) as exc:
        images.ensure_image(FakeDocker())
    assert str(exc.value) == f"building the sandbox image {images.image_tag()} failed: {err.strip()[-2000:]}"


def test_image_main_prints_the_tag(monkeypatch, build_script, capsys):
    client = FakeDocker()
    monkeypatch.setattr(docker, "from_env", lambda: client)
    monkeypatch.setattr(sys, "argv", ["images", "--no-cpp"])
    monkeypatch.setattr(
        images.subprocess, "run", lambda args, **kw: subprocess.CompletedProcess(args, 0, "", "")
    )
    images.main()
    assert capsys.readouterr().out == images.image_tag(cpp=False) + "\n"
    monkeypatch.setattr(sys, "argv", ["images"])
    images.main()
    assert capsys.readouterr().out == images.image_tag(cpp=True) + "\n"


def test_image_main_help(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["images", "--help"])
    with pytest.raises(SystemExit):
        images.main()
    out = " ".join(capsys.readouterr().out.split())
    assert " Build the Docker sandbox base image if missing. " in out
    assert "--no-cpp leave g++ out (smaller, faster to build)" in out


def test_a_zombie_owner_is_not_alive():
    """A killed owner whose parent has not reaped it yet is gone: its containers are orphans."""
    child = subprocess.Popen(["true"])
    stat = Path(f"/proc/{child.pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":  # exited, not yet waited for
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert not container._alive(child.pid)
        assert container._alive(os.getpid())
    finally:
        child.wait()
    assert not container._alive(child.pid)
