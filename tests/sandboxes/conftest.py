"""Fixtures for the sandbox tests: a `sandbox` per backend and a check that nothing of a run survives."""

from __future__ import annotations

import contextlib
import os

import psutil
import pytest

import sandboxes
import sandboxes.workspace
from sandboxes import SandboxUnavailable, get_sandbox


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request):
    try:
        return get_sandbox(request.param)
    except SandboxUnavailable as exc:
        if request.param == "docker":
            pytest.skip(f"Docker engine unavailable: {exc}")
        raise


@pytest.fixture
def leased_uids(monkeypatch) -> list[int]:
    """Every uid a run in this test was given (runs of other tests or processes are not counted)."""
    uids: list[int] = []
    real = sandboxes.workspace.lease_uid

    @contextlib.contextmanager
    def recording():
        with real() as uid:
            uids.append(uid)
            yield uid

    monkeypatch.setattr(sandboxes.workspace, "lease_uid", recording)
    return uids


@pytest.fixture
def nothing_left_behind(leased_uids):
    """After the test: no new child process of ours and no live process of any uid its runs used.

    Children that existed before the test (a session's Prefect test server, another test's worker
    pool) are not the sandbox's doing."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    children = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert not children, f"processes left behind: {children}"
    if os.geteuid() == 0:
        assert leased_uids, "the test ran nothing in a sandbox"
        survivors = []
        for p in psutil.process_iter(["uids", "status"]):
            if (
                p.info["uids"]
                and p.info["uids"].real in leased_uids
                and p.info["status"] != psutil.STATUS_ZOMBIE
            ):
                survivors.append(p)
        assert not survivors, f"sandbox processes survived: {survivors}"
    docker = sandboxes._cache.get("docker")
    if docker is not None:
        from sandboxes.container import LABEL

        mine = [
            c
            for c in docker.client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
            if int(c.labels[LABEL]) in leased_uids
        ]
        assert not mine, f"containers left behind: {mine}"
