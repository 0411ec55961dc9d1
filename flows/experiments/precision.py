"""The FP32 LM head, the M1 paper's Figure 3 in miniature: where it matters and where it does not.

`m1model.precision.probe_precision` compares, for one model, the training path's and the rollout path's
probability of the same sampled tokens with a bf16 LM head and with an FP32 one (everything else in
bf16). This module sweeps it over model widths, vocabulary sizes and logit scales, and writes the table
and a scatter plot like the paper's.

Random weights give near-uniform next-token distributions (logit std ~0.1): every sampled token has a
probability near 1/V and nothing can disagree by much. A trained model's logits spread over many units.
So each swept model can have its LM head rescaled to a target logit standard deviation (measured on
random inputs), the one property of training the head's precision depends on: a bf16 logit of
magnitude L is rounded by up to L * 2^-9, which moves the token's probability by up to p * L * 2^-9.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from flows.artifacts import save_png

MATTERS_R = 1e-4  # an FP32 head "matters" when it raises r by more than this ...
MATTERS_SHARE = 0.01  # ... or lowers the share of mismatched tokens by more than this


@dataclass(frozen=True)
class Setting:
    hidden: int
    vocab: int
    logit_std: float  # 0: as initialised
    layers: int = 4

    @property
    def label(self) -> str:
        scale = f"logit std {self.logit_std:g}" if self.logit_std else "logits as initialised"
        return f"hidden {self.hidden}, vocab {self.vocab}, {scale}"


def random_model(s: Setting, seed: int = 0):
    """The pipeline's hybrid layout (3 lightning + 1 softmax layer per 4), MoE, LM head scaled to `logit_std`."""
    # heavy: torch, transformers
    import torch

    from m1model.policy import build_model

    heads = max(2, s.hidden // 32)
    model = build_model(
        seed=seed,
        softmax_every=4,
        vocab_size=s.vocab,
        hidden_size=s.hidden,
        intermediate_size=s.hidden * 3 // 2,
        num_hidden_layers=s.layers,
        num_attention_heads=heads,
        num_key_value_heads=1,
        head_dim=s.hidden // heads,
        num_local_experts=4,
        num_experts_per_tok=2,
        pad_token_id=0,
    ).eval()
    if s.logit_std:
        with torch.no_grad():
            ids = torch.randint(3, s.vocab, (4, 32), generator=torch.Generator().manual_seed(seed))
            std = (model.model(ids) @ model.lm_head.weight.T).std()
            model.lm_head.weight.mul_(s.logit_std / std)
    return model


def random_prompts(vocab: int, n: int, length: int = 12, seed: int = 1) -> list[list[int]]:
    # heavy: torch
    import torch

    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (length,), generator=g).tolist() for _ in range(n)]


def settings(hidden: list[int], vocab: list[int], logit_std: list[float], layers: int = 4) -> list[Setting]:
    return [Setting(h, v, s, layers) for h, v, s in itertools.product(hidden, vocab, logit_std)]


def matters(result) -> bool:
    bf16, fp32 = result.rows
    return (fp32.pearson - bf16.pearson > MATTERS_R) or (bf16.mismatch - fp32.mismatch > MATTERS_SHARE)


def markdown(results: list[tuple[str, object]], tolerance: float, tokens_note: str) -> str:
    lines = [
        f"| setting | LM head | tokens | Pearson r | share with Δp > {tolerance:g} | mean Δp | max Δp |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, result in results:
        for r in result.rows:
            lines.append(
                f"| {label} | {r.head} | {r.tokens} | {r.pearson:.5f} | {r.mismatch:.1%} | "
                f"{r.mean_abs_diff:.2e} | {r.max_abs_diff:.2e} |"
            )
    yes = [label for label, res in results if matters(res)]
    no = [label for label, res in results if not matters(res)]
    lines += [
        "",
        "Δp = |p_training - p_rollout| of one sampled token.",
        f"Training path (full-sequence chunked forward) vs rollout path (prefill + recurrent decode with "
        f"cache), both in bf16, same weights and the same sampled tokens ({tokens_note}); only the LM "
        "head's precision changes between a setting's two rows.",
        "",
        f"**The FP32 head matters** (raises r by > {MATTERS_R:g} or cuts the mismatched share by > "
        f"{MATTERS_SHARE:.0%}) in: {'; '.join(yes) or 'none of these settings'}.",
        f"**It does not** in: {'; '.join(no) or 'none of these settings'}.",
    ]
    return "\n".join(lines) + "\n"


def scatter(result, path: Path, title: str) -> Path:
    """Training-path probability against rollout-path probability per token, one panel per head."""
    # heavy: matplotlib
    import matplotlib

    matplotlib.use("Agg")
    # heavy: matplotlib
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 4.4), sharex=True, sharey=True)
    for ax, row in zip(axes, result.rows, strict=True):
        train, roll = (t.float().numpy() for t in result.points[row.head])
        ax.scatter(train, roll, s=6, alpha=0.5)
        ax.plot([0, 1], [0, 1], color="gray", linewidth=0.8, linestyle="--")
        ax.set_title(
            f"{row.head} LM head: r = {row.pearson:.5f}, {row.mismatch:.1%} off by > {row.tolerance:g}"
        )
        ax.set_xlabel("training-path probability")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("rollout-path probability")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)
