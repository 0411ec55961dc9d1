"""Training/inference probability mismatch probe (M1 paper, section 3.2, "computational precision").

RL with importance sampling needs the trainer's pi(token) to agree with the probabilities the rollout
engine sampled with. MiniMax found the two diverged (correlation ~0.9) and traced it to the LM head's
precision; computing the head in FP32 brought the correlation to ~0.99.

The probe reproduces that measurement on a checkpoint: the *inference* side is the engine (bf16
weights, recurrent decode path, KV cache) generating continuations and reporting their log-probs; the
*training* side is the FP32 full-sequence forward (chunked lightning kernel, fused FP32 log-softmax)
scoring the same tokens. It runs once with the inference LM head in bf16 and once in FP32.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from m1model.engine import Engine, SamplingParams
from m1model.modeling import M1ForCausalLM


@dataclass(frozen=True)
class ProbeRow:
    inference_head: str  # "bf16" or "fp32"
    tokens: int
    pearson: float  # correlation of per-token probabilities, training vs inference
    mean_abs_diff: float
    max_abs_diff: float


def probe_precision(
    model: M1ForCausalLM,
    prompts: list[list[int]],
    max_tokens: int = 32,
    seed: int = 0,
    inference_dtype: torch.dtype = torch.bfloat16,
) -> list[ProbeRow]:
    """Compare per-token probabilities of sampled continuations: FP32 training forward vs engine in bf16."""
    train = copy.deepcopy(model).float()
    train.config.fp32_lm_head = True
    rows = []
    for head in ("bf16", "fp32"):
        infer = copy.deepcopy(model).to(inference_dtype)
        infer.config.fp32_lm_head = head == "fp32"
        params = SamplingParams(temperature=1.0, max_tokens=max_tokens, seed=seed)
        completions = Engine(infer).generate(prompts, params)
        p_infer, p_train = [], []
        with torch.no_grad():
            for prompt, c in zip(prompts, completions, strict=True):
                seq = torch.tensor([prompt + c.token_ids], device=train.device)
                p_train.append(train.token_logprobs(seq)[0, len(prompt) - 1 :].exp())
                p_infer.append(torch.tensor(c.logprobs, device=train.device).exp())
        a, b = torch.cat(p_train).double(), torch.cat(p_infer).double()
        diff = (a - b).abs()
        rows.append(
            ProbeRow(
                inference_head=head,
                tokens=a.numel(),
                pearson=float(torch.corrcoef(torch.stack([a, b]))[0, 1]),
                mean_abs_diff=float(diff.mean()),
                max_abs_diff=float(diff.max()),
            )
        )
    return rows
