"""The judge's second gate: how it orders the answers of the policy the curriculum starts from.

The first gate (`flows.genrm.flow.judge_gate`) reads the judge's balanced measures on perturbed references;
a judge can pass it and still not read the policy's own slips (flows/genrm/README.md, the sixth and seventh
rounds: it ordered the warm start's answers at 0.56, a constant judge's 0.5, and its `general` stage cost
held-out general accuracy). So before a curriculum trains the general domain on a judge, the checkpoint it
starts from (the SFT warm start, or `train.init_from`) answers `genrm.policy_gate_prompts` general prompts
no judge trained on, `train.group_size` times each as a stage samples them, and the judge, as the curriculum
calls it, must order the pairs the rule grade tells apart as the rule does more often than a constant
judge (0.5, ties as half), its 95% interval over prompts above 0.5, and `genrm.policy_gate_margin` (0)
above it (`PolicyOrder.gate`). It is measured once per (judge, starting checkpoint, settings) and kept in
``runs/<run>/genrm/on-policy.json``, which `active_curriculum` reads: the stage list is known before the
first stage runs, and a rerun decides the same way without measuring again.

Not a flow: what the training flows (flows/train.py) measure before their plan, and the plan reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flows.atomic import atomic_write_text
from flows.config import PipelineConfig
from flows.curriculum import Curriculum
from flows.curriculum.base import base_folder
from flows.curriculum.fingerprint import JUDGED
from flows.curriculum.judge_on_policy import PolicyOrder, policy_order
from flows.datasets import GENERAL
from flows.genrm.files import genrm_root, judge_dirs, user_judge
from flows.genrm.serve import judge_for
from flows.lineage import fingerprint
from m1model.policy import checkpoint_id
from verifiers.scoring import resolve_verifiers

RECORD = "on-policy.json"


def start_policy(config: PipelineConfig) -> Path:
    """The checkpoint the curriculum's first stage starts from (it may not be built yet)."""
    return Path(config.train.init_from) if config.train.init_from else base_folder(config)


def judged_verifier(config: PipelineConfig, curriculum: Curriculum) -> str | None:
    """The judge verifier the curriculum trains the general domain with, when one of its stages does and
    both gates are on; else None (nothing to measure)."""
    g = config.genrm
    verifier = curriculum.verifier_names().get(GENERAL, "")
    trains_general = any(k.split("/")[0] == GENERAL for s in curriculum.stages for k in s.mixture)
    if not (
        g.enabled and g.gate and g.policy_gate_prompts and trains_general and verifier.startswith(JUDGED)
    ):
        return None
    return verifier


def measure_inputs(config: PipelineConfig, verifier: str) -> dict[str, Any] | None:
    """What the measurement depends on: the judge, the starting checkpoint and how they are asked; None
    while either does not exist yet."""
    policy, g, folders = start_policy(config), config.genrm, judge_dirs(config)
    if not (policy / "config.json").is_file():
        return None
    if user := user_judge(config):
        judge = {"url": user[0], "model": user[1]}
    elif all((folder / "config.json").is_file() for folder in folders):
        ids = [checkpoint_id(folder) for folder in folders]
        judge = {"checkpoint": ids[0]} if len(ids) == 1 else {"checkpoints": ids}
        judge["max_tokens"] = g.judge_max_tokens
        judge["grade_views"], judge["pair_method"] = g.grade_views, g.pair_method
    else:
        return None
    return {
        "judge": judge,
        "verifier": verifier,
        "k": g.k,
        "grade_score": g.grade_score,
        "policy": checkpoint_id(policy),
        "prompts": g.policy_gate_prompts,
        "genrm_seed": g.seed,  # its held-out prompts' seed follows (`policy_items`)
        "samples": config.train.group_size,
        "max_new_tokens": config.eval.max_new_tokens,
        "temperature": config.train.temperature,
        "seed": config.train.seed,
    }


def recorded_order(config: PipelineConfig, verifier: str) -> PolicyOrder | None:
    """The measurement kept for the current judge, starting checkpoint and settings, or None."""
    path = genrm_root(config) / RECORD
    inputs = measure_inputs(config, verifier)
    if inputs is None or not path.is_file():
        return None
    saved = json.loads(path.read_text())
    return PolicyOrder.from_dict(saved["order"]) if saved.get("fingerprint") == fingerprint(inputs) else None


def policy_gate(config: PipelineConfig, curriculum: Curriculum) -> str | None:
    """Why the general domain must not train on the judge, from the kept measurement; None when it passes,
    or when it is not measured yet (the training flows measure it before they plan: flows/train.py
    `training_curriculum`)."""
    order = _kept(config, curriculum)
    if order is None or (why := order.gate(config.genrm.policy_gate_margin)) is None:
        return None
    return f"{_on_answers(config)}, {why}"


def passed(config: PipelineConfig, curriculum: Curriculum) -> str | None:
    """What the kept measurement shows, for the run report, when the judge passed it; None when it did
    not (`policy_gate` says why) or nothing was measured."""
    order = _kept(config, curriculum)
    if order is None or order.gate(config.genrm.policy_gate_margin) is not None:
        return None
    return f"{_on_answers(config)}, {order.describe()}"


def _kept(config: PipelineConfig, curriculum: Curriculum) -> PolicyOrder | None:
    verifier = judged_verifier(config, curriculum)
    return recorded_order(config, verifier) if verifier else None


def _on_answers(config: PipelineConfig) -> str:
    return f"on the answers of the checkpoint it starts from ({start_policy(config).name})"


def unmeasured(config: PipelineConfig, curriculum: Curriculum) -> str | None:
    """The judge verifier the curriculum trains the general domain with, while its order of the starting
    checkpoint's answers is not kept yet; else None."""
    verifier = judged_verifier(config, curriculum)
    return verifier if verifier is not None and recorded_order(config, verifier) is None else None


def measure(config: PipelineConfig, verifier: str, inputs: dict[str, Any]) -> PolicyOrder:
    """Sample the starting checkpoint's answers, have ``verifier`` score them with the run's judge (served
    for the while, `judge_for`) beside the rule, and keep the result under ``inputs`` (`measure_inputs`,
    computed once by the caller after the warm start exists)."""
    g, t = config.genrm, config.train
    with judge_for(config, [verifier]) as options:
        judge = resolve_verifiers([GENERAL], {GENERAL: verifier}, options=options)[GENERAL]
        order = policy_order(
            judge,
            g,
            start_policy(config),
            g.policy_gate_prompts,
            t.group_size,
            max_tokens=config.eval.max_new_tokens,
            temperature=t.temperature,
            seed=t.seed,
        )
    record = {"fingerprint": fingerprint(inputs), "inputs": inputs, "order": order.to_dict()}
    path = genrm_root(config) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True))
    return order
