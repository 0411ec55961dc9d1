"""The process sandbox's pieces, each pinned on its own: the bwrap/prlimit command line and what the
program sees through it, output capture and polling, bwrap's status pipe, the wait for the
namespace's death, work-dir ownership, the backend registry and the program helpers."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import sandboxes
from sandboxes import Limits, Sandbox, SandboxUnavailable, get_sandbox, process
from sandboxes.capture import BoundedOutput, pump, wait_until
from sandboxes.classify import sandbox_error
from sandboxes.languages import language
from sandboxes.limits import DEFAULT_LIMITS, RunResult
from sandboxes.process import ProcessSandbox, _rlimit_args
from sandboxes.workspace import Workspace, _lock_dir, seal, workspace, write_files
from tests.sandboxes.test_units import _status  # one classify() call with defaults, shared

# -- the command line and what the program sees ---------------------------------------------------------


def test_rlimit_args():
    limits = Limits(cpu_s=2.5, memory_mb=100, processes=7, file_size_mb=3, open_files=9)
    assert _rlimit_args(limits) == [
        "--cpu=3:4",  # whole seconds, rounded up; SIGKILL one second after SIGXCPU
        f"--as={100 << 20}",
        f"--stack={100 << 20}",
        "--nproc=7",
        f"--fsize={3 << 20}",
        "--nofile=9",
        "--core=0",
    ]
    assert _rlimit_args(Limits(cpu_s=0.3))[0] == "--cpu=1:2"  # never 0, which would mean "no limit"


def test_network_only_when_asked(tmp_path):
    sb = ProcessSandbox()
    ws = Workspace(tmp_path, tmp_path, 0, 0)
    closed = sb.command(ws, ["p"], Limits(), 5, "/run/m1/r")
    shared = sb.command(ws, ["p"], Limits(network=True), 5, "/run/m1/r")
    assert "--share-net" not in closed
    i = shared.index("--unshare-user") + 1
    assert shared[i : i + 5] == [
        "--share-net",
        "--ro-bind-try",
        "/etc/resolv.conf",
        "/etc/resolv.conf",
        "--disable-userns",
    ]
    assert shared[:i] + shared[i + 4 :] == closed


def test_what_the_program_sees():
    probe = (
        'hostname; echo "$HOME|$LANG|$PATH"; test -r /proc/self/status && echo proc; '
        "echo x > /dev/shm/f && echo shm; env | wc -l; cat"
    )
    r = ProcessSandbox().run(["sh", "-c", probe])
    assert r.status == "ok", r.describe()
    lines = r.stdout.decode().splitlines()
    assert lines[:4] == ["sandbox", "/work|C.UTF-8|/usr/local/bin:/usr/bin:/bin", "proc", "shm"]
    assert int(lines[4]) <= 5  # an empty environment but for what the sandbox sets (and the shell's PWD)
    assert lines[5:] == []  # no stdin given: the program reads nothing


def test_run_in_reads_no_stdin_by_default():
    sb = ProcessSandbox()
    with workspace() as ws:
        r = sb.run_in(ws, ["cat"])
    assert (r.status, r.stdout) == ("ok", b"")


def test_missing_tools_say_how_to_install_them(monkeypatch):
    monkeypatch.setattr(process.shutil, "which", lambda tool, **kw: None)
    with pytest.raises(SandboxUnavailable) as err:
        ProcessSandbox()
    assert str(err.value) == (
        "process sandbox needs bwrap and prlimit: run `bash scripts/sandbox-tools.sh` "
        "(installs Debian's bubblewrap and util-linux)"
    )
    monkeypatch.setattr(process.shutil, "which", lambda tool, **kw: None if tool == "prlimit" else "/x")
    with pytest.raises(SandboxUnavailable, match="^process sandbox needs prlimit: "):
        ProcessSandbox()


def test_has_tool_looks_in_the_sandboxes_path_not_ours(monkeypatch):
    sb = ProcessSandbox()
    monkeypatch.setenv("PATH", "/nonexistent")
    assert sb.has_tool("sh")
    assert not sb.has_tool("no-such-tool-here")


# -- bwrap's status pipe and the wait for the namespace's death ----------------------------------------------


def test_read_status_merges_events():
    r, w = os.pipe()
    os.write(w, b'{"child-pid": 42}\n {"exit-code": 3, "note": "\xff"}\n')
    os.close(w)
    assert process._read_status(r) == {"child-pid": 42, "exit-code": 3, "note": "\ufffd"}


def test_read_status_of_an_empty_pipe():
    r, w = os.pipe()
    os.close(w)
    assert process._read_status(r) == {}


def test_read_status_does_not_wait_for_the_writer():
    r, w = os.pipe()
    os.write(w, b'{"child-pid": 7}')
    out = []
    t = threading.Thread(target=lambda: out.append(process._read_status(r)), daemon=True)
    t.start()
    t.join(timeout=5)
    returned = not t.is_alive()  # a process inside the sandbox may still hold the pipe's write end
    os.close(w)
    t.join(timeout=5)
    assert returned and out == [{"child-pid": 7}]


def test_proc_status_fields():
    st = process._proc_status(str(os.getpid()))
    assert st["Pid"] == str(os.getpid())
    assert st["Name"] == Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    assert int(st["Uid"].split()[0]) == os.getuid()


def _no_kill(monkeypatch):
    monkeypatch.setattr(process.os, "kill", lambda *a: pytest.fail(f"killed {a}"))


def test_a_gone_pid_is_dead(monkeypatch):
    child = subprocess.Popen(["true"])
    child.wait()
    _no_kill(monkeypatch)
    t0 = time.monotonic()
    process._wait_until_dead(child.pid, os.getuid(), timeout=3)
    assert time.monotonic() - t0 < 1


def test_a_zombie_is_dead(monkeypatch):
    child = subprocess.Popen(["true"])
    wait_until(lambda: process._proc_status(str(child.pid))["State"].startswith("Z"), time.monotonic() + 5)
    _no_kill(monkeypatch)
    t0 = time.monotonic()
    process._wait_until_dead(child.pid, os.getuid(), timeout=3)
    assert time.monotonic() - t0 < 1
    child.wait()


def test_a_reused_pid_of_another_uid_is_dead(monkeypatch):
    child = subprocess.Popen(["sleep", "30"])
    try:
        with monkeypatch.context() as m:
            _no_kill(m)
            t0 = time.monotonic()
            process._wait_until_dead(child.pid, os.getuid() + 12345, timeout=3)
            assert time.monotonic() - t0 < 1
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_live_process_of_the_run_is_killed_at_the_timeout():
    child = subprocess.Popen(["sleep", "30"])
    t0 = time.monotonic()
    process._wait_until_dead(child.pid, os.getuid(), timeout=0.3)
    assert child.wait(timeout=5) == -signal.SIGKILL
    assert 0.3 <= time.monotonic() - t0 < 3


# -- output capture and polling -------------------------------------------------------------------------------


def test_bounded_output_keeps_what_fits_across_both_streams():
    out = BoundedOutput(10)
    assert out.add("stderr", b"eeee")
    assert out.add("stdout", b"oooooo")  # exactly full: still within the cap
    assert not out.truncated
    assert not out.add("stdout", b"x")
    assert out.truncated
    assert not out.add("stderr", b"yy")
    assert (bytes(out.stdout), bytes(out.stderr)) == (b"oooooo", b"eeee")


def test_bounded_output_cuts_a_chunk_at_the_cap():
    out = BoundedOutput(5)
    assert out.add("stderr", b"ab")
    assert not out.add("stdout", b"123456")
    assert (bytes(out.stdout), bytes(out.stderr), out.truncated) == (b"123", b"ab", True)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def test_wait_until_backs_off_to_50_ms(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(sandboxes.capture, "time", clock)
    assert wait_until(lambda: False, deadline=0.3) is False
    assert clock.sleeps[:7] == [0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05]
    assert clock.now >= 0.3 and clock.now - clock.sleeps[-1] < 0.3


def test_wait_until_stops_at_the_deadline_exactly(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(sandboxes.capture, "time", clock)
    assert wait_until(lambda: False, deadline=0.002) is False
    assert clock.sleeps == [0.002]


def test_wait_until_returns_once_true(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(sandboxes.capture, "time", clock)
    polls = iter([False, False, True])
    assert wait_until(lambda: next(polls), deadline=10) is True
    assert clock.sleeps == [0.002, 0.004]


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _pump(proc, data: bytes, limit: int, seconds: float) -> tuple[str, BoundedOutput]:
    out = BoundedOutput(limit)
    try:
        reason = pump(proc.stdin, proc.stdout, proc.stderr, data, out, time.monotonic() + seconds)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.stdin.closed  # whatever the reason
    return reason, out


def test_pump_to_the_end():
    code = "import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d[::-1]); sys.stderr.write('e')"
    reason, out = _pump(_child(code), b"abc" * 100_000, 1 << 20, 20)
    assert reason == "eof"
    assert bytes(out.stdout) == (b"abc" * 100_000)[::-1] and bytes(out.stderr) == b"e"


def test_pump_writes_while_the_program_writes_first():
    """A program that fills its stdout pipe before reading stdin: we must keep reading while we write."""
    code = (
        "import sys; sys.stdout.buffer.write(b'o' * (1 << 20)); sys.stdout.flush(); sys.stdin.buffer.read()"
    )
    reason, out = _pump(_child(code), b"i" * (1 << 20), 4 << 20, 20)
    assert reason == "eof" and len(out.stdout) == 1 << 20


def test_pump_stops_at_the_cap():
    reason, out = _pump(
        _child("import sys; sys.stdout.write('x' * 100000); sys.stdin.read()"), b"in", 1000, 20
    )
    assert reason == "output" and len(out.stdout) == 1000 and out.truncated


def test_pump_stops_at_the_deadline_with_input_pending():
    t0 = time.monotonic()
    reason, out = _pump(_child("import time; time.sleep(30)"), b"x" * (1 << 20), 100, 0.3)
    assert reason == "deadline"
    assert time.monotonic() - t0 < 5


def test_pump_with_a_deadline_already_past():
    reason, _ = _pump(_child("import time; time.sleep(30)"), b"", 100, -1)
    assert reason == "deadline"


def test_pump_tolerates_a_program_that_ignores_its_input():
    reason, out = _pump(_child("import sys; sys.stdout.write('done')"), b"x" * (4 << 20), 100, 20)
    assert reason == "eof" and bytes(out.stdout) == b"done"


# -- the work dir ---------------------------------------------------------------------------------------------


def test_lock_dir_is_private(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = _lock_dir()
    assert path == tmp_path / "m1-sandbox-uids"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert _lock_dir() == path  # exists: fine


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership needs root")
def test_files_belong_to_the_run_then_seal_takes_them(tmp_path):
    ws = Workspace(tmp_path / "w", tmp_path / "m", 880_111, 880_112)
    ws.path.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("host")
    outside.chmod(0o600)
    write_files(ws, {"a/b/c.txt": "x", "top.bin": b"\x00"})
    for rel in ("a", "a/b", "a/b/c.txt", "top.bin"):
        st = (ws.path / rel).stat()
        assert (st.st_uid, st.st_gid) == (880_111, 880_112), rel
    (ws.path / "a" / "b" / "c.txt").chmod(0o666)
    (ws.path / "top.bin").chmod(0o700)
    (ws.path / "link").symlink_to(outside)
    seal(ws)
    for rel in ("a", "a/b", "a/b/c.txt", "top.bin", "link"):
        st = (ws.path / rel).lstat()
        assert (st.st_uid, st.st_gid) == (0, 0), rel
    assert stat.S_IMODE((ws.path / "a" / "b" / "c.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((ws.path / "top.bin").stat().st_mode) == 0o744
    assert stat.S_IMODE((ws.path / "a").stat().st_mode) & 0o022 == 0
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600  # a link's target is not ours to change
    st = ws.path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o755)


# -- the registry and the program helpers ---------------------------------------------------------------------


def test_get_sandbox_defaults_to_the_process_backend_once_per_process(monkeypatch):
    monkeypatch.setattr(sandboxes, "_cache", {})
    sb = get_sandbox()
    assert isinstance(sb, ProcessSandbox) and get_sandbox("process") is sb
    monkeypatch.setattr(sandboxes, "_cache_pid", -1)  # as seen by a forked worker
    fresh = get_sandbox("process")
    assert fresh is not sb and sandboxes._cache_pid == os.getpid()
    assert get_sandbox("process") is fresh


def test_get_sandbox_docker(monkeypatch):
    from sandboxes import container

    class Fake(Sandbox):
        name = "fake-docker"

        def run_in(self, *a, **k):
            raise AssertionError

        def has_tool(self, tool):
            return True

    monkeypatch.setattr(sandboxes, "_cache", {})
    monkeypatch.setattr(container, "DockerSandbox", Fake)
    sb = get_sandbox("docker")
    assert isinstance(sb, Fake) and get_sandbox("docker") is sb


class Recording(Sandbox):
    """A sandbox that records what it is asked to run and answers from a script."""

    name = "recording"

    def __init__(self, compile_ok: bool = True) -> None:
        self.calls: list[tuple] = []
        self.compile_ok = compile_ok

    def run_in(self, ws, argv, *, stdin=b"", limits=DEFAULT_LIMITS):
        files = sorted(p.relative_to(ws.path).as_posix() for p in ws.path.rglob("*"))
        self.calls.append((tuple(argv), stdin, limits, files))
        ok = self.compile_ok or argv[0] != "g++"
        return RunResult(
            "ok" if ok else "runtime_error", 0 if ok else 1, None, b"", b"", 0.0, 0.0, 0.0, False
        )

    def has_tool(self, tool):
        return tool == "python3"


def test_run_program_passes_stdin_limits_and_files():
    sb = Recording()
    limits = Limits(cpu_s=7)
    r = sb.run_program("python", "print(1)", stdin=b"in", limits=limits, files={"data.txt": "d"})
    assert r.status == "ok"
    assert sb.calls == [(("python3", "-B", "main.py"), b"in", limits, ["data.txt", "main.py"])]


def test_program_runs_default_to_no_stdin_and_default_limits():
    sb = Recording()
    with sb.program("python", "print(1)") as prog:
        prog.run()
    sb.run_program("python", "x")
    sb.run(["true"])
    assert [(c[1], c[2]) for c in sb.calls] == [(b"", Limits())] * 3


def test_a_failed_compile_is_returned_instead_of_running():
    sb = Recording(compile_ok=False)
    r = sb.run_program("cpp", "int main(", stdin=b"x")
    assert r.status == "compile_error"
    assert [c[0][0] for c in sb.calls] == ["g++"]
    assert sb.supports("python") and not sb.supports("cpp")


# -- classification edges -------------------------------------------------------------------------------------


def test_cpu_time_exactly_at_the_limit_is_not_a_timeout():
    assert _status(cpu_s=2.0) == "ok"


def test_rss_at_90_percent_of_the_limit_is_memory():
    assert _status(exit_code=None, signum=signal.SIGKILL, max_rss_mb=0.9 * 256) == "memory"


def test_only_the_last_4_kib_of_stderr_is_searched_for_memory_errors():
    assert _status(exit_code=1, stderr=b"MemoryError" + b"x" * 4085) == "memory"
    assert _status(exit_code=1, stderr=b"MemoryError" + b"x" * 4086) == "runtime_error"


def test_unknown_language_lists_the_known_ones():
    with pytest.raises(ValueError) as err:
        language("cobol")
    assert str(err.value) == "unknown language 'cobol'; known: python, cpp"


# -- run_in's reading of the run ------------------------------------------------------------------------------


def test_a_run_reports_wall_time_and_truncation():
    sb = ProcessSandbox()
    r = sb.run(["sh", "-c", "echo hi"])
    assert r.status == "ok" and 0 < r.wall_s < 10 and r.truncated is False
    r = sb.run(["sh", "-c", "yes"], limits=Limits(output_bytes=1000))
    assert (r.status, r.truncated, len(r.stdout)) == ("output_limit", True, 1000)


def test_a_deadline_kill_is_a_timeout_with_usage_from_proc():
    r = ProcessSandbox().run(["sh", "-c", "while :; do :; done"], limits=Limits(wall_s=0.5, cpu_s=5))
    assert (r.status, r.exit_code, r.signal) == ("timeout", None, signal.SIGKILL)
    assert 0.5 <= r.wall_s < 5
    if os.geteuid() == 0:  # read from /proc at the kill: the loop had used CPU
        assert r.cpu_s > 0.05


def test_a_program_that_deletes_its_usage_report_is_killed_not_a_crash():
    """The report is advisory and within the program's reach; losing it must not break the sandbox."""
    r = ProcessSandbox().run(["sh", "-c", "rm -f /run/m1/usage-*; exit 0"])
    assert (r.status, r.exit_code, r.signal) == ("killed", None, signal.SIGKILL)
    assert r.cpu_s == r.max_rss_mb == 0.0  # no report: no usage to show


