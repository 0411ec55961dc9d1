"""Real task repositories: git repositories made from the source distributions of pinned libraries.

Each profile names a small, pure-Python library whose sdist ships its own test suite, which runs
offline in a few seconds. `make_repos` downloads the sdist with pip (cached under the SWE cache
folder; pip's HTTP cache helps too), unpacks it and commits it as the only commit of a git repository
at ``DIR/<name>``. Author, committer and dates are fixed, so the same sdist always gives the same
commit: a rerun finds the repository in place and does nothing, and task commits built on it are
reproducible.

Not a flow: the SWE flow's first step (and `m1 swe repos`), kept beside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from flows.errors import InputError
from sandboxes.swe_images import default_cache

GIT_ENV = {
    "GIT_AUTHOR_NAME": "m1",
    "GIT_AUTHOR_EMAIL": "m1@localhost",
    "GIT_COMMITTER_NAME": "m1",
    "GIT_COMMITTER_EMAIL": "m1@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}
PYTEST = "pytest==9.0.2"


@dataclass(frozen=True)
class RepoProfile:
    """A library to make tasks from: where its code and tests are and what its tests need."""

    name: str  # the task's `repo`, and the folder under the repositories folder
    requirement: str  # the pinned sdist, e.g. cachetools==8.0.0
    sources: tuple[str, ...]  # folders (or files) whose code is mutated
    tests: tuple[str, ...]  # folders of the test suite
    python_packages: tuple[str, ...] = (PYTEST,)
    test_cmd: str | None = None  # default: sandboxes.swe_run.DEFAULT_TEST_CMD

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1]


# Chosen for suites that pass offline in about a second, with nothing but pytest, on Python 3.11.
PROFILES: dict[str, RepoProfile] = {
    p.name: p
    for p in (
        RepoProfile("cachetools", "cachetools==8.0.0", ("src/cachetools",), ("tests",)),
        RepoProfile("isodate", "isodate==0.7.2", ("src/isodate",), ("tests",)),
        RepoProfile("toolz", "toolz==1.2.0", ("toolz",), ("toolz/tests", "toolz/sandbox/tests")),
    )
}


def profile(name: str) -> RepoProfile:
    if name not in PROFILES:
        raise InputError(f"unknown repository {name!r} (known: {', '.join(PROFILES)})")
    return PROFILES[name]


def git(repo: Path, *args: str, input: bytes | None = None, env: dict | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=input,
        capture_output=True,
        env={**os.environ, **GIT_ENV, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])} in {repo}: {done.stderr.decode().strip()[-500:]}")
    return done.stdout.decode()


def sdist(p: RepoProfile, cache: Path) -> Path:
    """The profile's sdist, downloaded once into the cache (no wheels: the tests live in the sdist)."""
    folder = cache / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    stem = p.requirement.replace("==", "-").replace("-", "_").lower()
    found = [f for f in folder.glob("*.tar.gz") if f.name.replace("-", "_").lower().startswith(stem)]
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary=:all:",
               "--dest", tmp, p.requirement]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise ConnectionError(f"pip download {p.requirement} failed: {done.stderr.strip()[-800:]}")
        (got,) = Path(tmp).glob("*.tar.gz")
        target = folder / got.name
        shutil.move(got, target)
    return target


def expected_commit(p: RepoProfile, archive: Path) -> str:
    return f"{p.requirement} from {archive.name} (sha256 {hashlib.sha256(archive.read_bytes()).hexdigest()})"


def make_repo(p: RepoProfile, output: Path, cache: Path) -> dict:
    """``output/<name>``: a git repository holding the profile's sdist as one commit; kept when it
    already holds that commit. Returns a summary row."""
    archive = sdist(p, cache)
    message = expected_commit(p, archive)
    target = output / p.name
    if (target / ".git").exists():
        try:
            if git(target, "log", "-1", "--format=%s", "HEAD").strip() == message:
                return _summary(p, target, created=False)
        except RuntimeError:
            pass
        raise InputError(
            f"{target} exists but does not hold {p.requirement}; remove it or choose another --output"
        )
    output.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{p.name}.", dir=output))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        (root,) = [d for d in tmp.iterdir() if d.is_dir()]
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A", "-f")
        git(root, "commit", "-q", "--no-verify", "-m", message)
        missing = [d for d in (*p.sources, *p.tests) if not (root / d).exists()]
        if missing:
            raise InputError(f"{p.requirement}: the sdist has no {', '.join(missing)}")
        root.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _summary(p, target, created=True)


def _summary(p: RepoProfile, target: Path, created: bool) -> dict:
    files = git(target, "ls-files").splitlines()
    tests = [f for f in files if f.endswith(".py") and any(f.startswith(t + "/") for t in p.tests)]
    return {
        "repo": p.name,
        "requirement": p.requirement,
        "commit": git(target, "rev-parse", "HEAD").strip(),
        "files": len(files),
        "test_files": len(tests),
        "path": str(target),
        "created": created,
    }


def make_repos(names: list[str] | None, output: Path, cache: Path | None = None) -> list[dict]:
    cache = cache or default_cache()
    return [make_repo(profile(n), Path(output), cache) for n in (names or list(PROFILES))]


def head(repo_dir: Path) -> str:
    return git(repo_dir, "rev-parse", "HEAD").strip()


def suite_files(p: RepoProfile, repo_dir: Path, commit: str = "HEAD") -> list[str]:
    """The suite's test modules (test_*.py / *_test.py) at a commit."""
    files = git(repo_dir, "ls-tree", "-r", "--name-only", commit, "--", *p.tests).splitlines()
    return sorted(
        f for f in files if f.endswith(".py") and (Path(f).name.startswith("test_") or f.endswith("_test.py"))
    )


def source_files(p: RepoProfile, repo_dir: Path, commit: str = "HEAD") -> list[str]:
    """The library's own modules at a commit (tests and conftest excluded)."""
    files = git(repo_dir, "ls-tree", "-r", "--name-only", commit, "--", *p.sources).splitlines()
    return sorted(
        f
        for f in files
        if f.endswith(".py")
        and not any(f.startswith(t + "/") for t in p.tests)
        and Path(f).name != "conftest.py"
        and "/tests/" not in f"/{f}"
    )
