"""Curriculum stages as data, the stage runner (chain, resume, rerun) and the Prefect flows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import torch

from flows.config import load_config
from flows.curriculum import bundled, load_curriculum
from flows.curriculum.mixture import CurriculumData, load_data, mixture_weights, run_data, stage_items
from flows.errors import ConfigError, InputError
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore

# A verifier plugin loaded from a directory, as a user's would be: reward 1 for a "7" in the response.
PLUGIN = """
from verifiers.base import Reward

class HasSeven:
    name = "has-seven"
    version = "1"

    def verify(self, items):
        return [Reward(float("7" in item["response"])) for item in items]
"""

CURRICULUM = """
name = "test"
datasets = ["{run}-curated"]
verifiers = { math = "has-seven" }

[[stages]]
name = "a"
mixture = { math = 1.0 }
steps = 2
max_new_tokens = 6

[[stages]]
name = "b"
mixture = { math = 1.0 }
steps = 2
min_new_tokens = 4
max_new_tokens = 8
window_step = 2
overrides = { eps_is_high = 0.5, algorithm = "dapo" }
"""


def items(n: int, domain: str = "math", task: str = "arith", difficulty: int | None = None) -> pl.DataFrame:
    meta = json.dumps({} if difficulty is None else {"difficulty": difficulty})
    rows = [
        {
            "id": f"{domain}-{task}-{i}",
            "source": "test",
            "domain": domain,
            "task": task,
            "prompt": f"What is {i} + {i + 3}?",
            "reference": str(2 * i + 3),
            "metadata": meta,
        }
        for i in range(n)
    ]
    return pl.DataFrame(rows, schema=ITEM_COLUMNS)


@pytest.fixture
def setup(tmp_path):
    """A curated dataset, the plugin, a two-stage curriculum and a tiny model/training config."""
    DatasetStore().write("t-curated", items(24))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "has_seven.py").write_text(PLUGIN)
    cur = tmp_path / "cur.toml"
    cur.write_text(CURRICULUM)
    return load_config(
        None,
        [
            "name=t",
            f"plugin_dirs=[{plugins}]",
            f"train.curriculum={cur}",
            "train.sft_steps=3",
            "train.prompts_per_step=3",
            "train.group_size=4",
            "train.batch_size=8",
            "train.rl_lr=0.01",
            "train.max_sampling_rounds=2",
            "model.hidden_size=32",
            "model.num_hidden_layers=2",
            "model.softmax_every=2",
            "model.num_attention_heads=2",
            "model.num_key_value_heads=1",
            "model.intermediate_size=32",
            "model.vocab_size=300",
        ],
    )


def test_bundled_curricula_are_valid():
    from flows.config import TrainConfig
    from flows.curriculum.settings import stage_train_config

    assert {"tiny", "m1"} <= set(bundled())
    for name in bundled():
        cur = load_curriculum(name)
        for stage in cur.stages:
            stage_train_config(TrainConfig(), stage, cur)
    m1 = load_curriculum("m1")
    assert m1.stages[-1].max_new_tokens == 80 * 1024 and m1.stages[-1].window_step == 8 * 1024
    assert all(stage_train_config(TrainConfig(), s, m1).updates_per_batch == 16 for s in m1.stages)


def test_curriculum_errors_name_the_file(tmp_path):
    from flows.config import TrainConfig
    from flows.curriculum.settings import stage_train_config

    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(ConfigError, match="bad.toml: malformed toml"):
        load_curriculum(str(bad))
    bad.write_text(CURRICULUM.replace("steps = 2\nmax_new_tokens = 6", "steps = -1\nmax_new_tokens = 6"))
    with pytest.raises(ConfigError, match=r"bad.toml: stages.0.steps"):
        load_curriculum(str(bad))
    with pytest.raises(ConfigError, match="not found"):
        load_curriculum(str(tmp_path / "missing.toml"))
    bad.write_text(CURRICULUM.replace('algorithm = "dapo"', 'algorithm = "ppo9"'))
    cur = load_curriculum(str(bad))
    with pytest.raises(ConfigError, match="stage b: overrides.algorithm"):
        stage_train_config(TrainConfig(), cur.stages[1], cur)
    with pytest.raises(ConfigError, match="has no stage 'zzz'"):
        cur.index("zzz")


def test_mixture_weights_share_each_key():
    df = pl.concat(
        [items(3), items(1, "logic", "sudoku"), items(2, "logic", "cipher"), items(2, "code", "x")]
    )
    kept, w = mixture_weights(df, {"math": 0.5, "logic": 0.25, "logic/sudoku": 0.25}, where="s")
    by_id = dict(zip(kept["id"], w, strict=True))
    assert len(kept) == 6  # code is not in the mixture
    assert by_id["math-arith-0"] == pytest.approx(0.5 / 3)
    assert by_id["logic-sudoku-0"] == pytest.approx(0.25)  # the specific key wins
    assert by_id["logic-cipher-1"] == pytest.approx(0.25 / 2)
    with pytest.raises(InputError, match="stage s: mixture key.*general"):
        mixture_weights(df, {"math": 1.0, "general": 0.1}, where="stage s")


def test_stage_items_difficulty_band(setup):
    df = pl.concat([items(3, difficulty=1), items(2, "logic", "s", difficulty=4), items(2, "logic", "u")])
    data = CurriculumData(df, df.head(0), ["t-curated@v1"])
    cur = load_curriculum(setup.train.curriculum)
    stage = cur.stages[0].model_copy(update={"mixture": {"math": 1, "logic": 1}, "min_difficulty": 2})
    with pytest.raises(InputError, match="math"):  # every math item is too easy now
        stage_items(data, stage)
    stage = stage.model_copy(update={"mixture": {"logic": 1}})
    kept, _, notes = stage_items(data, stage)
    assert kept["task"].to_list() == ["s", "s", "u", "u"]  # items without a difficulty are kept ...
    assert (
        "keeps 4 of 7 items" in notes[0] and "2 of 7 items have no metadata.difficulty" in notes[1]
    )  # ... said so
    with pytest.raises(InputError, match=r"band \[2, 3\] leaves none of 3 items"):
        stage_items(
            CurriculumData(items(3, difficulty=1), df.head(0), []),
            stage.model_copy(update={"max_difficulty": 3}),
        )


def test_heldout_split_is_stable_and_disjoint(setup):
    DatasetStore().write("t-curated", items(200))
    cur = load_curriculum(setup.train.curriculum)
    a = load_data(DatasetStore(), cur, "t", 0.1)
    assert 5 < a.heldout.height < 40 and a.train.height + a.heldout.height == 200
    assert not set(a.train["id"]) & set(a.heldout["id"])
    DatasetStore().write("t-curated", items(300))  # the dataset grows: old held-out items stay held out
    b = load_data(DatasetStore(), cur, "t", 0.1)
    assert set(a.heldout["id"]) <= set(b.heldout["id"]) and b.refs == ["t-curated@v3"]


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


@pytest.mark.slow
def test_stages_chain_resume_and_rerun(setup):
    from flows.curriculum.layout import stage_paths
    from flows.curriculum.stage import run_stage

    with pytest.raises(InputError, match="run `m1 train stage a` first"):
        run_stage(setup, "b")
    a = run_stage(setup, "a")
    assert Path(a.start_from).name == "base" and len(a.history) == 2
    assert all(h["finite"] == 1.0 for h in a.history)
    base, a_final = _weights(Path(a.start_from)), _weights(Path(a.final))
    assert any(not torch.equal(base[k], a_final[k]) for k in base)  # RL changed the weights

    b = run_stage(setup, "b")
    assert b.start_from == a.final
    assert [h["max_new_tokens"] for h in b.history][0] == 4
    b_final = _weights(Path(b.final))

    again = run_stage(setup, "b")  # resumes from its own last checkpoint: nothing left to do
    assert again.history == b.history

    rerun = run_stage(setup, "b", restart=True)  # alone, from a's final model again: same result
    assert rerun.start_from == a.final
    assert [h["reward_mean"] for h in rerun.history] == [h["reward_mean"] for h in b.history]
    rerun_final = _weights(Path(rerun.final))
    assert all(torch.equal(b_final[k], rerun_final[k]) for k in b_final)
    assert (stage_paths(setup, "b").root / "curves.png").stat().st_size > 1000
    assert (stage_paths(setup, "b").root / "weights.png").stat().st_size > 1000
    samples = [
        json.loads(line) for line in (stage_paths(setup, "b").root / "samples.jsonl").read_text().splitlines()
    ]
    assert [s["step"] for s in samples] == [1] * 4 + [2] * 4  # the restart dropped the earlier run's lines
    assert {"id", "prompt", "response", "reward"} <= set(samples[0])


@pytest.mark.slow
def test_train_curriculum_flow(setup, prefect_harness):
    from prefect.artifacts import Artifact

    from flows.train import train_curriculum

    summaries = train_curriculum(setup)
    assert [s["stage"] for s in summaries] == ["a", "b"]
    assert all(Path(p).exists() for s in summaries for p in s["plots"])
    table = Artifact.get("t-b-metrics")
    assert table is not None and table.type == "table" and "reward_mean" in str(table.data)
    assert "weight/math" in str(table.data) and "perplexity" in str(table.data)
    report = Artifact.get("t-b-report")
    assert report is not None and report.data.count("data:image/png;base64,") == 2
    assert "held-out set" in report.data
    samples = Artifact.get("t-b-samples")
    assert samples is not None and "response" in str(samples.data)
    status = Artifact.get("t-curriculum-status")
    assert status is not None and str(status.data).count('"done"') == 2


def test_load_policy_rejects_a_non_model_folder(tmp_path):
    from m1model.policy import CheckpointError, load_policy

    with pytest.raises(CheckpointError, match="not a model folder"):
        load_policy(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(CheckpointError, match="cannot load the model"):
        load_policy(tmp_path)


def test_cli_list_stages_and_bad_stage(tmp_path):
    m1 = str(Path(sys.executable).with_name("m1"))
    out = subprocess.run(
        [m1, "train", "list-stages", "--curriculum", "m1"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "M1_HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert "reasoning" in out.stdout and "length-80k" in out.stdout
    bad = subprocess.run(
        [m1, "train", "stage", "nope"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "M1_HOME": str(tmp_path)},
    )
    assert bad.returncode == 2
    assert "has no stage 'nope'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_changed_settings_rerun_a_stage_and_mark_later_ones_stale(setup):
    from flows.config import apply_overrides
    from flows.curriculum.base import base_folder
    from flows.curriculum.plan import stage_table
    from flows.curriculum.stage import run_stage
    from m1model.policy import recorded

    def states(cfg):
        return [r["state"] for r in stage_table(cfg)]

    a = run_stage(setup, "a")
    first = _weights(Path(a.final))
    run_stage(setup, "b")
    assert states(setup) == ["done", "done"]
    faster = apply_overrides(setup, ["train.rl_lr=0.05"])
    assert states(faster) == ["stale", "stale"]
    with pytest.raises(InputError, match="stage b starts from stage a, which is stale"):
        run_stage(faster, "b")
    again = run_stage(faster, "a")  # not resumed from a's checkpoints: trained anew with the new rate
    assert len(again.history) == 2
    assert not all(torch.equal(first[k], v) for k, v in _weights(Path(again.final)).items())
    assert states(faster) == ["done", "stale"]  # b was built from the replaced a
    assert states(setup) == ["stale", "stale"]
    run_stage(faster, "b")
    assert states(faster) == ["done", "done"]

    # The base is rebuilt when its own settings change (here: longer SFT), and the stages go stale.
    longer = apply_overrides(faster, ["train.sft_steps=5"])
    assert states(longer) == ["stale", "stale"]
    run_stage(longer, "a")
    assert len(recorded(base_folder(longer))["sft"]) == 5
    assert states(longer) == ["done", "stale"]


def test_cli_list_stages_json(tmp_path):
    m1 = str(Path(sys.executable).with_name("m1"))

    def stages(*extra):
        out = subprocess.run(
            [m1, "train", "list-stages", "--curriculum", "m1", "--json", *extra],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "M1_HOME": str(tmp_path)},
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    rows = stages()
    assert [r["stage"] for r in rows] == ["reasoning", "general", "length-80k"]
    assert set(rows[0]) == {"stage", "mixture", "window", "steps", "start", "done", "state", "reason"}
    assert rows[2]["window"] == [49152, 81920] and rows[2]["start"] == "general" and rows[0]["done"] is False
    # the general stage exists only where the run builds general data
    assert [r["stage"] for r in stages("-s", "genrm.enabled=false")] == ["reasoning", "length-80k"]


@pytest.mark.parametrize("name", bundled())
def test_bundled_curricula_name_real_verifiers_and_datasets(name):
    """Every verifier a bundled curriculum names is a registered plugin, and every dataset is written by
    a flow of the DAG (or a user's own store name)."""
    from flows.datasets import KINDS, PRODUCERS
    from verifiers.base import default_registry

    cur = load_curriculum(name)
    registered = default_registry().names()
    assert set(cur.verifiers.values()) <= set(registered), set(cur.verifiers.values()) - set(registered)
    for template in cur.datasets:
        kind = template.removeprefix("{run}-")
        assert kind in KINDS and (kind == "curated" or kind in PRODUCERS), template
    domains = {key.split("/")[0] for stage in cur.stages for key in stage.mixture}
    assert domains <= set(cur.verifiers), domains - set(cur.verifiers)


def test_a_domain_share_holds_out_more_of_that_domain_and_nothing_else_moves(setup):
    """`eval.fractions` (general 0.3 by default): one domain held out at its own share; the others keep
    the `eval.fraction` split, and what 0.1 held out stays held out at the larger share."""
    general = items(400, domain="general").with_columns(("g" + pl.col("id")).alias("id"))
    DatasetStore().write("t-curated", pl.concat([items(400), general]))
    cur = load_curriculum(setup.train.curriculum)
    flat = load_data(DatasetStore(), cur, "t", 0.1)
    shared = load_data(DatasetStore(), cur, "t", 0.1, domain_fractions={"general": 0.3})
    share = {d: shared.heldout.filter(pl.col("domain") == d).height / 400 for d in ("math", "general")}
    assert 0.05 < share["math"] < 0.15 and 0.22 < share["general"] < 0.38
    math = pl.col("domain") == "math"
    assert shared.heldout.filter(math).equals(flat.heldout.filter(math))
    assert set(flat.heldout["id"]) <= set(shared.heldout["id"])
    assert shared.train.height + shared.heldout.height == 800
    # what a run reads: the config's shares (general 0.3 by default), and a user's override of them
    assert run_data(setup, cur).heldout.equals(shared.heldout)
    wider = load_config(
        None, ["name=t", f"train.curriculum={setup.train.curriculum}", "eval.fractions.general=0.5"]
    )
    assert 0.42 < run_data(wider, cur).heldout.filter(pl.col("domain") == "general").height / 400 < 0.58
