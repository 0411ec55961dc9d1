"""Training/rollout probability mismatch, the M1 paper's Figure 3 (section 3.2, "computational precision").

RL with importance sampling needs the trainer's pi(token) to agree with the probability the rollout
engine sampled the token with. MiniMax found the two diverged (correlation ~0.9) and traced it to the LM
head's precision; computing the head in FP32 brought the correlation to ~0.99.

The probe isolates that one variable. For the same weights and the same sampled tokens it computes each
token's probability along the two paths a run actually uses:

- the *rollout path*: the engine's way, prefill of the prompt then one token at a time through the
  recurrent lightning decode step and the KV cache (teacher-forced with the fixed sampled tokens);
- the *training path*: one full-sequence forward through the chunked lightning kernel, scored by
  ``token_logprobs``, as the trainer scores a batch.

Both run the model in the rollout precision (bf16 by default); the only thing that changes between
the two rows of the probe is the LM head: logits rounded to bf16 ("bf16"), or head and softmax in FP32
("fp32", `config.fp32_lm_head`). The tokens are sampled once, before either row, so both rows score the
same tokens.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from m1model.engine import Engine, SamplingParams
from m1model.modeling import M1ForCausalLM

HEADS = ("bf16", "fp32")


@dataclass(frozen=True)
class ProbeRow:
    head: str  # the LM head's precision on both paths: "bf16" or "fp32"
    tokens: int
    pearson: float  # correlation of per-token probabilities, training path vs rollout path
    mismatch: float  # share of tokens whose probabilities differ by more than `tolerance`
    tolerance: float
    mean_abs_diff: float
    max_abs_diff: float


@dataclass(frozen=True)
class ProbeResult:
    rows: list[ProbeRow]
    # per head: (training-path probabilities, rollout-path probabilities) of every sampled token
    points: dict[str, tuple[torch.Tensor, torch.Tensor]]


def rollout_logprobs(model: M1ForCausalLM, prompt: list[int], tokens: list[int]) -> torch.Tensor:
    """log pi of each of `tokens` after `prompt`, computed by the engine itself, teacher-forced: the
    prompt's prefill, then one token at a time through the recurrent lightning step (its slot) and the
    softmax layers' KV blocks."""
    engine = Engine(model, 1)
    params = SamplingParams(temperature=0.0, max_tokens=len(tokens), repetition_run=len(tokens) + 1)
    (req,) = engine.submit([prompt], params, forced=[tokens])
    while not req.finished:
        engine.step()
    return torch.tensor(req.logprobs, device=model.device)


@torch.inference_mode()
def training_logprobs(model: M1ForCausalLM, prompt: list[int], tokens: list[int]) -> torch.Tensor:
    """log pi of each of `tokens` after `prompt` from one full-sequence forward, as the trainer computes it."""
    seq = torch.tensor([prompt + tokens], device=model.device)
    return model.token_logprobs(seq)[0, len(prompt) - 1 :].float()


def sample(model: M1ForCausalLM, prompts: list[list[int]], max_tokens: int, seed: int) -> list[list[int]]:
    params = SamplingParams(temperature=1.0, max_tokens=max_tokens, seed=seed)
    return [c.token_ids for c in Engine(model).generate(prompts, params)]


def with_head(model: M1ForCausalLM, head: str) -> M1ForCausalLM:
    """A copy of `model` (already in the rollout dtype) whose LM head runs in `head` precision."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    copy_ = copy.deepcopy(model)
    copy_.config.fp32_lm_head = head == "fp32"
    return copy_.eval()


def compare(p_train: torch.Tensor, p_rollout: torch.Tensor, head: str, tolerance: float) -> ProbeRow:
    a, b = p_train.double(), p_rollout.double()
    diff = (a - b).abs()
    constant = a.numel() < 2 or float(a.std()) == 0 or float(b.std()) == 0
    return ProbeRow(
        head=head,
        tokens=a.numel(),
        pearson=1.0 if constant else float(torch.corrcoef(torch.stack([a, b]))[0, 1]),
        mismatch=float((diff > tolerance).double().mean()),
        tolerance=tolerance,
        mean_abs_diff=float(diff.mean()),
        max_abs_diff=float(diff.max()),
    )


def probe_precision(
    model: M1ForCausalLM,
    prompts: list[list[int]],
    max_tokens: int = 32,
    seed: int = 0,
    dtype: torch.dtype = torch.bfloat16,
    tolerance: float = 0.01,
) -> ProbeResult:
    """Training path vs rollout path, same weights and tokens, with a bf16 LM head and an FP32 one."""
    base = copy.deepcopy(model).to(dtype).eval()
    tokens = sample(with_head(base, "fp32"), prompts, max_tokens, seed)
    rows, points = [], {}
    for head in HEADS:
        m = with_head(base, head)
        train = torch.cat([training_logprobs(m, p, t) for p, t in zip(prompts, tokens, strict=True)]).exp()
        roll = torch.cat([rollout_logprobs(m, p, t) for p, t in zip(prompts, tokens, strict=True)]).exp()
        rows.append(compare(train, roll, head, tolerance))
        points[head] = (train, roll)
    return ProbeResult(rows, points)