def test_a_program_that_scribbles_on_its_usage_report_cannot_break_the_reader():
    r = ProcessSandbox().run(
        [
            "sh",
            "-c",
            "for f in /run/m1/usage-*; do printf 'x\\377\\377\\n%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 > $f; done",
        ]
    )
    assert r.status == "ok", r.describe()


def test_bwrap_failing_to_start_is_a_sandbox_error(monkeypatch):
    sb = ProcessSandbox()
    sb._fs_args = ["--no-such-bwrap-option"]
    r = sb.run(["true"])
    assert r.status == "sandbox_error"
    assert r.stderr.decode().startswith(
        "bwrap failed to start the program: bwrap: Unknown option --no-such-bwrap-option"
    )


def test_a_missing_prlimit_is_a_sandbox_error(monkeypatch):
    sb = ProcessSandbox()
    monkeypatch.setattr(sb, "command", lambda *a: ["/nonexistent/prlimit"])
    r = sb.run(["true"])
    assert r.status == "sandbox_error"
    assert r.stderr.decode().startswith("could not start the sandbox: [Errno 2] No such file or directory")


def test_empty_argv_is_refused():
    with workspace() as ws, pytest.raises(ValueError) as err:
        ProcessSandbox().run_in(ws, [])
    assert str(err.value) == "argv must name a program"


