"""Pieces that need no sandbox: limits, status classification, GNU time reports, file names."""

from __future__ import annotations

import signal

import pytest

from sandboxes import Limits, get_sandbox
from sandboxes.classify import classify
from sandboxes.languages import language
from sandboxes.usage import parse
from sandboxes.workspace import workspace


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)


def _status(**kw):
    base = dict(
        limits=Limits(),
        exit_code=0,
        signum=None,
        stderr=b"",
        cpu_s=0.1,
        max_rss_mb=10.0,
        wall_exceeded=False,
        output_exceeded=False,
    )
    return classify(**{**base, **kw})


@pytest.mark.parametrize(
    ("kw", "status"),
    [
        ({}, "ok"),
        ({"exit_code": 1}, "runtime_error"),
        ({"exit_code": None, "signum": signal.SIGSEGV}, "runtime_error"),
        ({"exit_code": None, "signum": signal.SIGXCPU}, "timeout"),
        ({"cpu_s": 2.5}, "timeout"),
        ({"wall_exceeded": True, "exit_code": None, "signum": signal.SIGKILL}, "timeout"),
        ({"output_exceeded": True, "wall_exceeded": True}, "output_limit"),
        ({"exit_code": None, "signum": signal.SIGXFSZ}, "output_limit"),
        ({"exit_code": 1, "stderr": b"Traceback...\nMemoryError\n"}, "memory"),
        ({"exit_code": None, "signum": signal.SIGABRT, "stderr": b"what():  std::bad_alloc"}, "memory"),
        ({"exit_code": None, "signum": signal.SIGKILL, "oom_killed": True}, "memory"),
        ({"exit_code": None, "signum": signal.SIGKILL, "max_rss_mb": 250.0}, "memory"),
        ({"exit_code": None, "signum": signal.SIGKILL}, "killed"),
    ],
)
def test_classify(kw, status):
    assert _status(**kw) == status


def test_parse_gnu_time_report():
    ok = parse("m1-usage 0 0.50 0.25 20480\n")
    assert (ok.exit_code, ok.signal, ok.cpu_s, ok.max_rss_mb) == (0, None, 0.75, 20.0)
    sig = parse("Command terminated by signal 11\nm1-usage 0 0.01 0.00 1024\n")
    assert (sig.exit_code, sig.signal) == (None, 11)
    code = parse("Command exited with non-zero status 137\nm1-usage 137 0.01 0.00 1024\n")
    assert (code.exit_code, code.signal) == (137, None)  # an exit(137) is not mistaken for SIGKILL
    assert parse("") is None


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../x", "", "."])
def test_file_names_must_stay_inside_the_work_dir(name):
    with pytest.raises(ValueError, match="relative path"):
        with workspace({name: "x"}):
            pass


def test_unknown_language_and_backend():
    with pytest.raises(ValueError, match="unknown language"):
        language("cobol")
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        get_sandbox("vm")  # type: ignore[arg-type]
