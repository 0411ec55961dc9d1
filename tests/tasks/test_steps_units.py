"""The logic-task steps and the steps both task flows share, one at a time, without a Prefect flow: the
logic plan (bands, levels, seeds), generation and the gold check, schema, the answer check, dedup
against the run's datasets, step bookkeeping, the dataset write and the published report. The flow
tests (test_logic.py, test_code.py) run them together."""

from __future__ import annotations

import json
import logging

import polars as pl
import pytest

from flows.config import LogicTasksConfig
from flows.curate.result import StepResult
from flows.errors import ConfigError, InputError
from flows.runner import ROW
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore, StepCount
from flows.tasks import publish, steps
from flows.tasks.logic import Generate, GoldCheck, Plan, Spec, _item, plan, preflight
from flows.tasks.steps import Schema, answer_check, chunks, deduplicate
from tests.tasks.conftest import frame, item, small_config
from verifiers.base import Reward
from verifiers.logic import get_task

TASK, OTHER = "object_counting", "bit_manipulation"


def cfg(**kw) -> LogicTasksConfig:
    return LogicTasksConfig(**{"tasks": [TASK], "n_items": 4, **kw})


def bands_file(home, bands: dict) -> None:
    (home / "logic").mkdir(parents=True)
    (home / "logic" / "bands.json").write_text(json.dumps({"bands": bands}))


# -- the logic plan -------------------------------------------------------------------------------------


def test_the_default_band_clipped_to_the_tasks_levels_with_headroom(tmp_path):
    p = plan(cfg(n_items=5, default_band=(2, 3), headroom=1, seed=2), tmp_path)
    assert p.bands == {TASK: {"low": 2, "high": 3, "levels": [2, 3, 4], "source": "default"}}
    assert p.skipped == {}
    assert p.specs == [
        Spec(TASK, level, 2_000_000 + k, k, (2, 3), k) for k, level in enumerate([2, 3, 4, 2, 3])
    ]
    top = plan(cfg(default_band=(5, 9), headroom=2), tmp_path)  # the top level is 6
    assert top.bands[TASK] == {"low": 5, "high": 6, "levels": [5, 6], "source": "default"}
    assert plan(cfg(default_band=(6, 6), headroom=0), tmp_path).bands[TASK]["levels"] == [6]


def test_items_are_split_evenly_over_the_tasks_the_first_taking_the_rest(tmp_path):
    p = plan(cfg(tasks=[TASK, OTHER, TASK], n_items=5, default_band=(1, 1), headroom=0), tmp_path)
    assert [(s.task, s.index, s.row) for s in p.specs] == [
        (TASK, 0, 0), (TASK, 1, 1), (TASK, 2, 2), (OTHER, 0, 3), (OTHER, 1, 4),
    ]  # fmt: skip
    assert [s.seed for s in p.specs] == [0, 1, 2, 0, 1]


def test_a_task_whose_levels_are_all_below_the_default_band_is_skipped(tmp_path):
    with pytest.raises(InputError) as caught:
        plan(cfg(tasks=[TASK, OTHER], default_band=(7, 8)), tmp_path)
    assert str(caught.value) == (
        f"no logic task has a band ({TASK}: default band 7..8 above its levels; {OTHER}: default band 7..8 above"
        " its levels): recalibrate, or set logic.calibrated=false to use logic.default_band"
    )


def test_stored_calibration_bands_win_and_say_why_a_task_has_none(tmp_path):
    bands_file(tmp_path, {TASK: {"low": 3, "high": 4, "reason": ""},
                          OTHER: {"low": None, "high": None, "reason": "never solved"}})  # fmt: skip
    p = plan(cfg(tasks=[TASK, OTHER, "dyck_language"], n_items=3, headroom=1), tmp_path)
    assert p.bands == {TASK: {"low": 3, "high": 4, "levels": [3, 4, 5], "source": "calibration"}}
    assert p.skipped == {
        OTHER: "no band: never solved",
        "dyck_language": "not in the stored calibration (run `m1 logic calibrate` with this task)",
    }
    assert [(s.difficulty, s.band) for s in p.specs] == [(3, (3, 4)), (4, (3, 4)), (5, (3, 4))]
    ignored = plan(cfg(tasks=[OTHER], calibrated=False), tmp_path)  # calibration switched off
    assert ignored.bands[OTHER]["source"] == "default"


