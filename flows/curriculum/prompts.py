"""How an item becomes a prompt and (for the SFT warm start) a target answer.

The answer format is the one each domain's verifier reads: ``\\boxed{}`` for math (verifiers.format),
``<answer></answer>`` for SynLogic-style logic tasks (verifiers.logic.base). Evaluation must use the
same prompt, so the pipeline's eval calls `prompt_text` too.
"""

from __future__ import annotations

from collections.abc import Mapping
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
