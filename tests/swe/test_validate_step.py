"""SWE validation as a data step (flows/swe/validate.py: Validate): kept tasks come back as validated,
dropped ones with their first reason, in the order the flow deals them to its shards; no Docker (the
validation of one task is replaced by a recorded outcome)."""

from __future__ import annotations

import json

import polars as pl

from flows.config import SWEConfig
from flows.schema import QUARANTINE_REASON
from flows.store import StepCount
from flows.swe import flow as swe_flow
from flows.swe import validate as validate_module
from flows.swe.validate import Validate, Validation, task_rows

DROPS = {"t1": "FAIL_TO_PASS passes before the gold patch: test_a", "t4": "no FAIL_TO_PASS tests"}


def fake_validate_task(row: dict, scorer) -> Validation:
    done = row | {"image": f"m1-swe-instance:{row['instance_id']}"}
    why = DROPS.get(row["instance_id"], "")
    return Validation(row["instance_id"], not why, why, 1.5, done)


class InProcessTasks:
    """flows.runner.Tasks without a task runner: each step's function on each batch, here."""

    def __init__(self) -> None:
        self.batches: list[pl.DataFrame] = []

    def map(self, step, items: list, *args) -> list:
        self.batches += items
        return [step.fn(item, *args) for item in items]


def test_validate_keeps_and_drops_with_reasons_in_the_dealt_order(monkeypatch):
    monkeypatch.setattr(validate_module, "validate_task", fake_validate_task)
    monkeypatch.setattr(validate_module, "scorer", lambda c, repos: None)
    candidates = [{"instance_id": f"t{i}", "repo": "r", "FAIL_TO_PASS": ["test_a"]} for i in range(5)]
    tasks = InProcessTasks()
    res = swe_flow.validate(tasks, SWEConfig(workers=2), "/repos", candidates)
    # dealt round-robin to 2 shards: t0 t2 t4 | t1 t3, and reported in that order
    assert [b["instance_id"].to_list() for b in tasks.batches] == [["t0", "t2", "t4"], ["t1", "t3"]]
    assert res.kept["instance_id"].to_list() == ["t0", "t2", "t3"]
    assert json.loads(res.kept["task"][0]) == candidates[0] | {"image": "m1-swe-instance:t0"}
    assert res.removed.select("instance_id", QUARANTINE_REASON).rows() == [
        ("t4", DROPS["t4"]),
        ("t1", DROPS["t1"]),
    ]
    assert res.count == StepCount("validate", 5, 3, "F2P fail before, all pass after the gold patch")


def test_no_candidates_is_an_empty_step_with_its_count(monkeypatch):
    monkeypatch.setattr(validate_module, "scorer", lambda c, repos: None)
    res = Validate(SWEConfig(), "/repos").run(task_rows([]))
    assert res.kept.height == 0 and res.removed.height == 0
    assert res.count == StepCount("validate", 0, 0, "F2P fail before, all pass after the gold patch")
