"""The GenRM flow's library parts without a trained judge: reading a candidates file, what the judge's
cache key covers, reusing or training the judge, and writing the general items once per parameters."""

from __future__ import annotations

import json

import pytest

import flows.genrm.train_judge as train_judge_module
from flows.config import GenRMConfig, PipelineConfig
from flows.errors import InputError
from flows.genrm.files import read_candidates
from flows.genrm.flow import write_general
from flows.genrm.judge_cache import ensure_judge, judge_inputs_hash
from flows.genrm.train_judge import HELDOUT
from flows.store import DatasetStore


def _write(path, *lines):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_candidates_are_tournaments_named_by_id_or_line(tmp_path):
    path = _write(
        tmp_path / "c.jsonl",
        {"id": "q1", "prompt": "2+2?", "candidates": ["4", "5", "four"]},
        {"prompt": "3+3?", "candidates": ["6", "7"]},
    )
    first, second = read_candidates(path)
    assert (first.id, first.prompt, [(p.index, p.text) for p in first.players]) == (
        "q1",
        "2+2?",
        [(0, "4"), (1, "5"), (2, "four")],
    )
    assert second.id == "2" and [p.text for p in second.players] == ["6", "7"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", ":1: not JSON"),
        ({"candidates": ["a", "b"]}, ':1: expected {"prompt": ..., "candidates": [...]}'),
        (["a", "b"], ':1: expected {"prompt": ..., "candidates": [...]}'),
        (
            {"prompt": "p", "candidates": ["only one"]},
            ":1: `candidates` must be a list of at least two strings",
        ),
        ({"prompt": "p", "candidates": ["a", 2]}, ":1: `candidates` must be a list of at least two strings"),
        ({"prompt": "p", "candidates": "ab"}, ":1: `candidates` must be a list of at least two strings"),
    ],
)
def test_a_bad_candidates_line_is_an_input_error_naming_the_line(tmp_path, line, message):
    path = _write(tmp_path / "c.jsonl", line)
    with pytest.raises(InputError) as err:
        read_candidates(path)
    assert str(err.value).startswith(f"{path}{message}")


def test_a_missing_or_empty_candidates_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="candidates file not found"):
        read_candidates(tmp_path / "none.jsonl")
    with pytest.raises(InputError, match="no prompts"):
        read_candidates(_write(tmp_path / "empty.jsonl"))


def test_the_judge_key_covers_its_training_settings_only():
    base = GenRMConfig()
    key = judge_inputs_hash(base)
    assert len(key) == 16 and int(key, 16) >= 0
    assert judge_inputs_hash(GenRMConfig()) == key
    for changed in ("train_prompts", "eval_prompts", "judge_steps", "judge_batch_size", "seed"):
        assert judge_inputs_hash(base.model_copy(update={changed: getattr(base, changed) + 1})) != key, (
            changed
        )
    assert judge_inputs_hash(base.model_copy(update={"judge_lr": base.judge_lr * 2})) != key
    assert judge_inputs_hash(base.model_copy(update={"general_items": base.general_items + 1})) == key


def test_a_judge_trained_for_the_same_inputs_is_reused_and_otherwise_trained(tmp_path, monkeypatch):
    calls = []

    def fake_train(folder, g, on_step=None, inputs_hash=None):
        calls.append((folder, inputs_hash, on_step))
        return {"inputs_hash": inputs_hash, "trained": True}

    monkeypatch.setattr(train_judge_module, "train_judge", fake_train)
    g, folder = GenRMConfig(), tmp_path / "judge"
    key = judge_inputs_hash(g)
    step = print
    summary, trained = ensure_judge(folder, g, on_step=step)  # nothing there: trains
    assert trained and calls == [(folder, key, step)] and summary["inputs_hash"] == key

    folder.mkdir()
    (folder / "training.json").write_text(json.dumps({"judge": {"inputs_hash": key, "eval": {}}}))
    summary, trained = ensure_judge(folder, g)  # no held-out labels beside it: trains again
    assert trained and len(calls) == 2
    (folder / HELDOUT).write_text("")
    summary, trained = ensure_judge(folder, g)
    assert (summary, trained) == ({"inputs_hash": key, "eval": {}}, False) and len(calls) == 2
    (folder / "training.json").write_text(json.dumps({"judge": {"inputs_hash": "other"}}))
    assert ensure_judge(folder, g)[1] and len(calls) == 3
    (folder / "training.json").write_text(json.dumps({"sft": []}))  # no judge summary at all: trains
    assert ensure_judge(folder, g)[1] and len(calls) == 4


def test_general_items_are_written_once_per_parameters(tmp_path):
    config = PipelineConfig(name="g", home=str(tmp_path / "home"))
    config.genrm.general_items = 5
    ref = write_general(config)
    store = DatasetStore(config.home)
    (name,) = [n for n in store.names() if n.endswith("general")]
    assert store.manifest(name).params == {
        "n": 5,
        "seed": config.genrm.seed,
        "generator": "flows.genrm.general",
    }
    assert len(store.read(name)) == 5
    assert write_general(config) == ref and store.latest(name) == 1
    config.genrm.general_items = 6
    assert write_general(config) != ref and store.latest(name) == 2 and len(store.read(name)) == 6
