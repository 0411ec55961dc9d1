"""The curriculum's pieces between its data and the trainer, without training: the base tokenizer and the
SFT examples it encodes, held-out pass rates on a tiny model, benchmark sets, datasets read together,
the errors that name what to fix, the judge gate when general tasks are off anyway, a plan that starts
from the user's checkpoint, the stage table, and the trainer's loss settings."""

from __future__ import annotations

import json

import polars as pl
import pytest

from flows.config import BenchmarkConfig, DataConfig, PipelineConfig, TrainConfig, load_config
from flows.curriculum import load_curriculum
from flows.curriculum.base import base_tokenizer
from flows.curriculum.evaluation import benchmark_sets, pass_rate, validate
from flows.curriculum.mixture import CurriculumData, load_data, stage_items
from flows.curriculum.plan import active_curriculum, plan, stage_table, start_checkpoint
from flows.curriculum.prompts import answer_text, sft_examples
from flows.curriculum.settings import rl_config
from flows.errors import ConfigError, InputError
from flows.model_settings import fresh_model
from flows.store import DatasetStore
from tests.genrm.test_judge_gate import _write_judge, judge_eval
from tests.rl.test_stage_plan import CURRICULUM, build, items, stage_plan
from tests.rl.test_train_flow import items as task_items

ROWS = [
    {"id": f"r{i}", "domain": d, "task": "t", "prompt": f"What is {i} + 1?", "reference": str(i + 1),
     "metadata": "{}"}
    for i, d in enumerate(["math", "logic", "math", "logic"])
]  # fmt: skip


def test_a_whole_curriculum_error_names_the_curriculum(tmp_path):
    bad = tmp_path / "dup.toml"
    bad.write_text(CURRICULUM.replace('name = "b"', 'name = "a"'))
    with pytest.raises(ConfigError) as err:
        load_curriculum(str(bad))
    assert str(err.value) == f"{bad}: curriculum: Value error, stage names must be unique, repeated: a"


def test_the_base_tokenizer_learns_the_prompts_and_answers_and_sft_teaches_the_answer_then_eos():
    tok = base_tokenizer(ROWS * 3, vocab_size=300)
    assert len(tok.encode("<answer>", add_special_tokens=False)) < len("<answer>")  # learnt from answers
    assert len(tok.encode("What is", add_special_tokens=False)) < len("What is")  # ... and prompts
    examples = sft_examples(tok, ROWS)
    assert len(examples) == len(ROWS)
    for (prompt, answer), row in zip(examples, ROWS, strict=True):
        assert prompt == tok.encode(f"{row['prompt']}\n", add_special_tokens=True)
        assert prompt[0] == tok.bos_token_id and answer[0] != tok.bos_token_id
        assert answer[-1] == tok.eos_token_id
        assert tok.decode(answer[:-1]) == answer_text(row)
    assert (
        tok.decode(examples[0][1][:-1]) == "\\boxed{1}"
        and tok.decode(examples[1][1][:-1]) == "<answer>2</answer>"
    )


