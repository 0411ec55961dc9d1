"""`{run}-synlogic`: the plan from bands, the written items (apart from the run's other data), reuse, cache."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from flows.config import SHORT_ANSWER_LOGIC_TASKS, LogicTasksConfig, PipelineConfig, PolicyConfig
from flows.curriculum import load_curriculum
from flows.curriculum.mixture import load_data
from flows.errors import ConfigError, InputError
from flows.store import DatasetStore
from flows.tasks.logic import _item, plan
from tests.tasks.conftest import frame, item, small_config


def store_calibration(home, rates: dict[str, dict[int, tuple[float, float]]]) -> None:
    """A calibration as `m1 logic calibrate` stores it: {task: {difficulty: (pass rate, pass@k)}}."""
    from flows.logic_calibration import CalibrationParams, bands_from_rows, save

    rows = [
        {"task": t, "difficulty": d, "instances": 4, "samples": 16, "pass_rate": r, "pass_at_k": k}
        for t, cells in rates.items()
        for d, (r, k) in cells.items()
    ]
    save(rows, bands_from_rows(rows), CalibrationParams(), PolicyConfig(), home)


CALIBRATION = {
    # learnable from level 3, solvable up to 5: band 3..5
    "bit_manipulation": {
        1: (0.9, 1.0),
        2: (0.6, 1.0),
        3: (0.3, 1.0),
        4: (0.1, 0.5),
        5: (0.05, 0.2),
        6: (0, 0),
    },
    "object_counting": {d: (0.0, 0.0) for d in range(1, 7)},  # never solved: no band
}


def test_default_plan_splits_items_evenly_over_tasks_and_levels(home):
    p = plan(LogicTasksConfig(n_items=142), home)
    per_task = Counter(s.task for s in p.specs)
    assert set(per_task) == set(SHORT_ANSWER_LOGIC_TASKS) and p.skipped == {}
    assert sorted(per_task.values()) == [20] * 5 + [21] * 2
    for task, band in p.bands.items():
        assert (band["low"], band["high"], band["source"]) == (1, 2, "default")
        levels = Counter(s.difficulty for s in p.specs if s.task == task)
        assert set(levels) == {1, 2, 3} and max(levels.values()) - min(levels.values()) <= 1  # headroom 1
    assert [s.row for s in p.specs] == list(range(142))


def test_default_tasks_have_answers_the_tiny_model_can_write(home):
    """The documented reason for the default task list: gold answers of at most 8 characters."""
    p = plan(LogicTasksConfig(), home)
    assert max(len(_item(s)["reference"]) for s in p.specs) <= 8


def test_stored_calibration_sets_bands_and_skips_tasks_without_one(home):
    store_calibration(home, CALIBRATION)
    cfg = LogicTasksConfig(tasks=["bit_manipulation", "object_counting", "dyck_language"], n_items=12)
    p = plan(cfg, home)
    assert p.bands == {
        "bit_manipulation": {"low": 3, "high": 5, "levels": [3, 4, 5, 6], "source": "calibration"}
    }
    assert p.skipped["object_counting"].startswith("no band: never solved")
    assert p.skipped["dyck_language"].startswith("not in the stored calibration")
    assert len(p.specs) == 12 and {s.difficulty for s in p.specs} == {3, 4, 5, 6}
    off = plan(cfg.model_copy(update={"calibrated": False}), home)
    assert {b["source"] for b in off.bands.values()} == {"default"} and len(off.bands) == 3
    with pytest.raises(InputError, match="no logic task has a band .*object_counting: no band"):
        plan(cfg.model_copy(update={"tasks": ["object_counting"]}), home)


def test_unknown_task_and_bad_band_are_one_line_config_errors(home):
    with pytest.raises(ConfigError, match="logic.tasks: unknown logic task 'sodoku'"):
        plan(LogicTasksConfig(tasks=["sudoku", "sodoku"]), home)
    with pytest.raises(ValueError, match="1 <= low <= high"):
        LogicTasksConfig(default_band=(3, 2))


def test_flow_writes_checked_items_apart_from_curated_and_reuses_them(prefect_harness, home):
    from prefect.artifacts import Artifact

    from flows.schema import validate_items
    from flows.tasks.logic import logic_tasks
    from verifiers.logic.verifier import LogicVerifier

    cfg = small_config(home)
    specs = plan(cfg.logic, home).specs
    copied = _item(next(s for s in specs if s.task == "boolean_expressions"))
    edited = _item(next(s for s in specs if s.task == "object_counting"))
    store = DatasetStore(home)
    store.write(
        "t-curated",
        frame(
            [
                item("cur-copy", copied["prompt"], domain="logic", task="boolean_expressions"),
                item("cur-edit", edited["prompt"] + " Please answer quickly.", domain="math"),
                item("cur-math", "Ada has 3 apples and buys 4 more. How many apples does she have?"),
            ]
        ),
    )
    out = logic_tasks(cfg)
    df = store.read("t-synlogic")
    assert validate_items(df)[1].height == 0 and "_row" not in df.columns
    rewards = LogicVerifier().verify(
        [{**r, "response": f"<answer>{r['reference']}</answer>"} for r in df.to_dicts()]
    )
    assert [r.reward for r in rewards] == [1.0] * df.height
    meta = [json.loads(m) for m in df["metadata"]]
    assert {m["difficulty"] for m in meta} == {1, 2, 3} and {tuple(m["band"]) for m in meta} == {(1, 2)}

    assert store.quarantine("t-synlogic") is None  # the copies of curated items stay in the dataset ...
    manifest = out["manifest"]
    assert [s["step"] for s in manifest["steps"]] == ["generate", "schema", "gold-check", "exact-dedup"]
    assert manifest["parents"] == [] and manifest["rows"] == df.height == 28
    assert sum(r["rows"] for r in out["mixture"]) == df.height
    assert "Cached" not in {state for _, state in out["tasks"]}
    for suffix in ("mixture", "steps", "report", "progress"):
        assert Artifact.get(f"t-logic-tasks-{suffix}") is not None, suffix
    assert (
        out["report"].startswith("## logic tasks: t-synlogic@v1")
        and "| bit_manipulation | 1 |" in out["report"]
    )
    # ... and the curriculum that reads both leaves them out, each with the item it duplicates
    toml = home / "both.toml"
    toml.write_text(
        'name = "both"\ndatasets = ["{run}-curated", "{run}-synlogic"]\n'
        '[[stages]]\nname = "s"\nmixture = { logic = 1.0 }\nsteps = 1\nmax_new_tokens = 4\n'
    )
    data = load_data(store, load_curriculum(str(toml)), "t", 0.1, cfg.curate.minhash)
    reasons = dict(zip(data.overlaps["id"], data.overlaps["reason"], strict=True))
    assert set(reasons) == {copied["id"], edited["id"]}
    assert reasons[copied["id"]] == "duplicate of t-curated item cur-copy (exact 1.0)"
    assert reasons[edited["id"]].startswith("duplicate of t-curated item cur-edit (minhash 0.")

    again = logic_tasks(cfg)  # same inputs: nothing runs, the recorded result comes back
    assert again["reused"] and again["tasks"] == [] and again["manifest"] == manifest
    (home / "datasets" / "t-synlogic" / "BUILT_FROM.json").unlink()  # forgotten: the steps run, from cache
    rerun = logic_tasks(cfg)
    assert {state for _, state in rerun["tasks"]} == {"Cached"} and not rerun["reused"]
    assert store.versions("t-synlogic") == [1] and store.read("t-synlogic").equals(df)  # same content


def test_flow_takes_difficulties_from_the_stored_calibration(prefect_harness, home):
    from flows.tasks.logic import logic_tasks

    store_calibration(home, CALIBRATION)
    cfg = small_config(home, logic={"tasks": ["bit_manipulation", "object_counting"], "n_items": 8})
    out = logic_tasks(cfg)
    assert {(r["task"], r["difficulty"]) for r in out["mixture"]} == {
        ("bit_manipulation", d) for d in (3, 4, 5, 6)
    }
    assert any(n.startswith("object_counting: skipped, no band: never solved") for n in out["notes"])
    written = DatasetStore(home).manifest("t-synlogic")
    assert written.params["bands"]["bit_manipulation"]["source"] == "calibration"
    assert written.params["skipped"]["object_counting"].startswith("no band")


def test_flow_with_nothing_to_compare_against_writes_every_item(prefect_harness, home):
    from flows.tasks.logic import logic_tasks

    cfg = PipelineConfig.model_validate(
        {"name": "solo", "home": str(home), "logic": {"tasks": ["web_of_lies"], "n_items": 5}}
    )
    out = logic_tasks(cfg)
    assert out["manifest"]["rows"] == 5 and out["manifest"]["parents"] == []
    assert [s["step"] for s in out["manifest"]["steps"]][-1] == "exact-dedup"
