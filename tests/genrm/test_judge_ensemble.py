"""The run's judge as an ensemble (`genrm.judges`): its judges differ only in their initial weights, train
ahead one after another into their own folders, are served one server each behind one comma-separated
URL, and are measured (and gated) as one judge; a rerun reuses all of it, and going back to one judge
keeps the first."""

from __future__ import annotations

import json
import os
import shutil

import httpx
import pytest

from flows.config import PipelineConfig
from flows.curriculum.fingerprint import judge_identity
from flows.genrm import ahead
from flows.genrm.files import judge_dir, judge_dirs, member_hashes
from flows.genrm.judge_cache import judge_hashes, judge_inputs_hash, judge_is_current
from flows.run_plan import _judge
from tests.genrm.test_judge_training_and_plot import TINY_JUDGE
from verifiers.genrm.evaluate import JudgeEval


@pytest.fixture
def config(tmp_path):
    genrm = {
        "judges": 2,
        "train_prompts": 4,
        "eval_prompts": 2,
        "judge_steps": 40,
        "judge_batch_size": 2,
        "judge_max_tokens": 2,
        "judge_model": TINY_JUDGE.model_dump(),
    }
    return PipelineConfig(name="ens", home=str(tmp_path / "home"), genrm=genrm)


def test_each_judge_of_an_ensemble_is_the_first_at_another_initial_seed(config):
    g = config.genrm
    one = g.model_copy(update={"judges": 1})
    assert [d.name for d in judge_dirs(config)] == ["judge", "judge-1"]
    assert g.member(0) is g and g.member(1).judge_model.seed == g.judge_model.seed + 1
    assert g.member(1).model_dump(exclude={"judge_model"}) == g.model_dump(exclude={"judge_model"})
    # the first judge is the one judge of a run without an ensemble: growing one keeps it
    assert judge_hashes(g)[0] == judge_inputs_hash(one) == judge_hashes(one)[0]
    assert len(set(judge_hashes(g))) == 2


def test_served_judges_are_one_server_each_behind_one_url(tiny_checkpoint, tmp_path, monkeypatch):
    from flows.genrm.serve import served_judge

    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    second = shutil.copytree(tiny_checkpoint, tmp_path / "second")
    with served_judge([tiny_checkpoint, second]) as url:
        urls = url.split(",")
        assert len(set(urls)) == 2 and os.environ["M1_GENRM_URL"] == url
        for one in urls:
            assert httpx.get(f"{one}/models").json()["data"][0]["id"] == "judge"
    for one in urls:
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{one}/models", timeout=2)


@pytest.mark.slow
def test_an_ensemble_trains_ahead_is_measured_as_one_judge_and_is_reused(
    config, prefect_harness, monkeypatch
):
    from flows.genrm.flow import ENSEMBLE_EVAL, general_tasks, measured_judge

    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    assert ahead.wanted(config) and _judge(config).why == "not trained yet"
    with ahead.judge_ahead(config):  # one child trains both, in turn
        out = general_tasks(config)
    assert out["trained"] is True and judge_is_current(config) and not ahead.wanted(config)
    hashes = member_hashes(config)
    assert hashes == judge_hashes(config.genrm) and judge_identity(config) == "+".join(hashes)
    weights = [(d / "model.safetensors").read_bytes() for d in judge_dirs(config)]
    assert weights[0] != weights[1]  # two draws, not one judge twice

    kept = json.loads((judge_dir(config).parent / ENSEMBLE_EVAL).read_text())
    assert kept["members"] == hashes
    # the gate and the report read the ensemble's (compared as JSON: a NaN is not equal to itself)
    assert json.dumps(measured_judge(config).table()) == json.dumps(out["eval"])
    first = json.loads((judge_dir(config) / "training.json").read_text())["judge"]["eval"]

    # a rerun trains and measures nothing: the ensemble's measurement is kept while its judges are
    stamp = (judge_dir(config).parent / ENSEMBLE_EVAL).stat().st_mtime_ns
    again = general_tasks(config)
    assert again["trained"] is False and json.dumps(again["eval"]) == json.dumps(out["eval"])
    assert (judge_dir(config).parent / ENSEMBLE_EVAL).stat().st_mtime_ns == stamp

    # one judge again: the first, as trained, with its own measurement; three: one more to train
    single = config.model_copy(update={"genrm": config.genrm.model_copy(update={"judges": 1})})
    assert judge_is_current(single)
    assert json.dumps(measured_judge(single).table()) == json.dumps(JudgeEval.from_dict(first).table())
    three = config.model_copy(update={"genrm": config.genrm.model_copy(update={"judges": 3})})
    assert not judge_is_current(three) and measured_judge(three) is None
    assert _judge(three).why == "1 of the ensemble's 3 judges not trained yet"
