"""Run a task's tests in its instance image: copy the repository, apply a patch, run the test command.

One container per run through the Docker sandbox (sandboxes/container.py: no network, read-only root
filesystem, unprivileged user, cgroup memory/pids limits, a wall deadline, always removed). The run
copies the image's repository (/src) into a size-capped private tmpfs at /testbed and works there, so
a patch can change nothing but its own copy; the patch and any extra files come in through the
sealed (read-only) work dir.

The log follows SWE-bench's harness markers (`>>>>> Applied Patch`, `>>>>> Start Test Output`,
`>>>>> End Test Output`, `>>>>> Test Exit Code: N`), so swebench's grading reads it as it reads its
own (verifiers/swe/grading.py). Before the tests run, the files they are graded by (the listed test files and
every conftest.py) are restored to the instance's version: a patch is judged on the task's tests, not
on tests it rewrote.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sandboxes.limits import Limits, RunResult
from sandboxes.swe_images import SRC, TESTBED
from sandboxes.workspace import WORK_MOUNT, seal, workspace

# SWE-bench's log markers (swebench.harness.constants), so that its grading reads these logs as it
# reads its own; spelled out because importing swebench.harness loads modal, datasets and pandas
# (seconds), which running a container does not need. tests/swe/test_units.py checks they agree.
APPLIED = ">>>>> Applied Patch"
APPLY_FAILED = ">>>>> Patch Apply Failed"
START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
EXIT_CODE = ">>>>> Test Exit Code"

# --no-fold-skipped (pytest >= 8.3; environments install a current pytest): pytest names each skipped test
# in the summary instead of folding skips into "SKIPPED [n] file:line", so SWE-bench's grading can count a
# skipped PASS_TO_PASS test as kept, as it does; folded, the test would be missing, which counts as failed.
DEFAULT_TEST_CMD = "python -m pytest -rA --no-fold-skipped -p no:cacheprovider"
# A whole suite of a small library, with room for a slow machine; a runaway run stops at these.
SWE_LIMITS = Limits(
    cpu_s=300, wall_s=180, memory_mb=2048, processes=256, file_size_mb=64, open_files=1024,
    output_bytes=16 << 20,
)  # fmt: skip
TESTBED_MB = 256
LIMIT_STATUSES = ("timeout", "memory", "output_limit")


@dataclass(frozen=True)
class TestRun:
    """How one run went: the container's result and the log it printed."""

    result: RunResult
    log: str
    patch_given: bool

    @property
    def applied(self) -> bool:
        return not self.patch_given or APPLIED in self.log

    @property
    def apply_error(self) -> str:
        """git apply's complaint when the patch did not apply, else ''."""
        if APPLY_FAILED not in self.log:
            return ""
        return self.log.split(APPLY_FAILED)[0].strip()[-2000:]

    @property
    def completed(self) -> bool:
        """The test command ran to its end (no limit or kill cut it short)."""
        return END in self.log and EXIT_CODE in self.log

    @property
    def limit(self) -> str | None:
        """The limit that stopped the run (timeout, memory, output_limit), if one did."""
        return self.result.status if self.result.status in LIMIT_STATUSES else None

    @property
    def test_output(self) -> str:
        """The test command's own output (between the start and end markers)."""
        if START not in self.log:
            return ""
        return self.log.split(START, 1)[1].split(END, 1)[0]

    def describe(self) -> str:
        if self.result.status == "sandbox_error":
            return f"sandbox error: {self.result.stderr.decode(errors='replace')[-500:]}"
        if not self.applied:
            return "the patch does not apply"
        if self.limit:
            return f"stopped by the {self.limit} limit ({self.result.describe()})"
        if not self.completed:
            return f"the test run did not complete: {self.result.describe()}"
        return "completed"


def files_of(test_ids: Sequence[str]) -> list[str]:
    """The files that hold pytest node ids (``path::Class::test``), sorted: suites whose tests share
    state pass or fail by file order, so every run of a task uses the same one."""
    return sorted({t.split("::", 1)[0] for t in test_ids})


def script(files: Sequence[str], *, patch: bool, extra: Mapping[str, str], test_cmd: str) -> str:
    quoted = " ".join(shlex.quote(f) for f in files)
    lines = [
        "exec 2>&1",
        "set -u",
        f"cp -R {SRC}/. {TESTBED}/ || exit 90",
        f"cd {TESTBED}",
    ]
    if patch:
        lines += [
            f"if git apply -v {WORK_MOUNT}/model.patch >/tmp/m1-apply.log 2>&1 \\",
            f"   || git apply -v --recount {WORK_MOUNT}/model.patch >/tmp/m1-apply.log 2>&1; then",
            f"  echo '{APPLIED}'",
            "else",
            f"  cat /tmp/m1-apply.log; echo '{APPLY_FAILED}'; exit 91",
            "fi",
        ]
    lines += [
        # The task's tests and every conftest.py as the instance has them, whatever the patch did.
        f'for f in {quoted}; do git cat-file -e HEAD:"$f" 2>/dev/null && git checkout -q HEAD -- "$f"; done'
        if files
        else ":",
        "git ls-files -z -- '*conftest.py' | xargs -0r git checkout -q HEAD --",
        "git ls-files -z --others -- '*conftest.py' | xargs -0r rm -f --",
    ]
    for target, name in extra.items():
        lines.append(
            f'mkdir -p "$(dirname {shlex.quote(target)})" && cp {WORK_MOUNT}/{name} {shlex.quote(target)}'
        )
    lines += [
        f"echo '{START}'",
        f"{test_cmd} {quoted}",
        "rc=$?",
        f"echo '{END}'",
        f"echo '{EXIT_CODE}: '$rc",
    ]
    return "\n".join(lines) + "\n"


def run_tests(
    image: str,
    files: Sequence[str],
    *,
    patch: str = "",
    extra: Mapping[str, str] | None = None,
    test_cmd: str = DEFAULT_TEST_CMD,
    limits: Limits = SWE_LIMITS,
    testbed_mb: int = TESTBED_MB,
    client=None,
) -> TestRun:
    """Run `test_cmd` on the test `files` in a fresh container of `image`, after applying `patch`
    (a unified diff; empty: none) and copying `extra` ({path in the repository: content}) in."""
    from sandboxes.container import DockerSandbox

    extra = dict(extra or {})
    names = {target: f"extra-{i}" for i, target in enumerate(extra)}
    work = {
        "run.sh": script(files, patch=bool(patch.strip()), extra=names, test_cmd=test_cmd),
        "model.patch": patch,
        **{names[target]: content for target, content in extra.items()},
    }
    sandbox = DockerSandbox(image, client=client, tmpfs={TESTBED: testbed_mb})
    with workspace(work) as ws:
        seal(ws)  # the run reads its inputs; it writes only to /testbed and /tmp
        result = sandbox.run_in(ws, ["bash", f"{WORK_MOUNT}/run.sh"], stdin=b"", limits=limits)
    log = result.stdout.decode(errors="replace")
    return TestRun(result, log, bool(patch.strip()))
