"""The bundled MiniMax-M1-style model: hybrid lightning/softmax attention, sparse MoE, HF-format checkpoints.

Public API (used by the training flow and m1model.rl):
    M1Config, M1ForCausalLM (forward, token_logprobs, save_pretrained, from_pretrained),
    Engine, SamplingParams, Completion (the one generation engine: continuous batching over
    lightning-state slots and KV blocks, per-request sampling, policy logprobs),
    train_tokenizer (byte-level BPE saved beside the model).

The names load on first use (PEP 562), as transformers' own package does: each pulls torch and
transformers (about 4 s), and `m1` imports `m1model.allocator` before every command, `m1 --help` included,
which would otherwise pay that here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from m1model.config import M1Config
    from m1model.engine import Completion, Engine, SamplingParams
    from m1model.modeling import M1ForCausalLM
    from m1model.tokenizer import train_tokenizer

_HOMES = {
    "M1Config": "m1model.config",
    "M1ForCausalLM": "m1model.modeling",
    "Engine": "m1model.engine",
    "SamplingParams": "m1model.engine",
    "Completion": "m1model.engine",
    "train_tokenizer": "m1model.tokenizer",
}

__all__ = ["M1Config", "M1ForCausalLM", "Engine", "SamplingParams", "Completion", "train_tokenizer"]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
