"""Where the first stage starts: a fresh model of the configured size with a tokenizer trained on the
curriculum's training items and a short SFT warm start (``runs/<run>/train/base/``), or a checkpoint the
user names (``train.init_from``).

The base records a hash of what it was built from (model settings, SFT settings, the datasets it read):
when any of them changes it is rebuilt, instead of a stale base silently feeding every stage.

Not a flow: the first step of the curriculum flow (flows/train.py), which decides what the stages start from.
"""

from __future__ import annotations

from pathlib import Path

from flows.config import PipelineConfig
from flows.curriculum.fingerprint import base_inputs
from flows.curriculum.launch import launch
from flows.curriculum.layout import train_root
from flows.curriculum.mixture import CurriculumData
from flows.curriculum.prompts import answer_text, prompt_text, sft_examples
from flows.lineage import fingerprint as fingerprint_of
from flows.lineage import reason
from flows.model_settings import fresh_model, sft_config


def base_tokenizer(rows: list[dict], vocab_size: int):
    """Byte-level BPE trained on the prompts and the answers the warm start teaches."""
    # heavy: transformers
    from m1model.tokenizer import train_tokenizer

    return train_tokenizer([prompt_text(r) + answer_text(r) for r in rows], vocab_size=vocab_size)


def base_folder(config: PipelineConfig) -> Path:
    return train_root(config) / "base"


def build_base(
    config: PipelineConfig, data: CurriculumData, base_refs: list[str], on_step=None
) -> tuple[Path, bool]:
    """train/base/ for this config: reused when its recorded fingerprint matches, else (re)built.
    Returns (folder, built now).

    With ``train.nproc > 1`` the SFT runs data-parallel under torchrun (`flows.curriculum.launch`): rank 0
    trains the tokenizer and hands it to the others, every rank builds the same fresh model, and rank 0
    alone writes the result while the others wait for it."""
    # heavy: torch, transformers, numpy
    from m1model.policy import recorded, save_policy
    from m1model.rl import distributed
    from m1model.rl.sft import sft_warm_start

    folder = base_folder(config)
    inputs = base_inputs(config, base_refs)
    fingerprint = fingerprint_of(inputs)
    previous = recorded(folder) if (folder / "config.json").exists() else {}
    if previous.get("fingerprint") == fingerprint:
        return folder, False
    why = (
        reason(previous["inputs"], inputs)
        if "inputs" in previous
        else ("first build" if not previous else "rebuilt")
    )
    ctx = distributed.current()
    if config.train.nproc > 1 and not ctx.enabled:
        launch("base", config, on_step=on_step)
        return folder, True
    rows = data.train.to_dicts()
    tokenizer = None
    if ctx.is_main:
        tokenizer = base_tokenizer(rows, config.model.vocab_size)
    tokenizer = ctx.gather(tokenizer)[0]  # rank 0's, on every rank
    model = fresh_model(config.model, tokenizer).to(ctx.device)
    parallel = distributed.DataParallel(model, ctx, config.train.parallel)
    notify = on_step or (lambda phase, m: None)
    history = sft_warm_start(
        model,
        sft_examples(tokenizer, rows),
        sft_config(config.train, tokenizer),
        on_step=lambda m: notify("sft", m),
        parallel=parallel,
    )
    weights = parallel.full_state_dict() if parallel.sharded else None  # FSDP: gathered to rank 0
    if ctx.is_main:
        save_policy(
            model,
            tokenizer,
            folder,
            extra={
                "fingerprint": fingerprint,
                "inputs": inputs,
                "reason": why,
                "data": base_refs,
                "sft": history,
            },
            state_dict=weights,
        )
    ctx.barrier()  # the stage that follows loads it on every rank
    return folder, True
