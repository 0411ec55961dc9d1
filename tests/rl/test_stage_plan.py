"""Stage planning's states (flows/curriculum/plan.py `plan`) on a store and stage folders built in the test,
without training: a stage is done when its final model records the fingerprint the current config gives
and every earlier stage is done; stale when it records another one or an earlier stage is not done;
pending without a final model. The slow test in test_train_flow.py proves the same on trained stages."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.config import PipelineConfig, apply_overrides, load_config
from flows.curriculum import load_curriculum
from flows.curriculum.base import base_folder
from flows.curriculum.fingerprint import base_inputs
from flows.curriculum.layout import stage_paths
from flows.curriculum.plan import base_state, plan
from flows.lineage import fingerprint
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore

CURRICULUM = """
name = "test"
datasets = ["{run}-curated"]
verifiers = { math = "math" }

[[stages]]
name = "a"
mixture = { math = 1.0 }
steps = 2
max_new_tokens = 6

[[stages]]
name = "b"
mixture = { math = 1.0 }
steps = 2
max_new_tokens = 8

[[stages]]
name = "c"
mixture = { math = 1.0 }
steps = 2
max_new_tokens = 8
"""


def items(n: int) -> pl.DataFrame:
    rows = [
        {"id": f"m-{i}", "source": "test", "domain": "math", "task": "arith", "prompt": f"{i} + 1?",
         "reference": str(i + 1), "metadata": "{}"}
        for i in range(n)
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=ITEM_COLUMNS)


@pytest.fixture
def config(tmp_path) -> PipelineConfig:
    DatasetStore().write("t-curated", items(4))
    cur = tmp_path / "cur.toml"
    cur.write_text(CURRICULUM)
    return load_config(None, ["name=t", f"train.curriculum={cur}"])


def states(config: PipelineConfig) -> list[str]:
    return [p.state for p in stage_plan(config)]


def stage_plan(config: PipelineConfig):
    store = DatasetStore(config.home)
    return plan(config, load_curriculum(config.train.curriculum), [store.manifest("t-curated").ref], store)


def build(config: PipelineConfig, stage: str, fingerprint: str) -> None:
    """A stage's final model as far as planning sees it: a checkpoint whose record holds a fingerprint."""
    final = stage_paths(config, stage).final
    final.mkdir(parents=True, exist_ok=True)
    (final / "config.json").write_text("{}")
    (final / "training.json").write_text(json.dumps({"fingerprint": fingerprint}))


def build_all(config: PipelineConfig) -> dict[str, str]:
    fps = {p.name: p.fingerprint for p in stage_plan(config)}
    for name, fp in fps.items():
        build(config, name, fp)
    return fps


def test_nothing_built_is_pending_and_everything_built_as_planned_is_done(config):
    assert states(config) == ["pending"] * 3
    build_all(config)
    assert states(config) == ["done"] * 3


def test_each_stage_starts_from_the_previous_ones_fingerprint(config):
    a, b, c = stage_plan(config)
    assert (a.start, a.previous) == ("base", None)
    assert (b.start, b.previous, c.start, c.previous) == ("a", a.fingerprint, "b", b.fingerprint)
    assert len({a.fingerprint, b.fingerprint, c.fingerprint}) == 3


def test_a_changed_setting_makes_every_stage_stale(config):
    build_all(config)
    assert states(apply_overrides(config, ["train.rl_lr=0.05"])) == ["stale"] * 3


def test_a_changed_base_makes_every_stage_stale(config):
    build_all(config)
    assert states(apply_overrides(config, ["train.sft_steps=7"])) == ["stale"] * 3


def test_settings_that_only_pace_or_observe_a_run_keep_it_done(config):
    build_all(config)
    assert (
        states(apply_overrides(config, ["train.checkpoint_every=3", "train.torch_threads=1"])) == ["done"] * 3
    )


def test_a_changed_stage_is_stale_and_so_are_the_later_ones_not_the_earlier(config):
    build_all(config)
    b = 'name = "b"\nmixture = { math = 1.0 }\nsteps = '
    text = CURRICULUM.replace(b + "2", b + "3")  # stage b trains one step longer
    assert text != CURRICULUM
    with open(config.train.curriculum, "w") as f:
        f.write(text)
    assert states(config) == ["done", "stale", "stale"]


def test_a_stage_after_a_stale_one_is_stale_even_when_its_own_record_matches(config):
    fps = build_all(config)
    build(config, "b", "something-else")  # b rebuilt from other settings; c's record is as planned
    plans = stage_plan(config)
    assert [p.state for p in plans] == ["done", "stale", "stale"]
    assert plans[2].recorded == fps["c"] == plans[2].fingerprint  # stale only because b is


def test_a_stage_after_a_pending_one_is_stale(config):
    fps = build_all(config)
    stage_paths(config, "a").final.joinpath("config.json").unlink()  # a's final model is gone
    assert states(config) == ["pending", "stale", "stale"]
    assert stage_plan(config)[1].recorded == fps["b"]


def test_a_changed_first_stage_changes_what_every_later_stage_is_built_from(config):
    fps = build_all(config)
    a = 'name = "a"\nmixture = { math = 1.0 }\nsteps = '
    with open(config.train.curriculum, "w") as f:
        f.write(CURRICULUM.replace(a + "2", a + "3"))
    plans = stage_plan(config)
    assert [p.state for p in plans] == ["stale"] * 3
    # not only stale by position: b and c start from another a, so their own fingerprints change
    assert all(p.fingerprint != fps[p.name] for p in plans)


