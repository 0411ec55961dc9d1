"""Shared fixtures. Tests never touch the user's ./.m1 or Prefect home."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The tests' models and tensors are tiny: one intra-op thread is fastest, and two spinning OpenMP
# threads on a busy 2-core machine can make each small op 10-100x slower.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def m1_home(tmp_path, monkeypatch):
    """Every test gets its own dataset store."""
    home = tmp_path / "m1home"
    monkeypatch.setenv("M1_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def prefect_harness():
    """A temporary Prefect server + database for tests that run flows (started once per session)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