def test_pass_rates_score_the_greedy_answers_to_the_encoded_prompts():
    tok = base_tokenizer(ROWS * 3, vocab_size=300)
    config = PipelineConfig(model={"hidden_size": 32, "num_hidden_layers": 2, "softmax_every": 2,
                                   "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 32})  # fmt: skip
    model = fresh_model(config.model, tok)
    seen = []

    def reward_fn(items, token_ids):  # solved: the even items
        seen.append((items, token_ids))
        return [float(int(item["id"][1:]) % 2 == 0) for item in items]

    assert pass_rate(model, tok, ROWS, 3, reward_fn).solved == (True, False, True, False)
    assert seen[0][0] == ROWS and all(1 <= len(ids) <= 3 for ids in seen[0][1])
    sets = {"math": ROWS[:1], "logic": ROWS[1:], "benchmark:b": ROWS[1:2]}
    assert validate(model, tok, sets, 2, reward_fn) == {
        "val/math": 1.0,
        "val/logic": pytest.approx(1 / 3),
        "val/benchmark:b": 0.0,
        "val/all": 0.5,  # the held-out items pooled, benchmarks left out: 2 of 4
    }
    with pytest.raises(InputError, match="no evaluation items"):
        pass_rate(model, tok, [], 2, reward_fn)


def test_a_benchmark_set_is_named_and_numbered_by_its_label():
    path = "tests/curate/data/presets/gsm8k.jsonl"
    data = DataConfig(benchmarks=[BenchmarkConfig(path=path, preset="gsm8k", name="grade")])
    ((name, rows),) = benchmark_sets(data, n_items=2).items()
    assert name == "benchmark:grade"
    assert [(r["id"], r["reference"]) for r in rows] == [("grade#0", "72"), ("grade#1", "1750")]


def toml(tmp_path, text: str) -> str:
    path = tmp_path / "cur.toml"
    path.write_text(text)
    return str(path)


def curriculum_of(tmp_path, text: str):
    return load_curriculum(toml(tmp_path, text))


@pytest.fixture
def config(tmp_path) -> PipelineConfig:
    """As in test_stage_plan.py: four math items in the store, the three-stage curriculum."""
    DatasetStore().write("t-curated", items(4))
    return load_config(None, ["name=t", f"train.curriculum={toml(tmp_path, CURRICULUM)}"])


def test_datasets_with_different_columns_are_read_together(tmp_path):
    store = DatasetStore(tmp_path / "home")
    store.write("t-curated", task_items(6))
    extra = task_items(4, domain="logic", task="x").with_columns(
        pl.lit("s").alias("solution"), pl.format("Puzzle {}: what comes next?", "id").alias("prompt")
    )  # other prompts than the curated items' (a duplicate of an earlier dataset's item is left out)
    store.write("extra", extra)
    text = CURRICULUM.replace('datasets = ["{run}-curated"]', 'datasets = ["{run}-curated", "extra"]')
    data = load_data(store, curriculum_of(tmp_path, text), "t", 0.5)
    assert data.refs == ["t-curated@v1", "extra@v1"]
    both = pl.concat([data.train, data.heldout])
    assert both.height == 10 and both.filter(pl.col("domain") == "logic")["solution"].to_list() == ["s"] * 4
    assert both.filter(pl.col("domain") == "math")["solution"].null_count() == 6


def test_a_mixture_key_matching_no_item_names_the_stage(tmp_path):
    cur = curriculum_of(
        tmp_path, CURRICULUM.replace("mixture = { math = 1.0 }", 'mixture = { "math/none" = 1.0 }')
    )
    data = CurriculumData(task_items(4), task_items(0), [])
    with pytest.raises(InputError) as err:
        stage_items(data, cur.stages[0])
    assert str(err.value) == "stage a: mixture key(s) math/none match no items (available: math/arith)"


def test_a_losing_judge_adds_no_note_when_general_tasks_are_off_anyway(tmp_path, monkeypatch):
    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    config = PipelineConfig(name="gate", home=str(tmp_path / "home"), genrm={"enabled": False})
    _write_judge(config, judge_eval(0.6, 0.4, 0.52))
    curriculum, notes = active_curriculum(config)
    assert "general" not in curriculum.names
    assert not any("judge" in note for note in notes)
    assert "dataset {run}-general: its flow is switched off" in notes


def test_a_plan_from_the_users_checkpoint_starts_there_and_follows_its_fingerprint(config, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "training.json").write_text(json.dumps({"fingerprint": "aaa"}))
    own = config.model_copy(update={"train": config.train.model_copy(update={"init_from": str(mine)})})
    first = stage_plan(own)
    assert [p.start for p in first] == [str(mine), "a", "b"]
    assert first[0].fingerprint != stage_plan(config)[0].fingerprint
    (mine / "training.json").write_text(json.dumps({"fingerprint": "bbb"}))
    assert stage_plan(own)[0].fingerprint != first[0].fingerprint
    store = DatasetStore(own.home)
    assert start_checkpoint(own, None, stage_plan(own)[0], store) == mine


def test_a_later_stage_needs_the_previous_final_model_as_planned(config):
    store = DatasetStore(config.home)
    entry = stage_plan(config)[1]
    with pytest.raises(InputError, match="run `m1 train stage a` first"):
        start_checkpoint(config, None, entry, store)
    build(config, "a", "other")
    with pytest.raises(InputError, match="stage b starts from stage a, which is stale"):
        start_checkpoint(config, None, entry, store)
    build(config, "a", entry.previous)
    assert start_checkpoint(config, None, entry, store) == store.root / "runs" / "t" / "train" / "a" / "final"


def test_the_stage_table_shows_each_stage_and_its_state(config):
    a = stage_plan(config)[0]
    build(config, "a", a.fingerprint)
    rows = stage_table(config)
    assert [(r["stage"], r["start"], r["window"], r["steps"], r["state"], r["done"]) for r in rows] == [
        ("a", "base", [6, 6], 2, "done", True),
        ("b", "a", [8, 8], 2, "pending", False),
        ("c", "b", [8, 8], 2, "pending", False),
    ]
    assert rows[0]["mixture"] == {"math": 1.0} and rows[0]["overrides"] == {} and rows[0]["window_step"] == 0
    missing = config.model_copy(update={"name": "nodata"})
    assert {r["state"] for r in stage_table(missing)} == {"pending"}
    assert {r["reason"] for r in stage_table(missing)} == {
        f"datasets missing: dataset 'nodata-curated' does not exist in {DatasetStore(config.home).datasets} "
        "(curriculum test reads it; `m1 run` builds every dataset, `m1 curate run` the curated one)"
    }
    assert (
        plan(config, load_curriculum(config.train.curriculum), [], DatasetStore(config.home))[0].start
        == "base"
    )


def test_the_trainer_gets_every_loss_setting_and_the_stages_window():
    tc = TrainConfig(
        unified_mask=True, sample_level=0.25, eps_low=0.1, eps_high=0.3, eps_is_low=0.5, eps_is_high=2.0
    )
    stage = load_curriculum("tiny").stages[0].model_copy(update={"min_new_tokens": 4, "window_step": 2})
    rl = rl_config(tc, None, stage)
    loss = rl.loss
    assert (loss.unified_mask, loss.sample_level, loss.eps_low, loss.eps_high) == (True, 0.25, 0.1, 0.3)
    assert (loss.eps_is_low, loss.eps_is_high) == (0.5, 2.0)
    assert (rl.max_new_tokens, rl.max_new_tokens_limit, rl.window_step) == (4, stage.max_new_tokens, 2)
    assert rl.stop_token_ids == () and rl.pad_token_id == 0


def test_a_curated_dataset_no_one_built_is_left_out_of_training_with_a_note(tmp_path, monkeypatch):
    """The training commands build the generated datasets they lack but never the user's curated data:
    a curriculum without it drops it (and the math it alone supplies) and says so; `m1 run`, which
    curates first, keeps it; once it is in the store it is read."""
    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    config = PipelineConfig(name="fresh", home=str(tmp_path / "home"), genrm={"enabled": False})
    curriculum, notes = active_curriculum(config)
    assert "{run}-curated" not in curriculum.datasets
    assert (
        "dataset {run}-curated: not in the store (fresh-curated: `m1 curate run` or `m1 run` builds it)"
        in notes
    )
    assert "stage reasoning: mixture without math" in notes
    assert all("math" not in s.mixture for s in curriculum.stages) and curriculum.stages
    assert "{run}-curated" in active_curriculum(config, builds_curated=True)[0].datasets
    DatasetStore(config.home).write("fresh-curated", task_items(2))
    assert "{run}-curated" in active_curriculum(config)[0].datasets
