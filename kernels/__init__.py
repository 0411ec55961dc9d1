"""Kernels of the bundled MiniMax-M1 model. Imports nothing from the rest of the project.

Laid out as flash-linear-attention does: per op a naive reference, a chunked torch implementation
(forward and backward), a recurrent decode step and Triton kernels, all with one signature and all
tested against the naive reference.

Lightning attention (`kernels.lightning`), MiniMax's linear attention with per-head decay
lam_h = exp(-slope[h]) and no 1/sqrt(d) scale:

    S_t = lam * S_{t-1} + k_t^T v_t          o_t = q_t S_t   (the current token enters with factor 1)

    lightning_attention(q, k, v, slope, initial_state=None, impl="auto") -> (o, final_state)
    lightning_attn_naive / lightning_attn_chunked / lightning_attn_triton: same signature
    lightning_attn_decode(q, k, v, slope, state) -> (o, new_state)      one token, T = 1
    lightning_attn_varlen(q, k, v, slope, lengths, initial_state=None) -> (o, state at each length)
                                        right-padded rows of different lengths (an engine's prefill chunks)

    q, k: [B, H, T, Dk]; v: [B, H, T, Dv]; slope: [H] > 0; state: [B, H, Dk, Dv], float32
    (float64 stays float64); o: [B, H, T, Dv] in q's dtype; initial_state None means zeros.

Padding: callers zero k and v at padded positions. A zero k_t^T v_t adds nothing to the state,
so with left padding the state stays exactly zero through the pads and the real tokens see
exactly what an unpadded sequence would. (Right padding leaves the outputs of real tokens
exact too; only the final state has decayed over the pads.)

Fused log-probabilities (`kernels.logprobs`), the FP32 LM head of RL training without the
[tokens x vocab] FP32 matrix:

    selective_log_softmax(hidden, weight, labels, bias=None, chunk_size=1024,
                          vocab_chunk_size=4096, return_entropy=False) -> logp [, entropy]
    selective_log_softmax_from_logits(logits, labels, chunk_size=1024, return_entropy=False) -> logp [, entropy]

RMSNorm with a hand-written backward (`kernels.rmsnorm`), MiniMaxRMSNorm's math:

    rms_norm(x, weight, eps) -> weight * (x * rsqrt(mean(x^2, -1) + eps))   normalised in float32
"""

from kernels.lightning import (
    lightning_attention,
    lightning_attn_chunked,
    lightning_attn_decode,
    lightning_attn_naive,
    lightning_attn_triton,
    lightning_attn_varlen,
)
from kernels.logprobs import IGNORE_INDEX, selective_log_softmax, selective_log_softmax_from_logits
from kernels.rmsnorm import rms_norm

__all__ = [
    "IGNORE_INDEX",
    "lightning_attention",
    "lightning_attn_chunked",
    "lightning_attn_decode",
    "lightning_attn_naive",
    "lightning_attn_triton",
    "lightning_attn_varlen",
    "rms_norm",
    "selective_log_softmax",
    "selective_log_softmax_from_logits",
]
