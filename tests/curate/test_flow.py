"""The curation flow: planted rows removed per step, cached reruns, store consistency, Dask = local."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import PipelineConfig
from flows.store import DatasetStore

PLANTED = {
    "exact-dedup": "exact",
    "minhash-dedup": "near",
    "decontaminate": "leak",
    "answer-check": "unparseable",
}


def tiny_config(home, shards: int = 3, runner: dict | None = None, **curate) -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "name": "t",
            "home": str(home),
            "data": {
                "n_problems": 40,
                "n_exact_duplicates": 4,
                "n_near_duplicates": 4,
                "n_benchmark_leaks": 3,
                "n_unparseable": 2,
            },
            "runner": {"shards": shards, **(runner or {})},
            "curate": curate,
        }
    )


def planted_kind(df: pl.DataFrame) -> list[str | None]:
    return [json.loads(m).get("planted") for m in df["metadata"]]


def test_flow_removes_planted_rows_and_a_rerun_reuses_it_or_hits_the_cache(prefect_harness, tmp_path):
    from flows.curate.flow import curate_flow as run

    cfg = tiny_config(tmp_path / "home")
    out = run(cfg)
    manifest = out["manifest"]
    store = DatasetStore(cfg.home)
    removed = store.quarantine("t-curated")
    for step, kind in PLANTED.items():
        got = removed.filter(pl.col("step") == step)
        assert planted_kind(got).count(kind) == {"exact": 4, "near": 4, "leak": 3, "unparseable": 2}[kind], (
            step
        )
        count = next(s for s in manifest["steps"] if s["step"] == step)
        assert count["removed"] == got.height
    assert removed.filter(pl.col("step") == "clean").height == 0
    curated = store.read("t-curated")
    assert "_row" not in curated.columns and set(planted_kind(curated)) == {None}
    assert sorted(manifest["parents"]) == ["t-curated-clusters@v1", "t-curated-matches@v1"]
    assert store.read("t-curated-matches")["benchmark"].unique().to_list() == ["tiny_benchmark"]

    assert "Cached" not in {state for _, state in out["tasks"]}
    assert len(list((tmp_path / "home" / "cache").iterdir())) >= 17  # persisted task results
    assert len(out["tasks"]) == 1 + 3 * 5 + 1  # generate, 5 steps over 3 shards, the MinHash reduce
    # The rerun, through the CLI: the same inputs, so nothing runs ...
    config_file = tmp_path / "curate.json"
    config_file.write_text(cfg.model_dump_json())
    res = CliRunner().invoke(app, ["curate", "run", "--config", str(config_file)], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert (
        "unchanged: built from the same inputs before (built because: first build); nothing ran" in res.output
    )
    # ... and with the record of what built it gone, every task resumes from cache, to the same output.
    (tmp_path / "home" / "datasets" / "t-curated" / "BUILT_FROM.json").unlink()
    res = CliRunner().invoke(app, ["curate", "run", "--config", str(config_file)], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "built because: first build; 17 of 17 tasks resumed from cache" in res.output
    assert store.versions("t-curated") == [1] and store.read("t-curated").equals(curated)  # same content
    assert store.versions("t-curated-clusters") == [1] and store.versions("t-curated-matches") == [1]


def test_interrupted_run_leaves_the_store_consistent(prefect_harness, tmp_path, monkeypatch):
    from flows.curate.flow import curate_flow as run

    cfg = tiny_config(tmp_path / "home", shards=1)
    run(cfg)
    store = DatasetStore(cfg.home)
    before = store.read("t-curated")
    # Crash while the curated dataset (the last write) is half written.
    real = pl.DataFrame.write_parquet

    def crash(self, file, *args, **kwargs):
        if "t-curated/" in str(file).replace("\\", "/"):
            with open(file, "wb") as fh:
                fh.write(b"PAR1 half a file")
            raise KeyboardInterrupt("killed mid-write")
        return real(self, file, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", crash)
    with pytest.raises(BaseException, match="killed mid-write"):
        run(tiny_config(tmp_path / "home", shards=1, minhash={"threshold": 0.75}))
    monkeypatch.setattr(pl.DataFrame, "write_parquet", real)
    for name in store.names():
        m = store.manifest(name)
        store.read(name)  # every LATEST version is complete and readable
        for parent in m.parents:
            ds, version = parent.split("@v")
            assert store.path(ds, int(version)).exists()
    assert store.latest("t-curated") == 1 and store.read("t-curated").equals(before)
    leftovers = [p for p in (store.datasets / "t-curated").iterdir() if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.slow
def test_dask_runner_gives_the_same_output_as_local(prefect_harness, dask_cluster, tmp_path):
    from flows.curate.flow import curate_flow as run

    local = run(tiny_config(tmp_path / "local", shards=3))["manifest"]
    out = run(tiny_config(tmp_path / "dask", shards=3, runner={"kind": "dask", "dask_address": dask_cluster}))
    dask = out["manifest"]
    assert [s | {"removed": 0} for s in dask["steps"]] == [s | {"removed": 0} for s in local["steps"]]
    a = DatasetStore(tmp_path / "local").read("t-curated")
    b = DatasetStore(tmp_path / "dask").read("t-curated")
    assert a.equals(b) and a.height == local["rows"]
    # the MinHash step ran on the distributed engine (one task driving the cluster), with equal clusters
    assert ("minhash-dedup", "Completed") in [tuple(t) for t in out["tasks"]]
    assert "minhash-sketch" not in {name for name, _ in out["tasks"]}
    clusters = [DatasetStore(tmp_path / k).read("t-curated-clusters") for k in ("local", "dask")]
    assert clusters[0].equals(clusters[1]) and "minhash-dedup" in set(clusters[1]["step"])


def test_flow_dedups_across_sources_and_separates_from_sft(prefect_harness, tmp_path):
    from flows.curate.flow import curate_flow as run

    rows = [
        {
            "problem": f"Compute {a} plus {b} and then multiply the result by {a} to get the final total value",
            "solution": f"\\boxed{{{(a + b) * a}}}",
        }
        for a, b in [(3, 4), (5, 6), (7, 8), (9, 10), (11, 12)]
    ]
    first, second, sft = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "sft.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]) + "{broken\n")
    second.write_text("".join(json.dumps(r) + "\n" for r in [rows[0], rows[3], rows[4]]))  # rows[0] again
    sft.write_text(json.dumps({"id": "sft-1", "prompt": rows[4]["problem"]}) + "\n")
    cfg = PipelineConfig.model_validate(
        {
            "name": "src",
            "home": str(tmp_path / "home"),
            "runner": {"shards": 2},
            "curate": {
                "sft_path": str(sft),
                "sources": [{"path": str(first), "name": "first"}, {"path": str(second), "name": "second"}],
            },
        }
    )
    run(cfg)
    store = DatasetStore(cfg.home)
    assert store.read("src-curated")["id"].to_list() == [
        "first-000000",
        "first-000001",
        "first-000002",
        "second-000001",
    ]
    removed = store.quarantine("src-curated")
    by_step = dict(zip(removed["step"], removed["reason"], strict=True))
    assert by_step["ingest"].startswith("line 4: invalid JSON")
    assert by_step["exact-dedup"] == "exact duplicate of first-000000 (normalised 1.0)"
    assert by_step["sft-separation"].startswith("duplicate of sft item sft-1")
