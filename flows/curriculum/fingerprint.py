"""What a checkpoint was built from, as a hash, so stale stages are found instead of reused.

The base model records a hash of its own settings and data; each stage records a hash of its settings
(stage definition, effective TrainConfig, verifiers), the versions of the datasets it read, and the hash
of the checkpoint it started from. A stage whose recorded hash differs from the one the current config
gives is stale: rerunning it starts over, and every later stage is stale with it (its start changed).
The record beside a checkpoint and a checkpoint's identity are `m1model.policy.recorded` and
`checkpoint_id`.

Not a flow: how the training flows decide that a stage is done or stale.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flows.config import PipelineConfig, TrainConfig

# Settings that change how a run is observed or paced, not what it computes.
NOT_RESULTS = {
    "torch_threads",
    "checkpoint_every",
    "keep_checkpoints",
    "samples_per_step",
    "tensorboard",
    "curriculum",
    "init_from",
    # Where the same computation runs: a stage keeps its checkpoints when it is resumed on more processes
    # or with another sampler (its rollouts then differ in their random draws, not in what is learned).
    "nproc",
    "parallel",
    "rollout",
    "vllm_gpu_memory",
}
SFT_FIELDS = ("sft_steps", "sft_lr", "batch_size", "grad_clip", "seed")  # what the warm start uses
SFT_ONLY = {"sft_steps", "sft_lr"}  # ... and of those, what nothing else uses


def digest(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def base_fingerprint(config: PipelineConfig, refs: list[str]) -> str:
    sft = {k: getattr(config.train, k) for k in SFT_FIELDS}
    return digest("base", config.model.model_dump(), sft, config.eval.fraction, refs)


def stage_fingerprint(
    stage_dump: dict, tc: TrainConfig, verifiers: dict, plugin_dirs: list[str], refs: list[str], start_id: str
) -> str:
    train = {k: v for k, v in tc.model_dump().items() if k not in NOT_RESULTS | SFT_ONLY}
    return digest("stage", stage_dump, train, verifiers, plugin_dirs, refs, start_id)
