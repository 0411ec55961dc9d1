"""How the program ended and what it used, as told by GNU time running it inside the sandbox.

Inside a pid namespace the program is not our child, so `wait4` on our side cannot see its exit status
(bwrap folds signals into 128+N) or its CPU time and peak memory. GNU `time` is the program's direct
parent in there: it waits for it and reports both precisely. The report is advisory (the program runs
as the same uid and could overwrite it): limits are enforced by the kernel, never by these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

TIME = "/usr/bin/time"
_FORMAT = "m1-usage %x %U %S %M"


@dataclass(frozen=True)
class Usage:
    exit_code: int | None
    signal: int | None
    cpu_s: float
    max_rss_mb: float


def timed(argv: list[str] | tuple[str, ...], report_path: str) -> list[str]:
    """`argv` run under GNU time, which writes its report to `report_path` when the program ends."""
    return [TIME, "-f", _FORMAT, "-o", report_path, "--", *argv]


def parse(report: str) -> Usage | None:
    """Read GNU time's report; None when there is none (the run was killed before it ended)."""
    signum = None
    for line in report.splitlines():
        if line.startswith("Command terminated by signal "):
            signum = int(line.rsplit(" ", 1)[1])
        elif line.startswith("m1-usage "):
            _, code, user, system, rss_kb = line.split()
            return Usage(
                exit_code=None if signum is not None else int(code),
                signal=signum,
                cpu_s=float(user) + float(system),
                max_rss_mb=int(rss_kb) / 1024,
            )
    return None