def test_unknown_or_no_tasks_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="^logic.tasks is empty: name tasks, or set logic.enabled = false$"):
        plan(cfg(tasks=[]), tmp_path)
    with pytest.raises(ConfigError, match="^logic.tasks: .*nope"):
        plan(cfg(tasks=[TASK, "nope"]), tmp_path)


def test_every_task_when_none_are_named(tmp_path):
    from verifiers.logic import TASKS

    p = plan(cfg(tasks=None, n_items=len(TASKS)), tmp_path)
    assert list(p.bands) == sorted(TASKS) and [s.task for s in p.specs] == sorted(TASKS)


def test_preflight_plans_from_the_runs_store(tmp_path):
    config = small_config(tmp_path, logic={"tasks": [TASK], "n_items": 2})
    bands_file(tmp_path, {TASK: {"low": 4, "high": 4, "reason": ""}})
    p = preflight(config)
    assert isinstance(p, Plan) and p.bands[TASK]["source"] == "calibration"


# -- generation and the gold check ----------------------------------------------------------------------


def test_generated_items_record_their_band_and_failures_are_quarantined():
    good = [Spec(TASK, 2, 7, 3, (1, 2), 0), Spec(TASK, 1, 8, 4, (1, 2), 2)]
    bad = Spec("no_such_task", 1, 9, 5, (1, 2), 1)
    res = Generate("hash").run([good[0], bad, good[1]])
    expected = [get_task(TASK).generate(s.difficulty, s.seed).to_item(s.index) for s in good]
    assert res.kept.columns == [*ITEM_COLUMNS, ROW]
    assert res.kept["id"].to_list() == [e["id"] for e in expected]
    assert res.kept[ROW].to_list() == [0, 2]
    assert [json.loads(m) for m in res.kept["metadata"]] == [
        json.loads(e["metadata"]) | {"band": [1, 2]} for e in expected
    ]
    assert _item(good[0]) == expected[0] | {"metadata": res.kept["metadata"][0]}
    (removed,) = res.removed.to_dicts()
    reason = removed.pop("reason")
    assert removed == {
        "id": "no_such_task-d1-s9-5", "source": "synlogic", "domain": "logic", "task": "no_such_task",
        "prompt": "", "reference": "", "metadata": "{}", ROW: 1,
    }  # fmt: skip
    assert reason.startswith("generator failed: KeyError: ")
    assert res.count == StepCount("generate", 3, 2, "instances generated")
    empty = Generate("hash").run([])
    assert empty.kept.columns == [*ITEM_COLUMNS, ROW] and empty.removed.columns == [
        *ITEM_COLUMNS,
        ROW,
        "reason",
    ]


def test_the_gold_check_keeps_items_whose_gold_answer_scores_one():
    res = Generate("hash").run([Spec(TASK, 1, s, s, (1, 2), s) for s in range(3)])
    rows = res.kept.with_columns(
        pl.when(pl.col(ROW) == 1)
        .then(pl.lit("certainly not"))
        .otherwise(pl.col("reference"))
        .alias("reference")
    )
    checked = GoldCheck().run(rows)
    assert checked.kept[ROW].to_list() == [0, 2]
    (reason,) = checked.removed["reason"].to_list()
    assert reason.startswith("reference scores 0 with the logic verifier: ")
    assert checked.count == StepCount("gold-check", 3, 2, "the gold answer scores 1 with the logic verifier")


class Recorder:
    name = "fake"

    def __init__(self, rewards: list[Reward]) -> None:
        self.rewards, self.items = rewards, []

    def verify(self, items):
        self.items += list(items)
        return self.rewards


