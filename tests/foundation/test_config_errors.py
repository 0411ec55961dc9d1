"""A setting's error is reported against where it came from: the config file, or the `--set` override."""

from __future__ import annotations

import pytest

from flows.config import PipelineConfig, apply_overrides, load_config
from flows.errors import ConfigError


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text("[train]\nrl_lr = 1e-3\n")
    return path


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.rl_lrr=1", "override 'train.rl_lrr=1': train.rl_lrr: Extra inputs are not permitted"),
        ("train.rl_lr=lots", "override 'train.rl_lr=lots': train.rl_lr: Input should be a valid number"),
        ("train=3", "override 'train=3': train: Input should be a valid dictionary"),
        (
            "data.benchmarks=[{path: a, nope: 1}]",
            "override 'data.benchmarks=[{path: a, nope: 1}]': data.benchmarks.0.nope: Extra inputs",
        ),
    ],
)
def test_an_overrides_error_is_the_overrides(config_file, override, message):
    with pytest.raises(ConfigError) as err:
        load_config(config_file, ["name=fine", override])
    assert str(err.value).startswith(message) and "run.toml" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        apply_overrides(PipelineConfig(), [override])
    assert str(err.value).startswith(message)


def test_a_files_error_is_the_files_even_with_overrides(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text("[train]\nrl_lrx = 1e-3\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, ["train.rl_lr=1e-3"])  # an override of the same section is not to blame
    assert str(err.value) == f"{path}: train.rl_lrx: Extra inputs are not permitted"


def test_the_last_of_two_overrides_of_a_key_is_blamed(config_file):
    with pytest.raises(ConfigError, match=r"^override 'train.rl_lr=b': "):
        load_config(config_file, ["train.rl_lr=a", "train.rl_lr=b"])
