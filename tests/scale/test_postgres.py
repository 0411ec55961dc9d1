"""The Prefect server on PostgreSQL, for real: `m1 ui --database URL` against a throwaway cluster, the
curation flow and a training stage run through it, their runs and artifacts read back through the API
and seen in PostgreSQL's own tables."""

from __future__ import annotations

import asyncio
import os

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import load_config
from flows.errors import InputError

from .conftest import M1, free_port, healthy, started, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CURRICULUM = """
name = "pg"
datasets = ["{run}-curated"]

[[stages]]
name = "a"
mixture = { math = 1.0 }
steps = 1
max_new_tokens = 4
"""


def test_curate_and_train_stage_through_a_prefect_server_on_postgres(postgres, tmp_path):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.curate.flow import curate_flow
    from flows.train import train_stage

    port = free_port()
    log = tmp_path / "ui.log"
    env = {"PREFECT_HOME": str(tmp_path / "prefect"), "M1_HOME": str(tmp_path / "home")}
    with started([*M1, "ui", "--port", str(port), "--database", postgres], log, os.environ | env) as server:
        api = f"http://127.0.0.1:{port}/api"
        wait_until(healthy(f"{api}/health"), "m1 ui --database", server, log, timeout=300)
        assert "Prefect database: postgresql+asyncpg://prefect:***@127.0.0.1" in log.read_text()
        (tmp_path / "cur.toml").write_text(CURRICULUM)
        cfg = load_config(
            None,
            [
                "name=pg",
                f"home={tmp_path / 'home'}",
                "data.n_problems=30",
                f"train.curriculum={tmp_path / 'cur.toml'}",
                "train.sft_steps=1",
                "train.prompts_per_step=2",
                "train.group_size=2",
                "train.batch_size=4",
                "train.max_sampling_rounds=1",
                "model.num_hidden_layers=2",
                "model.num_local_experts=2",
                "model.num_experts_per_tok=1",
            ],
        )
        with temporary_settings({PREFECT_API_URL: api}):
            curated = curate_flow(cfg)["manifest"]
            summary = train_stage("a", cfg)
            runs, artifacts = asyncio.run(_read_back())
    assert curated["name"] == "pg-curated" and curated["rows"] > 0 and summary["stage"] == "a"
    assert runs["m1-curate"] == ["COMPLETED"] and runs["m1-curate-steps"] == ["COMPLETED"]
    assert runs["train-stage"] == ["COMPLETED"]
    assert {"curation-report", "curation-steps", "pg-a-metrics", "pg-a-report"} <= artifacts
    # ... and they are rows of PostgreSQL's tables, not of some SQLite file.
    tables = asyncio.run(_query(postgres, "SELECT f.name FROM flow_run r JOIN flow f ON f.id = r.flow_id"))
    assert {"m1-curate", "m1-curate-steps", "train-stage"} <= {row[0] for row in tables}
    assert not list((tmp_path / "prefect").rglob("*.db"))


async def _read_back() -> tuple[dict[str, list[str]], set[str]]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        flows = {f.id: f.name for f in await client.read_flows()}
        runs: dict[str, list[str]] = {}
        for run in await client.read_flow_runs():
            runs.setdefault(flows[run.flow_id], []).append(run.state_type.value)
        artifacts = {a.key for a in await client.read_artifacts() if a.key}
    return runs, artifacts


async def _query(url: str, sql: str) -> list[tuple]:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


def test_ui_refuses_a_database_it_cannot_reach(postgres):
    """A wrong password or a stopped database is one line before the server starts, not a traceback."""
    wrong = postgres.replace("prefect:m1-", "prefect:wrong-")
    res = CliRunner().invoke(app, ["ui", "--database", wrong])
    assert isinstance(res.exception, InputError)  # `m1` prints it as one line and exits 2
    assert "cannot connect to the Prefect database postgresql+asyncpg://prefect:***@" in str(res.exception)
    assert "wrong-" not in str(res.exception)  # the password is not printed
    res = CliRunner().invoke(app, ["ui", "--database", "mysql://u:p@h/db"])
    assert "expected postgresql+asyncpg://" in str(res.exception)