def test_the_answer_check_scores_the_sft_target_and_says_why_not():
    rows = frame([item(f"i{k}", f"p{k}", domain="logic") for k in range(4)])
    verifier = Recorder([
        Reward(1.0, {}), Reward(0.0, {"error": "bad format"}), Reward(0.5, {"verdict": "half"}), Reward(0.0, {"x": 1}),
    ])  # fmt: skip
    res = answer_check(rows, verifier, "check", "summary")
    assert [i["response"] for i in verifier.items] == ["<answer>1</answer>"] * 4
    assert res.kept["id"].to_list() == ["i0"]
    assert res.removed["reason"].to_list() == [
        "reference scores 0 with the fake verifier: bad format",
        "reference scores 0.5 with the fake verifier: half",
        "reference scores 0 with the fake verifier: {'x': 1}",
    ]
    assert res.count == StepCount("check", 4, 1, "summary")
    none = answer_check(frame([]), Recorder([]), "check", "summary")
    assert none.kept.height == 0 and none.removed["reason"].dtype == pl.String


# -- shared steps ---------------------------------------------------------------------------------------


def test_chunks_are_contiguous_and_at_most_n():
    assert chunks(list(range(5)), 2) == [[0, 1, 2], [3, 4]]
    assert chunks(list(range(5)), 9) == [[0], [1], [2], [3], [4]]
    assert chunks(list(range(4)), 0) == [[0, 1, 2, 3]]


def test_the_schema_step_quarantines_rows_that_do_not_fit():
    rows = frame([item("a", "p"), item("b", ""), item("c", "q", metadata="[1]")])
    res = Schema("code items").run(rows)
    assert res.kept["id"].to_list() == ["a"] and res.removed["id"].to_list() == ["b", "c"]
    assert res.count == StepCount("schema", 3, 1, "canonical item schema")
    with pytest.raises(InputError, match="^code items: missing column"):
        Schema("code items").run(rows.drop("metadata"))


def quiet_steps(monkeypatch, run="t", kind="logic tasks", total=5):
    reports = []
    monkeypatch.setattr(publish, "get_run_logger", lambda: logging.getLogger("m1.test.tasks"))
    monkeypatch.setattr(publish, "prefect_progress", lambda description, key: lambda done, total: reports.append(
        (key, done, total)))  # fmt: skip
    return publish.Steps(run, kind, total), reports


def result(step: str, kept: list[str], removed: list[str], rows_in: int) -> StepResult:
    k = frame([item(i, f"p {i}") for i in kept]).with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))
    r = frame([item(i, f"p {i}") for i in removed]).with_columns(pl.lit("why").alias("reason"))
    return StepResult(k, r, StepCount(step, rows_in, len(kept), f"{step} reason"))


def test_steps_are_logged_counted_and_reported(monkeypatch, caplog):
    s, reports = quiet_steps(monkeypatch, run="My Run")
    caplog.set_level(logging.INFO, logger="m1.test.tasks")
    kept = s.record(result("schema", ["a", "b"], ["c"], 3))
    s.skip("t-code is not in the store: nothing to deduplicate against")
    assert kept["id"].to_list() == ["a", "b"]
    assert [r.getMessage() for r in caplog.records] == [
        "schema: 3 -> 2 (schema reason)", "t-code is not in the store: nothing to deduplicate against",
    ]  # fmt: skip
    assert reports == [("my-run-logic-tasks-progress", 1, 5), ("my-run-logic-tasks-progress", 2, 5)]
    assert s.removed().to_dicts() == [item("c", "p c") | {"reason": "why", "step": "schema"}]


def test_the_dataset_write_drops_the_row_order_and_keeps_the_quarantine(monkeypatch, tmp_path):
    s, _ = quiet_steps(monkeypatch)
    s.record(result("generate", ["a", "b"], ["c"], 3))
    s.record(result("schema", ["a"], ["b"], 2))
    store = DatasetStore(tmp_path)
    manifest = publish.write(store, "t-synlogic", s.results[-1].kept, s, params={"n": 1}, parents=["x@v1"])
    assert store.read("t-synlogic").columns == list(ITEM_COLUMNS)
    assert store.quarantine("t-synlogic")["id"].to_list() == ["c", "b"]
    assert manifest.steps == [
        StepCount("generate", 3, 2, "generate reason"),
        StepCount("schema", 2, 1, "schema reason"),
    ]
    assert (manifest.params, manifest.parents, manifest.quarantined) == ({"n": 1}, ["x@v1"], 2)
    again = publish.write(store, "t-other", frame([item("z", "p z")]), s)  # no row order column: fine
    assert again.rows == 1


