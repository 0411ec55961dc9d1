"""A tiny library as an sdist, and a scorer that runs its suite in this process: what the fast tests of
SWE repository building, synthesis and items use instead of PyPI and Docker.

``sdist(cache)`` writes ``mini-1.0.tar.gz`` where flows/swe/repos.py looks for a cached download, so
`make_repo` builds the git repository exactly as it does for the real profiles. `SuiteScorer` stands in
for SWEScorer: its image is the content-hash tag the real images compute for the instance, and a run
executes the suite's test functions against the library's files at the task's commit (with the run's
`extra` files in place), answering with the log the SWE run script prints around pytest -rA.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flows.swe.repos import RepoProfile, git
from sandboxes import swe_images, swe_run
from sandboxes.limits import RunResult
from sandboxes.swe_images import SWEImages
from tests.fakes.docker import FakeDocker

PROFILE = RepoProfile("mini", "mini==1.0", ("src/mini",), ("tests",))
LIBRARY = "src/mini/calc.py"

FILES = {
    "setup.py": "from setuptools import setup\nsetup(name='mini', version='1.0')\n",
    "src/mini/__init__.py": "",
    LIBRARY: """\
def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


def between(x, low, high):
    return low <= x and x <= high


def span(low, high):
    return high - low


def scaled(values, factor):
    return [v * factor for v in values if v is not None]
""",
    "src/mini/conftest.py": "",  # not a module of the library
    "src/mini/tests/test_inner.py": "def test_inner():\n    pass\n",  # a suite inside the package
    "tests/__init__.py": "",
    "tests/helpers.py": "LOW, HIGH = 0, 5\n",  # in the suite's folder but not a test module
    "tests/test_calc.py": """\
def test_clamp_low():
    assert calc.clamp(-1, 0, 5) == 0


def test_clamp_high():
    assert calc.clamp(9, 0, 5) == 5


def test_clamp_inside():
    assert calc.clamp(3, 0, 5) == 3


def test_between_edges():
    assert calc.between(0, 0, 5) and calc.between(5, 0, 5)


def test_between_outside():
    assert not calc.between(6, 0, 5) and not calc.between(-1, 0, 5)
""",
    "tests/span_test.py": """\
def test_span():
    assert calc.span(2, 7) == 5


def test_scaled():
    assert calc.scaled([1, None, 3], 2) == [2, 6]


def test_unrelated():
    assert 1 + 1 == 2
""",
}
SUITE = ["tests/span_test.py", "tests/test_calc.py"]


def sdist(
    cache: Path,
    files: dict[str, str | None] | None = None,
    *,
    name: str = "mini-1.0",
    links: dict | None = None,
) -> Path:
    """The library's sdist in the cache folder `make_repo` reads (``files`` adds, replaces or, with
    None, leaves out files; ``links``: symbolic links, path -> target); its members under ``<name>/``
    as setuptools writes them."""
    folder = Path(cache) / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.tar.gz"
    content = {k: v for k, v in {**FILES, **(files or {})}.items() if v is not None}
    with tarfile.open(target, "w:gz") as tar:
        for path, text in sorted(content.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size, info.mtime = len(data), 946684800
            tar.addfile(info, io.BytesIO(data))
        for path, to in (links or {}).items():
            info = tarfile.TarInfo(f"{name}/{path}")
            info.type, info.linkname = tarfile.SYMTYPE, to
            tar.addfile(info)
    return target


def no_base_build(monkeypatch) -> FakeDocker:
    """Content-hash tags without an engine: the sandbox base image is taken as present."""
    monkeypatch.setattr(swe_images, "ensure_image", lambda client, cpp: "m1-sandbox:py-cpp-test")
    return FakeDocker(refuse=True)  # computing a tag must not reach the engine


def run_log(outcomes: dict[str, str], *, complete: bool = True, status: str = "ok") -> swe_run.TestRun:
    """A run as the SWE run script prints it: pytest -rA's summary (``FAILED id - reason``) between the
    start and end markers."""
    lines = [f"{s} {test}" + (f" - {why}" if why else "") for test, (s, why) in _split(outcomes).items()]
    log = f"{swe_run.START}\n=== short test summary info ===\n" + "\n".join(lines) + "\n=== 1 failed ===\n"
    if complete:
        log += f"{swe_run.END}\n{swe_run.EXIT_CODE}: 1\n"
    result = RunResult(status, 0 if complete else None, None, log.encode(), b"", 0.1, 0.1, 10.0, False)
    return swe_run.TestRun(result, log, patch_given=False)


def _split(outcomes: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {t: (o.split(" - ", 1) + [""])[:2] for t, o in outcomes.items()}


@dataclass
class SuiteScorer:
    """SWEScorer's `image` and `run`, in-process (see the module docstring). ``incomplete(n)`` says
    whether the n-th run (0: the baseline) stops before its end, as a timeout would stop it."""

    repos_dir: Path
    client: FakeDocker
    incomplete: Callable[[int], bool] = lambda n: False
    runs: list[dict] = field(default_factory=list)  # the `extra` of each run

    def image(self, task) -> str:
        return SWEImages(client=self.client, cache="unused").instance_tag(task.instance_spec(self.repos_dir))

    def run(self, task, files, extra=None) -> swe_run.TestRun:
        repo = Path(self.repos_dir) / task.repo
        self.runs.append(dict(extra or {}))
        if self.incomplete(len(self.runs) - 1):
            return run_log({}, complete=False, status="timeout")
        source = (extra or {}).get(LIBRARY) or git(repo, "show", f"{task.base_commit}:{LIBRARY}")
        calc: dict = {}
        exec(compile(source, LIBRARY, "exec"), calc)  # noqa: S102 - the test's own library
        outcomes = {}
        for path in files:
            suite = {"calc": type("calc", (), {k: staticmethod(v) for k, v in calc.items() if callable(v)})}
            exec(compile(git(repo, "show", f"{task.base_commit}:{path}"), path, "exec"), suite)  # noqa: S102
            for name, test in suite.items():
                if name.startswith("test_"):
                    try:
                        test()
                        outcomes[f"{path}::{name}"] = "PASSED"
                    except Exception as exc:  # noqa: BLE001 - a failing test of the suite
                        outcomes[f"{path}::{name}"] = (
                            f"FAILED - {type(exc).__name__}: {exc} at 0x7f00deadbeef"
                        )
        return run_log(outcomes)
