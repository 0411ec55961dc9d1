"""The bundled MiniMax-M1-style model: hybrid lightning/softmax attention, sparse MoE, HF-format checkpoints.

Public API (used by the training flow and m1model.rl):
    M1Config, M1ForCausalLM (forward, token_logprobs, save_pretrained, from_pretrained),
    Engine, SamplingParams, Completion (batched generation with policy logprobs),
    train_tokenizer (byte-level BPE saved beside the model).
"""

from m1model.config import M1Config
from m1model.engine import Completion, Engine, SamplingParams
from m1model.modeling import M1ForCausalLM
from m1model.tokenizer import train_tokenizer

__all__ = ["M1Config", "M1ForCausalLM", "Engine", "SamplingParams", "Completion", "train_tokenizer"]