def test_sandbox_error_is_an_empty_run_with_the_reason():
    assert sandbox_error("no engine") == RunResult(
        "sandbox_error", None, None, b"", b"no engine", 0.0, 0.0, 0.0, False
    )
    assert sandbox_error("x", wall_s=1.5).wall_s == 1.5


# -- limits and results ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["cpu_s", "wall_s", "memory_mb", "processes", "file_size_mb", "open_files", "output_bytes"]
)
def test_every_limit_must_be_positive(name):
    with pytest.raises(ValueError) as err:
        Limits(**{name: 0})
    assert str(err.value) == f"Limits.{name} must be positive, got 0"
    assert getattr(Limits(**{name: 0.5 if name.endswith("_s") else 1}), name) > 0


def test_signal_names():
    def result(sig):
        return RunResult("killed", None, sig, b"", b"", 0.0, 0.0, 0.0, False)

    assert result(signal.SIGKILL).signal_name == "SIGKILL"
    assert result(200).signal_name == "signal 200"
    assert result(None).signal_name is None
    assert result(None).ok is False and RunResult("ok", 0, None, b"", b"", 0, 0, 0, False).ok


def test_pump_never_blocks_on_a_half_full_input_pipe():
    """The program takes a little input, then writes much: a blocking write of our next input chunk
    would wait for a reader that waits for us (deadlock). stdin must be non-blocking."""
    code = (
        "import sys; sys.stdin.buffer.read(4096); sys.stdout.buffer.write(b'o' * (1 << 20)); "
        "sys.stdout.flush(); sys.stdin.buffer.read()"
    )
    proc = _child(code)
    out = BoundedOutput(4 << 20)
    done = []
    t = threading.Thread(
        target=lambda: done.append(
            pump(proc.stdin, proc.stdout, proc.stderr, b"i" * (4 << 20), out, time.monotonic() + 10)
        ),
        daemon=True,
    )
    t.start()
    t.join(timeout=15)
    proc.kill()  # frees a deadlocked pump
    proc.wait()
    t.join(timeout=5)
    proc.stdout.close()
    proc.stderr.close()
    assert done == ["eof"] and len(out.stdout) == 1 << 20


