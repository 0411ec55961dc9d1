"""Analytic FLOPs per generated token: the hybrid model, the same model all-softmax, and DeepSeek-R1.

A multiply-add counts 2; norms, RoPE and the softmax's exponentials are O(d) or O(H n) and left out.
At context n (tokens already in the cache):

    lightning layer   2 d (3 H Dh)  +  2 d (H Dh)  +  2 (H Dh) d      qkv, output gate, out projections
                      + 5 H Dh^2                                      state decay + k^T v update (3/elt), q S (2/elt)
    softmax layer     2 d (H + 2 Hkv) Dh  +  2 (H Dh) d               q, k, v, o projections
                      + 4 H Dh n                                      q K^T and A V over n cached positions
    every layer       2 d E  +  k * 3 * 2 d I                         router, k SwiGLU experts
    once              2 d V                                           LM head

with d hidden size, H / Hkv query / KV heads, Dh head dim, E experts, k experts per token, I expert width,
V vocabulary. Only the softmax layers grow with n, so against the same model with full attention the
hybrid's share falls towards (softmax layers)/(all layers) = 1/8.

The paper's claim (under 50% of the FLOPs at 64K generation length, about 25% at 100K) is against
DeepSeek-R1, a different model: 61 layers of multi-head latent attention (MLA), 3 dense and 58 MoE
feed-forwards (8 of 256 routed experts plus a shared one). Its attention is counted as its heads see it,
2 H (Dqk + Dv) per cached position (queries and keys of 128 + 64 RoPE dims, values of 128), i.e. with
keys and values held per head; the latent projections are counted as the matrices they are. At context 0
the formula gives 2 x 36.6B FLOPs, twice R1's published 37B active parameters.

Not a benchmark of its own: the analytic half of `m1 bench decode`, printed beside its timings.
"""

from __future__ import annotations

from collections.abc import Callable

# MiniMax-M1 / Text-01 (456B total, 45.9B active): 80 layers, a softmax layer after every 7 lightning ones.
MINIMAX_M1 = dict(
    hidden_size=6144,
    num_hidden_layers=80,
    num_attention_heads=64,
    num_key_value_heads=8,
    head_dim=128,
    intermediate_size=9216,
    num_local_experts=32,
    num_experts_per_tok=2,
    vocab_size=200064,
)

# DeepSeek-R1 (DeepSeek-V3 architecture, 671B total, 37B active), its config.json; the multi-token
# prediction module is not used when generating and is left out.
DEEPSEEK_R1 = dict(
    hidden_size=7168,
    num_hidden_layers=61,
    first_k_dense_replace=3,
    intermediate_size=18432,
    moe_intermediate_size=2048,
    n_routed_experts=256,
    n_shared_experts=1,
    num_experts_per_tok=8,
    num_attention_heads=128,
    q_lora_rank=1536,
    kv_lora_rank=512,
    qk_nope_head_dim=128,
    qk_rope_head_dim=64,
    v_head_dim=128,
    vocab_size=129280,
)


def decode_flops(cfg: dict, layer_types: list[str], context: int) -> float:
    """FLOPs of one generated token of a MiniMax-style model at the given context length."""
    d, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    Dh, E, k, inter, V = (
        cfg["head_dim"],
        cfg["num_local_experts"],
        cfg["num_experts_per_tok"],
        cfg["intermediate_size"],
        cfg["vocab_size"],
    )
    lightning = 2 * d * 3 * H * Dh + 2 * d * H * Dh + 2 * H * Dh * d + 5 * H * Dh * Dh
    softmax = 2 * d * (H + 2 * Hkv) * Dh + 2 * H * Dh * d + 4 * H * Dh * context
    moe = 2 * d * E + k * 3 * 2 * d * inter
    attn = sum(lightning if t == "linear_attention" else softmax for t in layer_types)
    return attn + len(layer_types) * moe + 2 * d * V


def _generation(per_token: Callable[[int], float], length: int) -> float:
    """Sum of per_token(n) for n = 1..length in closed form: per-token FLOPs are affine in the context."""
    growth = per_token(1) - per_token(0)  # FLOPs added per cached token
    return length * per_token(0) + growth * length * (length + 1) / 2


def generation_flops(cfg: dict, layer_types: list[str], length: int) -> float:
    """FLOPs of generating `length` tokens from an empty context."""
    return _generation(lambda n: decode_flops(cfg, layer_types, n), length)


def deepseek_r1_decode_flops(context: int, cfg: dict = DEEPSEEK_R1) -> float:
    """FLOPs of one generated token of DeepSeek-R1 at the given context length (module docstring)."""
    d, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    qk = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    q_rank, kv_rank, dv = cfg["q_lora_rank"], cfg["kv_lora_rank"], cfg["v_head_dim"]
    projections = (
        2 * d * q_rank + 2 * q_rank * H * qk  # q: down to the latent, up to the heads
        + 2 * d * (kv_rank + cfg["qk_rope_head_dim"])  # kv latent and the shared RoPE key
        + 2 * kv_rank * H * (cfg["qk_nope_head_dim"] + dv)  # latent up to per-head keys and values
        + 2 * H * dv * d  # output
    )  # fmt: skip
    attention = 2 * H * (qk + dv) * context
    dense = cfg["first_k_dense_replace"]
    moe = (
        2 * d * cfg["n_routed_experts"]
        + (cfg["num_experts_per_tok"] + cfg["n_shared_experts"]) * 3 * 2 * d * cfg["moe_intermediate_size"]
    )
    ffn = dense * 3 * 2 * d * cfg["intermediate_size"] + (L - dense) * moe
    return L * (projections + attention) + ffn + 2 * d * cfg["vocab_size"]


def deepseek_r1_generation_flops(length: int, cfg: dict = DEEPSEEK_R1) -> float:
    """FLOPs of generating `length` tokens of DeepSeek-R1 from an empty context."""
    return _generation(lambda n: deepseek_r1_decode_flops(n, cfg), length)
