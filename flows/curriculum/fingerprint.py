"""What the base model, each stage and each evaluation are built from (flows/lineage.py), as inputs.

The base records the inputs of its tokenizer and SFT warm start (the settings it reads, the dataset
versions); each stage records its effective settings (the curriculum's and the stage's overrides applied),
its definition and verifiers, the dataset versions it read, the checkpoint it started from and, when it
trains a judged domain, the judge. A thing whose recorded inputs differ from the ones the current config
gives is stale: rerunning it starts over, every later stage is stale with it (its start changed), and
`lineage.changes` says what differed. The record beside a checkpoint and a checkpoint's identity are
`m1model.policy.recorded` and `checkpoint_id`.

Not a flow: how the training flows decide that a thing is done or stale.
"""

from __future__ import annotations

import os
from typing import Any

from flows.config import PipelineConfig, TrainConfig
from flows.genrm.files import SERVED_JUDGE_ENV, judge_dir, member_hashes
from flows.lineage import RELEASE, config_inputs, fingerprint

JUDGED = "genrm"  # verifier names of the generative judges start with this


def versions(refs: list[str]) -> dict[str, int]:
    """``["m1-curated@v2", ...]`` as ``{"m1-curated": 2, ...}``."""
    return {name: int(v) for name, v in (ref.rsplit("@v", 1) for ref in refs)}


def judge_identity(config: PipelineConfig) -> str | None:
    """The judge a judged domain is scored by: the endpoint the user points at, or the run's own judge
    (the hash of what it was trained from; an ensemble's, joined), or None when there is none yet."""
    url = os.environ.get("M1_GENRM_URL")
    if url and os.environ.get(SERVED_JUDGE_ENV) != str(judge_dir(config).resolve()):
        return url
    hashes = member_hashes(config)  # one judge, or each of the ensemble's
    return None if None in hashes else "+".join(hashes)


def judged(verifiers: dict[str, str], domains) -> bool:
    return any(verifiers.get(d, "").startswith(JUDGED) for d in domains)


def judged_config(inputs: dict[str, Any], is_judged: bool) -> dict[str, Any]:
    """A stage's or an evaluation's config inputs (`config_inputs`), less how a judge is asked (its
    ``genrm.*`` fields) where no judge scores it: another grade_score must not retrain a rule-scored stage."""
    return inputs if is_judged else {k: v for k, v in inputs.items() if not k.startswith("genrm.")}


def base_inputs(config: PipelineConfig, refs: list[str]) -> dict[str, Any]:
    return {"config": config_inputs("base", config), "datasets": versions(refs), "release": RELEASE}


def stage_inputs(
    config: PipelineConfig,
    stage_dump: dict,
    tc: TrainConfig,
    verifiers: dict[str, str],
    refs: list[str],
    start_id: str,
) -> dict[str, Any]:
    domains = {key.split("/")[0] for key in stage_dump.get("mixture", {})}
    is_judged = judged(verifiers, domains)
    return {
        "config": judged_config(config_inputs("stage", config, train=tc), is_judged),
        "stage": stage_dump,
        "verifiers": {d: v for d, v in verifiers.items() if d in domains},  # of the domains it trains
        "datasets": versions(refs),
        "start": start_id,
        "judge": judge_identity(config) if is_judged else None,
        "release": RELEASE,
    }


def base_fingerprint(config: PipelineConfig, refs: list[str]) -> str:
    return fingerprint(base_inputs(config, refs))
