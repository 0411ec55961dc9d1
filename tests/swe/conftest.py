"""Shared SWE fixtures: one real repository (isodate's sdist, from PyPI, cached) and two tasks
synthesised from it, made once per session. Images are cached by the engine under content-hash
tags, so later sessions rebuild nothing; sdists and wheelhouses stay in the shared SWE cache
($M1_SWE_CACHE, else ~/.cache/m1/swe)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = "isodate"  # the fastest suite of the bundled profiles (280 tests in about a second)


@pytest.fixture(scope="session")
def engine_client():
    from sandboxes import SandboxUnavailable
    from sandboxes.container import engine

    try:
        return engine()
    except SandboxUnavailable as exc:
        pytest.skip(f"Docker engine unavailable: {exc}")


@pytest.fixture(scope="session")
def swe_repos(tmp_path_factory, engine_client) -> Path:
    from flows.swe.repos import make_repos

    root = tmp_path_factory.mktemp("swe-repos")
    try:
        make_repos([REPO], root)
    except ConnectionError as exc:  # PyPI unreachable and the sdist not cached
        pytest.skip(str(exc))
    return root


@pytest.fixture(scope="session")
def scorer(swe_repos, engine_client):
    from dataclasses import replace

    from sandboxes.swe_images import SWEImages
    from sandboxes.swe_run import SWE_LIMITS
    from verifiers.swe import SWEScorer

    return SWEScorer(swe_repos, replace(SWE_LIMITS, wall_s=60), SWEImages(client=engine_client))


@pytest.fixture(scope="session")
def swe_tasks(swe_repos, scorer) -> list[dict]:
    """Two synthesised tasks of isodate (seed 0), with their instance images built."""
    from flows.swe.repos import PROFILES
    from flows.swe.synthesize import SynthesisParams, synthesize_repo

    result = synthesize_repo(PROFILES[REPO], swe_repos / REPO, 2, SynthesisParams(seed=0), scorer)
    assert len(result.tasks) == 2, result
    return result.tasks


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=input, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture(scope="session")
def make_patch(swe_repos):
    """``make_patch(commit, {"path|old": new})``: a unified diff against `commit` of isodate that
    replaces `old` with `new` in `path` (``{"path": new}`` appends to it)."""
    return lambda commit, changes: patch_of(swe_repos / REPO, commit, changes)


def patch_of(repo: Path, commit: str, changes: dict[str, str]) -> str:
    worktree = repo.parent / f".wt-{commit[:8]}"
    if not worktree.exists():
        git(repo, "worktree", "add", "-q", "--detach", str(worktree), commit)
    git(worktree, "checkout", "-q", "--force", commit)
    for key, new in changes.items():
        path, _, old = key.partition("|")
        target = worktree / path
        text = target.read_text() if target.exists() else ""
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace(old, new, 1) if old else text + new)
    git(worktree, "add", "-A")
    diff = git(worktree, "diff", "--cached", "--no-color")
    git(worktree, "reset", "-q", "--hard", commit)
    return diff