def test_the_composition_counts_rows_per_task_and_difficulty():
    df = frame([
        item("1", "p", task="b", metadata="{}"), item("2", "p", task="b", metadata='{"difficulty": 2}'),
        item("3", "p", task="a", metadata='{"difficulty": 3}'), item("4", "p", task="b", metadata='{"difficulty": 2}'),
        item("5", "p", task="a", metadata='{"difficulty": 1}'),
    ])  # fmt: skip
    assert publish.composition(df) == [
        {"task": "a", "difficulty": 1, "rows": 1}, {"task": "a", "difficulty": 3, "rows": 1},
        {"task": "b", "difficulty": None, "rows": 1}, {"task": "b", "difficulty": 2, "rows": 2},
    ]  # fmt: skip


def test_publishing_writes_the_tables_and_the_report_section(monkeypatch, tmp_path):
    s, reports = quiet_steps(monkeypatch, total=4)
    s.record(result("generate", ["a", "b"], ["c"], 3))
    tables, markdown = [], []
    monkeypatch.setattr(
        publish, "create_table_artifact", lambda t, key, description: tables.append((key, description, t))
    )
    monkeypatch.setattr(
        publish,
        "create_markdown_artifact",
        lambda text, key, description: markdown.append((key, description, text)),
    )
    kept = frame(
        [
            item("a", "p", task="x", metadata='{"difficulty": 1}'),
            item("b", "q", task="x", metadata='{"difficulty": 1}'),
        ]
    )
    manifest = publish.write(DatasetStore(tmp_path), "t-synlogic", kept, s)
    out = publish.publish(manifest, kept, s, ["x: band 1..2 (default)", "y: skipped, why"])
    section = "\n".join([
        "## logic tasks: t-synlogic@v1, 2 items, 1 quarantined", "", "- x: band 1..2 (default)", "- y: skipped, why",
        "", "| task | difficulty | rows |", "|---|---:|---:|", "| x | 1 | 2 |",
    ])  # fmt: skip
    mix = [{"task": "x", "difficulty": 1, "rows": 2}]
    assert out == {
        "manifest": json.loads(manifest.to_json()),
        "mixture": mix,
        "notes": out["notes"],
        "report": section,
    }
    assert tables == [
        ("t-logic-tasks-mixture", "t-synlogic@v1: rows per task and difficulty", mix),
        ("t-logic-tasks-steps", "t-synlogic@v1: rows in/out per step",
         [{"step": "generate", "rows in": 3, "rows out": 2, "removed": 1, "why": "generate reason"}]),
    ]  # fmt: skip
    assert markdown == [("t-logic-tasks-report", "logic tasks of t-synlogic@v1", section)]
    assert reports[-1] == ("t-logic-tasks-progress", 4, 4)
    empty = publish.publish(manifest, kept.head(0), s, [])
    assert empty["mixture"] == [] and empty["report"].endswith("|---|---:|---:|")


def test_dedup_in_a_task_flow_is_exact_among_its_own_items_and_reads_no_other_dataset(monkeypatch, tmp_path):
    config = small_config(tmp_path)
    DatasetStore(tmp_path).write(
        "t-curated", frame([item("r1", "something else entirely about the rules of chess and the openings")])
    )  # a duplicate of an item of another dataset stays: the curriculum removes it (test_overlaps.py)
    monkeypatch.setattr(steps, "mapped", lambda tasks, step, df, n, by=None: step.run(df))
    s, _ = quiet_steps(monkeypatch)
    rows = frame([
        item("x", "count the apples in the basket of fruit on the old kitchen table today", domain="logic"),
        item("x2", "Count the apples in the basket of fruit on the old kitchen table today", domain="logic"),
        item("w", "something else entirely about the rules of chess and the openings", domain="logic"),
    ])  # fmt: skip
    kept = deduplicate(None, s, config, rows)
    assert kept["id"].to_list() == ["x", "w"]
    assert [r.count.step for r in s.results] == ["exact-dedup"] and s.done == 1
