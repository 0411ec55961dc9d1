"""How an item becomes a prompt and (for the SFT warm start) a target answer.

The answer format is the one each domain's verifier reads: ``\\boxed{}`` for math (verifiers.format),
``<answer></answer>`` for SynLogic-style logic tasks (verifiers.logic.base). Evaluation must use the
same prompt, so the pipeline's eval calls `prompt_text` too.

Not a flow: how the training and evaluation flows turn items into prompts, one definition for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.math import reference_answer


def prompt_text(item: Mapping[str, Any]) -> str:
    return f"{item['prompt'].strip()}\n"


def answer_text(item: Mapping[str, Any]) -> str:
    reference = str(item["reference"]).strip()
    if item["domain"] == "math":
        return f"\\boxed{{{reference_answer(reference)}}}"
    if item["domain"] == "logic":
        return f"<answer>{reference}</answer>"
    return reference


def encode_prompt(tokenizer, item: Mapping[str, Any]) -> list[int]:
    return list(tokenizer.encode(prompt_text(item), add_special_tokens=True))


def stop_ids(tokenizer) -> tuple[int, ...]:
    """The token ids that end a response: the tokenizer's EOS, when it has one."""
    return (tokenizer.eos_token_id,) if tokenizer.eos_token_id is not None else ()


def sft_examples(tokenizer, rows: Sequence[Mapping[str, Any]]) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer ids + EOS): the model learns to answer in the verifier's format, then stop."""
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    return [
        (encode_prompt(tokenizer, r), list(tokenizer.encode(answer_text(r), add_special_tokens=False)) + eos)
        for r in rows
    ]
