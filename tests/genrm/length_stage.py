"""A `general` curriculum stage on a store of general items, for the tests of the length-bias monitor inside
a stage: a tiny model, the pairwise judge at ``M1_GENRM_URL`` (a scripted loopback judge), the general items'
rule grade for validation, and the pipeline's `train.length_bias` section as the test sets it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CURRICULUM = """name = "length-stage"
datasets = ["{{run}}-general"]

[verifiers]
general = "genrm"

[eval_verifiers]
general = "general-rule"

[[stages]]
name = "general"
mixture = {{ general = 1.0 }}
steps = {steps}
max_new_tokens = {window}
dynamic_weights = false
"""


def general_stage(
    folder: Path,
    *,
    steps: int,
    length_bias: dict[str, Any],
    sft_steps: int,
    prompts_per_step: int = 8,
    window: int = 64,
    run: str = "lb",
) -> Path:
    """A config file for run ``run`` whose store holds general items, with a one-stage curriculum."""
    from flows.genrm.general import general_items
    from flows.store import DatasetStore

    home = folder / "home"
    if DatasetStore(home).latest(f"{run}-general") is None:
        DatasetStore(home).write(f"{run}-general", general_items(160, seed=3))
    (folder / "curriculum.toml").write_text(CURRICULUM.format(steps=steps, window=window))
    config = {
        "name": run,
        "home": str(home),
        "model": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "softmax_every": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "intermediate_size": 64,
            "num_local_experts": 2,
            "num_experts_per_tok": 1,
            "vocab_size": 600,
        },
        "train": {
            "curriculum": str(folder / "curriculum.toml"),
            "sft_steps": sft_steps,
            "sft_lr": 5e-3,
            "batch_size": 8,
            "prompts_per_step": prompts_per_step,
            "group_size": 4,
            "rl_lr": 5e-3,
            "updates_per_batch": 1,
            "dynamic_sampling": False,
            "max_sampling_rounds": 1,
            "checkpoint_every": 1000,
            "length_bias": length_bias,
        },
        "eval": {"n_items": 4, "max_new_tokens": window},
        # the judge alone scores: the constraint rules (a word limit) would push back on length themselves
        "genrm": {"gate": False, "constraint_weight": 0.0},
    }
    path = folder / f"{run}.json"
    path.write_text(json.dumps(config))
    return path
