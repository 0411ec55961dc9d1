"""The run's judge checkpoint and what it was trained from: `ensure_judge` trains it into its folder
unless the checkpoint there was trained from the same inputs (a hash of the judge settings and the code of
its data, prompts and evaluation, kept in its training.json).

Not a flow: what the general-task flow (flows/genrm/flow.py) and the judge trained ahead of it
(flows/genrm/ahead.py) share.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flows.genrm.general as general
import flows.genrm.labels as labels
import flows.genrm.train_judge as train
import verifiers.genrm.evaluate as evaluate
import verifiers.genrm.grade as grade
import verifiers.genrm.pair as pair
import verifiers.genrm.prompts as prompts
from flows.config import GenRMConfig, PipelineConfig
from flows.genrm.files import judge_dirs
from m1model.policy import checkpoint_id


def judge_inputs_hash(g: GenRMConfig) -> str:
    """What the judge checkpoint depends on: its training settings and the code that makes its data."""
    settings = g.model_dump(
        include={
            "train_prompts",
            "eval_prompts",
            "judge_steps",
            "judge_lr",
            "judge_batch_size",
            "judge_model",
            "pair_training",
            "pair_domains",
            "judge_domains",
            "rationale",
            "pair_grades",
            "k",
            "judge_max_tokens",
            "seed",
        }
    )
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    if g.judge_init:  # what the judge starts from: that checkpoint's recorded fingerprint, or its files
        digest.update(checkpoint_id(g.judge_init).encode())
    # evaluate, grade and pair: the summary the gate reads (and how a grade and a pair are judged in it)
    for module in (general, labels, train, prompts, evaluate, grade, pair):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def _current(folder: Path, digest: str) -> dict[str, Any] | None:
    """The judge's training summary in ``folder`` when it was trained from the inputs ``digest``."""
    meta = folder / "training.json"
    if meta.is_file() and (folder / train.HELDOUT).is_file():
        judge = json.loads(meta.read_text()).get("judge", {})
        if judge.get("inputs_hash") == digest:
            return judge
    return None


def judge_hashes(g: GenRMConfig) -> list[str]:
    """`judge_inputs_hash` of each of the run's judges (one, or each of its ensemble: `GenRMConfig.member`)."""
    return [judge_inputs_hash(g.member(i)) for i in range(g.judges)]


def judge_is_current(config: PipelineConfig) -> bool:
    """Whether the run's judges (one, or each of its ensemble) are trained from the run's judge settings
    and code already."""
    wanted = judge_hashes(config.genrm)
    return all(_current(f, h) is not None for f, h in zip(judge_dirs(config), wanted, strict=True))


def ensure_judge(
    folder: Path, g: GenRMConfig, on_step: Callable[[dict[str, float]], None] | None = None
) -> tuple[dict[str, Any], bool]:
    """(the judge's training summary, whether it was trained now). Cached by `judge_inputs_hash`."""
    digest = judge_inputs_hash(g)
    if (judge := _current(folder, digest)) is not None:
        return judge, False
    return train.train_judge(folder, g, on_step=on_step, inputs_hash=digest), True


def ensure_judges(
    config: PipelineConfig, on_step: Callable[[dict[str, float]], None] | None = None
) -> tuple[list[dict[str, Any]], bool]:
    """`ensure_judge` for each of the run's judges in turn (`judge_dirs`), ``on_step`` counting the steps of
    all of them; (their training summaries, whether any was trained now)."""
    g, summaries, trained = config.genrm, [], False
    for i, folder in enumerate(judge_dirs(config)):
        done = i * g.judge_steps
        relay = None if on_step is None else (lambda m, done=done: on_step(m | {"step": m["step"] + done}))
        summary, now = ensure_judge(folder, g.member(i), relay)
        summaries.append(summary)
        trained = trained or now
    return summaries, trained
