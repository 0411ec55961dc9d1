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
from flows.curriculum.mixture import mixture_weights, stage_items
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
    from flows.train import stage_train_config

    assert {"tiny", "m1"} <= set(bundled())
    for name in bundled():
        cur = load_curriculum(name)
        for stage in cur.stages:
            stage_train_config(TrainConfig(), stage, cur)
    m1 = load_curriculum("m1")
    assert m1.stages[-1].max_new_tokens == 80 * 1024 and m1.stages[-1].window_step == 8 * 1024


def test_curriculum_errors_name_the_file(tmp_path):
    from flows.config import TrainConfig
    from flows.train import stage_train_config

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


def test_stage_items_difficulty_filter(setup):
    DatasetStore().write(
        "t-curated", pl.concat([items(3, difficulty=1), items(2, "logic", "s", difficulty=4)])
    )
    cur = load_curriculum(setup.train.curriculum)
    stage = cur.stages[0].model_copy(update={"mixture": {"math": 1, "logic": 1}, "min_difficulty": 2})
    with pytest.raises(InputError, match="math"):  # every math item is too easy now
        stage_items(DatasetStore(), cur, stage, "t")
    stage = stage.model_copy(update={"mixture": {"logic": 1}})
    kept, _ = stage_items(DatasetStore(), cur, stage, "t")
    assert kept["domain"].to_list() == ["logic", "logic"]


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


@pytest.mark.slow
def test_stages_chain_resume_and_rerun(setup):
    from flows.train import run_stage, stage_paths

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


@pytest.mark.slow
def test_train_curriculum_flow(setup, prefect_harness):
    from prefect.artifacts import Artifact

    from flows.train import train_curriculum

    summaries = train_curriculum(setup)
    assert [s["stage"] for s in summaries] == ["a", "b"]
    assert all(Path(s["plot"]).exists() for s in summaries)
    table = Artifact.get("t-b-metrics")
    assert table is not None and table.type == "table" and "reward_mean" in str(table.data)
    report = Artifact.get("t-b-report")
    assert report is not None and "data:image/png;base64," in report.data


def test_load_policy_rejects_a_non_model_folder(tmp_path):
    from flows.train import load_policy

    with pytest.raises(InputError, match="not a model folder"):
        load_policy(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(InputError, match="cannot load the model"):
        load_policy(tmp_path)


def test_warm_start_and_rl_trains_in_place():
    from flows.config import TrainConfig
    from flows.curriculum.prompts import answer_text, prompt_text
    from flows.train import build_model, warm_start_and_rl
    from m1model.tokenizer import train_tokenizer

    rows = items(8).to_dicts()
    tok = train_tokenizer([prompt_text(r) + answer_text(r) for r in rows], vocab_size=300)
    cfg = load_config(
        None,
        [
            "model.hidden_size=32",
            "model.num_hidden_layers=2",
            "model.num_attention_heads=2",
            "model.num_key_value_heads=1",
            "model.intermediate_size=32",
        ],
    )
    model = build_model(cfg.model, tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tc = TrainConfig(sft_steps=2, rl_steps=1, prompts_per_step=2, group_size=4, max_new_tokens=4, rl_lr=0.01)

    def reward_fn(items, responses):  # reward the first few token ids: some spread in every group
        return [float(r[0] % 2) for r in responses]

    result = warm_start_and_rl(model, tok, rows, tc, reward_fn)
    assert len(result.sft) == 2 and len(result.rl) == 1
    assert all(h["finite"] == 1.0 for h in result.sft + result.rl)
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())


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
