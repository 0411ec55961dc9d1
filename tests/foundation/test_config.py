import pytest

from flows.config import PipelineConfig, apply_overrides, load_config
from flows.errors import ConfigError


def test_defaults_and_toml(tmp_path):
    assert load_config().train.algorithm == "cispo"
    p = tmp_path / "c.toml"
    p.write_text('name = "x"\n[train]\nrl_lr = 3\nalgorithm = "dapo"\n')
    cfg = load_config(p)
    assert (cfg.name, cfg.train.rl_lr, cfg.train.algorithm) == ("x", 3, "dapo")
    assert cfg.data == PipelineConfig().data  # untouched sections keep defaults


def test_yaml_and_json(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("curate:\n  minhash:\n    threshold: 0.5\n")
    assert load_config(y).curate.minhash.threshold == 0.5
    j = tmp_path / "c.json"
    j.write_text('{"eval": {"n_items": 5}}')
    assert load_config(j).eval.n_items == 5


def test_overrides_parse_values():
    cfg = load_config(
        None, ["train.rl_lr=9", "curate.embedding.enabled=true", "data.benchmarks=[{path: a}, {path: b}]"]
    )
    assert cfg.train.rl_lr == 9 and cfg.curate.embedding.enabled is True
    assert [b.path for b in cfg.data.benchmarks] == ["a", "b"]
    assert apply_overrides(cfg, ["name=y"]).name == "y"


def test_a_partial_nested_table_keeps_the_fields_other_defaults(tmp_path):
    """`genrm.judge_model`'s default is wider than `ModelConfig()`: naming one key of it (an override, a
    TOML table) changed only that key; before, the rest silently became the class's defaults."""
    run_judge = PipelineConfig().genrm.judge_model
    for cfg in (
        load_config(None, ["genrm.judge_model.seed=1"]),
        apply_overrides(PipelineConfig(), ["genrm.judge_model.seed=1"]),
    ):
        assert cfg.genrm.judge_model == run_judge.model_copy(update={"seed": 1})
    p = tmp_path / "c.toml"
    p.write_text("[genrm.judge_model]\nhidden_size = 192\n")
    wide = load_config(p).genrm.judge_model
    assert wide.hidden_size == 192 and wide.vocab_size == run_judge.vocab_size == 1024
    assert wide.softmax_every == run_judge.softmax_every == 2
    with pytest.raises(ConfigError, match="genrm.judge_model.bogus: Extra inputs are not permitted"):
        load_config(None, ["genrm.judge_model.bogus=1"])


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ("[train\nx=1", ".toml", r"c\.toml: malformed toml"),
        ("train: [1, 2", ".yaml", r"c\.yaml: malformed yaml"),
        (
            "[train]\nsft_steps = -1\n",
            ".toml",
            r"train\.sft_steps: Input should be greater than or equal to 0",
        ),
        ("[train]\nbogus = 1\n", ".toml", r"train\.bogus: Extra inputs are not permitted"),
        ("x = 1", ".ini", "unknown config format"),
    ],
)
def test_bad_configs_give_one_line_errors(tmp_path, text, suffix, message):
    p = tmp_path / f"c{suffix}"
    p.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(p)
    assert "\n" not in str(info.value)


def test_missing_file_and_bad_override(tmp_path):
    with pytest.raises(ConfigError, match="missing.toml: config file not found"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="expected key=value"):
        load_config(None, ["train.rl_lr"])
    with pytest.raises(ConfigError, match="train.rl_lr"):
        load_config(None, ["train.rl_lr=lots"])
