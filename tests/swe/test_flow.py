"""The SWE flow end to end (repositories -> synthesis -> validation -> `{run}-swe`), its cache on a
rerun, and the `m1 swe` commands' contracts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from flows.cli import app

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_flow_writes_validated_items_and_reruns_from_cache_on_dask(
    prefect_harness, swe_repos, swe_tasks, m1_home
):
    from flows.config import PipelineConfig
    from flows.datasets import dataset_name
    from flows.store import DatasetStore
    from flows.swe.flow import swe_tasks as swe_flow

    config = PipelineConfig(
        name="t", swe={"enabled": True, "repos": ["isodate"], "n_tasks": 2, "repos_dir": str(swe_repos)}
    )
    first = swe_flow(config)
    store = DatasetStore()
    df = store.read(dataset_name("t", "swe"))
    assert df.height == 6 and set(df["task"]) == {"repair", "localize", "testgen"}
    assert set(df["domain"]) == {"swe"}
    meta = json.loads(df["metadata"][0])
    assert {
        "instance_id",
        "base_commit",
        "patch",
        "FAIL_TO_PASS",
        "PASS_TO_PASS",
        "python_packages",
        "image",
    } <= set(meta)
    # same seed, same tasks as the session's synthesis (the fixture made them from the same commit)
    assert sorted({json.loads(m)["instance_id"] for m in df["metadata"]}) == sorted(
        t["instance_id"] for t in swe_tasks
    )
    assert sum(first["kinds"].values()) == 2
    steps = {s.step: s for s in store.manifest(dataset_name("t", "swe")).steps}
    assert steps["validate"].rows_out == 2

    # The rerun goes through Dask workers (flows/runner.py): they find the first run's cached results.
    # (A rerun from the same inputs would reuse the dataset without running a step, whatever the runner:
    # forgetting what it was built from makes the flow run its steps again.)
    from distributed import LocalCluster

    (store.datasets / dataset_name("t", "swe") / "BUILT_FROM.json").unlink()

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_dask = config.model_copy(
            update={
                "runner": config.runner.model_copy(
                    update={"kind": "dask", "dask_address": cluster.scheduler_address}
                )
            }
        )
        second = swe_flow(on_dask)
    states = dict(second["tasks"])
    assert states["swe-synthesize"] == "Cached" and states["swe-validate"] == "Cached"
    assert store.read(dataset_name("t", "swe")).equals(df)


def test_evaluate_scores_every_prediction_and_never_stops(tmp_path, swe_repos, swe_tasks):
    task = swe_tasks[0]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in swe_tasks))
    preds = [
        {"instance_id": task["instance_id"], "model_patch": task["patch"]},
        {"instance_id": swe_tasks[1]["instance_id"], "model_patch": ""},
        {"instance_id": "nobody__nothing", "model_patch": task["patch"]},
        {"instance_id": task["instance_id"], "model_patch": "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"},
    ]
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds) + "not json\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["swe", "evaluate", "--tasks", str(tmp_path / "tasks.jsonl"), "--predictions",
                                      str(tmp_path / "preds.jsonl"), "--output", str(out), "--repos", str(swe_repos)])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [set(r) for r in rows] == [{"instance_id", "resolved", "reward", "details"}] * 5
    assert [r["reward"] for r in rows] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert rows[0]["resolved"] is True and rows[0]["details"]["tests"]["FAIL_TO_PASS"]
    assert rows[1]["details"]["reason"] == "empty patch"
    assert rows[2]["details"]["reason"] == "unknown instance 'nobody__nothing'"
    assert "outside the repository" in rows[3]["details"]["reason"]
    assert "invalid JSON" in rows[4]["details"]["reason"]


def test_validate_command_keeps_good_tasks_and_quarantines_broken_ones(tmp_path, swe_repos, swe_tasks):
    broken = {
        **swe_tasks[1],
        "instance_id": "isodate__broken",
        "FAIL_TO_PASS": swe_tasks[1]["PASS_TO_PASS"][:1],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(swe_tasks[0]) + "\n" + json.dumps(broken) + "\n" + '{"instance_id": 3}\n')
    result = CliRunner().invoke(
        app, ["swe", "validate", "--tasks", str(tasks), "--repos", str(swe_repos), "--run", "v"]
    )
    assert result.exit_code == 0, result.output
    kept = [json.loads(line) for line in (tmp_path / "tasks.valid.jsonl").read_text().splitlines()]
    dropped = [json.loads(line) for line in (tmp_path / "tasks.quarantine.jsonl").read_text().splitlines()]
    assert [t["instance_id"] for t in kept] == [swe_tasks[0]["instance_id"]]
    assert [t["instance_id"] for t in dropped] == ["isodate__broken"]
    assert dropped[0]["reason"].startswith("FAIL_TO_PASS passes before the gold patch")
    assert "line 3" in result.output  # the unreadable row is reported, not silently skipped


def test_images_command_builds_nothing_when_everything_is_cached(tmp_path, swe_repos, swe_tasks):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in swe_tasks))
    result = CliRunner().invoke(
        app, ["swe", "images", "--tasks", str(tasks), "--repos", str(swe_repos)], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    assert "(0 built now)" in result.output
    assert result.output.count("m1-swe-instance:") == 2 and "m1-swe-env:isodate-" in result.output
