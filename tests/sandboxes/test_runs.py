"""Ordinary programs: input and output, files, exit codes, compiled C++ (every backend)."""

from __future__ import annotations

import signal

import pytest

from sandboxes import Limits

ECHO = "import sys\ndata = sys.stdin.buffer.read()\nsys.stdout.buffer.write(data[::-1])\nsys.stderr.write('done')\n"
CPP_SUM = """
#include <iostream>
int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << std::endl; }
"""


def test_stdin_stdout_round_trip_larger_than_a_pipe(sandbox):
    data = bytes(range(256)) * 8192  # 2 MiB: more than a pipe buffer both ways, so no deadlock
    r = sandbox.run(
        ["python3", "main.py"], files={"main.py": ECHO}, stdin=data, limits=Limits(output_bytes=4 << 20)
    )
    assert r.status == "ok", r.describe()
    assert r.stdout == data[::-1]
    assert r.stderr == b"done"
    assert not r.truncated
    assert r.exit_code == 0 and r.signal is None


def test_files_are_in_the_work_dir(sandbox):
    r = sandbox.run(
        [
            "python3",
            "-c",
            "import os; print(os.getcwd(), open('data/in.txt').read(), open('b.bin', 'rb').read())",
        ],
        files={"data/in.txt": "hello", "b.bin": b"\x00\x01"},
    )
    assert r.status == "ok", r.describe()
    assert r.stdout == b"/work hello b'\\x00\\x01'\n"


def test_exit_codes_and_signals(sandbox):
    r = sandbox.run(["python3", "-c", "import sys; sys.exit(3)"])
    assert (r.status, r.exit_code, r.signal) == ("runtime_error", 3, None)
    r = sandbox.run(["python3", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert (r.status, r.exit_code, r.signal) == ("runtime_error", None, signal.SIGSEGV)
    r = sandbox.run(["python3", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert (r.status, r.signal) == ("killed", signal.SIGTERM)
    r = sandbox.run(["python3", "-c", "raise ValueError('boom')"])
    assert r.status == "runtime_error" and b"ValueError: boom" in r.stderr


def test_missing_program_is_a_runtime_error(sandbox):
    r = sandbox.run(["no-such-program"])
    assert r.status == "runtime_error" and r.exit_code == 127


def test_usage_is_measured(sandbox):
    r = sandbox.run(
        ["python3", "-c", "x = bytearray(64 << 20)\nfor _ in range(3_000_000): pass"],
        limits=Limits(cpu_s=10, wall_s=20),
    )
    assert r.status == "ok", r.describe()
    assert r.cpu_s > 0.05
    assert r.max_rss_mb > 60


def test_python_program(sandbox):
    r = sandbox.run_program("python", "print(sum(map(int, input().split())))", stdin=b"2 40\n")
    assert r.status == "ok" and r.stdout == b"42\n"


@pytest.fixture
def cpp(sandbox):
    if not sandbox.supports("cpp"):
        pytest.skip("no g++ in this sandbox")
    return sandbox


def test_cpp_compile_once_run_many(cpp):
    with cpp.program("cpp", CPP_SUM) as prog:
        assert prog.built and prog.compile_result.status == "ok"
        outs = [prog.run(stdin=f"{i} {i * 10}".encode()).stdout for i in range(3)]
    assert outs == [b"0\n", b"11\n", b"22\n"]


def test_cpp_compile_error(cpp):
    r = cpp.run_program("cpp", "int main() { return undefined_name; }")
    assert r.status == "compile_error"
    assert b"undefined_name" in r.stderr


def test_cpp_memory_and_file_limits(cpp):
    r = cpp.run_program(
        "cpp", "#include <vector>\nint main() { std::vector<int> v(1 << 30, 1); return v[7] - 1; }"
    )
    assert r.status == "memory", r.describe()
    big_file = '#include <cstdio>\nint main() { FILE* f = fopen("/tmp/out", "w"); for (;;) fputc(1, f); }'
    r = cpp.run_program("cpp", big_file, limits=Limits(file_size_mb=1))
    assert r.status == "output_limit" and r.signal == signal.SIGXFSZ, r.describe()


def test_built_program_cannot_change_its_work_dir(sandbox):
    src = "import os\ntry:\n    os.remove('main.py'); print('removed')\nexcept OSError:\n    print('kept')\n"
    with sandbox.program("python", src) as prog:
        first, second = prog.run(), prog.run()
    assert first.stdout == second.stdout == b"kept\n"


def test_scratch_files_go_to_tmp(sandbox):
    r = sandbox.run_program("python", "open('/tmp/x', 'w').write('1'); print(open('/tmp/x').read())")
    assert r.status == "ok" and r.stdout == b"1\n"


def test_concurrent_runs_from_threads(sandbox):
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> bytes:
        return sandbox.run(["python3", "-c", f"print(input() * {i})"], stdin=b"ab\n").stdout

    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(one, range(8)))
    assert outs == [b"ab" * i + b"\n" for i in range(8)]