def build_recorded(config: PipelineConfig) -> None:
    """The base and every stage as planned, each recording the inputs it was built from (as the training
    flows write them), so that a later plan can say what changed."""
    store = DatasetStore(config.home)
    refs = [store.manifest("t-curated").ref]
    base = base_folder(config)
    base.mkdir(parents=True, exist_ok=True)
    (base / "config.json").write_text("{}")
    inputs = base_inputs(config, refs)
    (base / "training.json").write_text(json.dumps({"fingerprint": fingerprint(inputs), "inputs": inputs}))
    for p in stage_plan(config):
        final = stage_paths(config, p.name).final
        final.mkdir(parents=True, exist_ok=True)
        (final / "config.json").write_text("{}")
        (final / "training.json").write_text(json.dumps({"fingerprint": p.fingerprint, "inputs": p.inputs}))


def reasons(config: PipelineConfig) -> list[tuple[str, str]]:
    return [(p.state, p.reason) for p in stage_plan(config)]


def test_done_stages_give_no_reason(config):
    build_recorded(config)
    assert reasons(config) == [("done", "")] * 3
    assert base_state(config, [DatasetStore(config.home).manifest("t-curated").ref], DatasetStore())[1:] == (
        "done",
        "",
    )


def test_a_stale_stage_says_which_setting_changed_and_the_later_ones_that_their_start_is_rerun(config):
    build_recorded(config)
    assert reasons(apply_overrides(config, ["train.rl_lr=0.05"])) == [
        ("stale", "train.rl_lr 0.0001 -> 0.05"),
        ("stale", "train.rl_lr 0.0001 -> 0.05; start checkpoint replaced: stage a is rerun"),
        ("stale", "train.rl_lr 0.0001 -> 0.05; start checkpoint replaced: stage b is rerun"),
    ]


def test_a_changed_base_setting_is_named_where_the_first_stage_starts(config):
    build_recorded(config)
    first, second, _ = reasons(apply_overrides(config, ["train.sft_steps=7"]))
    assert first == (
        "stale",
        "start checkpoint replaced: the base model is rebuilt (train.sft_steps 1200 -> 7)",
    )
    assert second == ("stale", "start checkpoint replaced: stage a is rerun")


def test_a_new_dataset_version_is_named_old_to_new(config):
    build_recorded(config)
    DatasetStore().write("t-curated", items(5))
    first = reasons(config)[0]
    assert first[0] == "stale" and first[1].startswith("t-curated v1 -> v2; start checkpoint replaced: ")
    assert "the base model is rebuilt (t-curated v1 -> v2)" in first[1]


def test_a_stage_behind_one_whose_final_model_is_gone_says_so(config):
    build_recorded(config)
    stage_paths(config, "a").final.joinpath("config.json").unlink()
    assert reasons(config) == [
        ("pending", "not built yet"),
        ("stale", "an earlier stage (a) is rerun first"),
        ("stale", "an earlier stage (a) is rerun first"),
    ]


def test_a_record_from_before_inputs_were_kept_says_so(config):
    build_all(config)  # fingerprints only, as earlier releases wrote them
    assert reasons(apply_overrides(config, ["train.rl_lr=0.05"]))[0] == (
        "stale",
        "built before its inputs were recorded",
    )


def test_the_base_counts_a_pass_rate_filtered_version_as_the_one_it_was_filtered_from(config):
    """The pass-rate filter samples the base itself: the version it derives must not make the base stale
    (base_refs), while a new version from curation does."""
    store = DatasetStore(config.home)
    first = base_state(config, ["t-curated@v1"], store)[0]
    store.write("t-curated", items(3), params={"filtered_from": "t-curated@v1"})
    assert base_state(config, ["t-curated@v2"], store)[0] == first
    store.write("t-curated", items(2))
    assert base_state(config, ["t-curated@v3"], store)[0] != first


def test_train_stage_says_first_what_it_will_rebuild_and_why(config):
    """`m1 train stage X [--restart]` prints, before any work, what it reuses, retrains, discards or turns
    stale, and why (flows/commands/train.py `stage_announcement`)."""
    from flows.commands.train import stage_announcement

    build_recorded(config)
    checkpoints = stage_paths(config, "a").checkpoints
    for step in ("step-000001", "step-000002"):
        (checkpoints / step).mkdir(parents=True)
    assert stage_announcement(config, "a", False) == [
        "stage a: done and unchanged: reused (--restart trains it again)"
    ]
    assert stage_announcement(config, "a", True) == [
        "stage a: --restart: its 2 step checkpoint(s) and final model are discarded, and it trains 2 steps "
        "from its start",
        "stale afterwards (their start is replaced): b, c",
    ]
    lines = stage_announcement(apply_overrides(config, ["train.sft_steps=7"]), "a", False)
    assert (
        lines[0] == "the base model is rebuilt first (train.sft_steps 1200 -> 7): tokenizer and 7 SFT steps"
    )
    assert lines[1] == (
        "stage a: retrained from its start, 2 step checkpoint(s) discarded (start checkpoint replaced: the "
        "base model is rebuilt (train.sft_steps 1200 -> 7))"
    )
    assert lines[2] == "still to rerun after it (`m1 train curriculum` reruns them): b, c"
    assert stage_announcement(config, "b", False) == [
        "stage b: done and unchanged: reused (--restart trains it again)"
    ]