# -- what a run had used when it was killed (from /proc, root only) --------------------------------------------

UID = 879_123  # below the leased range: no run uses it


def _spawn_as(uid: int, mb: int) -> subprocess.Popen:
    code = (
        "import sys, time\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.2: pass\n"
        f"x = bytearray({mb} << 20)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    # the system Python: the test interpreter (under /root) is not readable by another uid
    proc = subprocess.Popen(
        ["/usr/bin/python3", "-c", code], user=uid, group=uid, stdout=subprocess.PIPE, cwd="/"
    )
    assert proc.stdout.readline() == b"ready\n"
    return proc


def _proc_cpu_and_hwm(pid: int) -> tuple[float, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = int(process._proc_status(str(pid))["VmHWM"].split()[0]) / 1024
    return cpu, hwm


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another uid's usage needs root")
def test_usage_of_a_uid_sums_cpu_and_takes_the_largest_peak(monkeypatch):
    small, big = _spawn_as(UID, 10), _spawn_as(UID, 60)
    try:
        assert sorted(process.live_pids_of_uid(UID)) == sorted([small.pid, big.pid])
        cpu, rss = process._usage_of_uid(UID)
        (cpu_a, hwm_a), (cpu_b, hwm_b) = _proc_cpu_and_hwm(small.pid), _proc_cpu_and_hwm(big.pid)
        assert cpu_a >= 0.1 and cpu_b >= 0.1
        assert cpu == pytest.approx(cpu_a + cpu_b, abs=0.05)
        assert rss == max(hwm_a, hwm_b) and 60 < rss < 200
        small.kill()
        wait_until(
            lambda: process._proc_status(str(small.pid))["State"].startswith("Z"), time.monotonic() + 5
        )
        assert process.live_pids_of_uid(UID) == [big.pid]  # a zombie is not alive
        with monkeypatch.context() as m:
            m.setattr(process.os, "geteuid", lambda: 1000)
            assert process._usage_of_uid(UID) is None  # without root /proc does not tell
    finally:
        for p in (small, big):
            p.kill()
            p.wait()
    assert process.live_pids_of_uid(UID) == []
    assert process._usage_of_uid(UID) == (0.0, 0.0)
