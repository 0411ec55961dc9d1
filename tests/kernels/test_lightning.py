"""Every lightning-attention implementation against the naive recurrence (and that against transformers)."""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels import (
    lightning_attention,
    lightning_attn_chunked,
    lightning_attn_decode,
    lightning_attn_naive,
)


def make_inputs(B=2, H=3, T=37, Dk=8, Dv=6, dtype=torch.float64, state=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, T, Dk, generator=g, dtype=dtype) for _ in range(2))
    v = torch.randn(B, H, T, Dv, generator=g, dtype=dtype)
    slope = torch.rand(H, generator=g, dtype=torch.float64) * 0.9 + 0.05
    s0 = torch.randn(B, H, Dk, Dv, generator=g, dtype=torch.float64) if state else None
    return q, k, v, slope, s0


@pytest.fixture(params=[None, 1, 2], ids=["one-segment", "segment-per-chunk", "two-chunk-segments"])
def segments(request, monkeypatch):
    """Long sequences are processed in segments of whole chunks; force several on small shapes."""
    if request.param is not None:
        from kernels.lightning import chunked

        monkeypatch.setattr(chunked, "_segment_len", lambda B, H, C, D: request.param * C)


@pytest.mark.parametrize("T", [0, 1, 5, 16, 37])
@pytest.mark.parametrize("chunk_size", [1, 4, 16])
@pytest.mark.parametrize("with_state", [False, True])
def test_chunked_matches_naive(T, chunk_size, with_state):
    q, k, v, slope, s0 = make_inputs(T=T, state=with_state)
    o_ref, s_ref = lightning_attn_naive(q, k, v, slope, s0)
    o, s = lightning_attn_chunked(q, k, v, slope, s0, chunk_size=chunk_size)
    assert o.shape == o_ref.shape == (2, 3, T, 6)
    torch.testing.assert_close(o, o_ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(s, s_ref, rtol=1e-10, atol=1e-10)


def test_chunked_over_several_segments_matches_naive(segments):
    test_chunked_matches_naive(T=37, chunk_size=4, with_state=True)


def test_default_chunk_with_float32_long_sequence():
    # Strong and weak decays over several 64-token chunks plus a short tail.
    q, k, v, slope, s0 = make_inputs(B=1, H=4, T=300, Dk=16, Dv=16, dtype=torch.float32)
    slope = torch.tensor([1e-3, 0.05, 0.5, 2.0])
    o_ref, s_ref = lightning_attn_naive(q, k, v, slope, s0.float())
    o, s = lightning_attention(q, k, v, slope, s0.float())  # auto: chunked on CPU
    assert o.dtype == torch.float32 and s.dtype == torch.float32
    torch.testing.assert_close(o, o_ref, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(s, s_ref, rtol=1e-4, atol=1e-3)


def test_decode_steps_continue_a_prefill():
    q, k, v, slope, s0 = make_inputs(T=20)
    o_ref, s_ref = lightning_attn_naive(q, k, v, slope, s0)
    o_pre, state = lightning_attn_chunked(q[:, :, :12], k[:, :, :12], v[:, :, :12], slope, s0, chunk_size=4)
    outs = [o_pre]
    for t in range(12, 20):
        o_t, state = lightning_attn_decode(
            q[:, :, t : t + 1], k[:, :, t : t + 1], v[:, :, t : t + 1], slope, state
        )
        outs.append(o_t)
    torch.testing.assert_close(torch.cat(outs, dim=2), o_ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(state, s_ref, rtol=1e-10, atol=1e-10)


def test_low_precision_inputs_keep_a_float32_state():
    q, k, v, slope, _ = make_inputs(T=40, dtype=torch.bfloat16)
    o, s = lightning_attn_chunked(q, k, v, slope, chunk_size=16)
    o_ref, s_ref = lightning_attn_naive(q, k, v, slope)
    assert o.dtype == torch.bfloat16 and s.dtype == torch.float32
    torch.testing.assert_close(s, s_ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(o, o_ref, rtol=2e-2, atol=2e-2)


def test_left_padding_with_zero_kv_is_invisible():
    q, k, v, slope, _ = make_inputs(B=1, T=10)
    pad = 7
    qp, kp, vp = (
        torch.cat([torch.randn(1, 3, pad, x.shape[-1], dtype=x.dtype), x], dim=2) for x in (q, k, v)
    )
    kp[:, :, :pad] = 0
    vp[:, :, :pad] = 0
    o_ref, s_ref = lightning_attn_naive(q, k, v, slope)
    o, s = lightning_attn_chunked(qp, kp, vp, slope, chunk_size=4)
    assert torch.count_nonzero(o[:, :, :pad]) == 0
    torch.testing.assert_close(o[:, :, pad:], o_ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(s, s_ref, rtol=1e-10, atol=1e-10)


def test_naive_matches_transformers_minimax_lightning_layer():
    """The reference is the math of transformers' MiniMaxLightningAttention (block prefill and cached decode)."""
    from transformers import MiniMaxConfig
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    torch.manual_seed(0)
    config = MiniMaxConfig(
        hidden_size=32,
        num_attention_heads=4,
        head_dim=8,
        num_hidden_layers=3,
        block_size=8,
        layer_types=["linear_attention"] * 3,
    )
    layer = MiniMaxLightningAttention(config, layer_idx=1).double().eval()
    hidden = torch.randn(2, 21, 32, dtype=torch.float64)  # 21: two full blocks and a short one
    seen = {}
    layer.norm.register_forward_hook(lambda mod, args, out: seen.setdefault("attn", args[0]))
    with torch.no_grad():
        layer(hidden, position_embeddings=None, attention_mask=None)
        qkv = layer.act_fn(layer.qkv_proj(hidden)).reshape(2, 21, 4, 24).transpose(1, 2)
        q, k, v = qkv.split(8, dim=-1)
        slope = layer.slope_rate.reshape(4)
        o, _ = lightning_attn_naive(q, k, v, slope)
    # transformers builds its decay tables in float32 at init, hence float32-level agreement only.
    torch.testing.assert_close(o.transpose(1, 2).reshape(2, 21, 32), seen["attn"], rtol=1e-5, atol=1e-6)


def test_gradcheck_chunked_against_finite_differences(segments):
    q, k, v, slope, s0 = make_inputs(B=1, H=2, T=11, Dk=3, Dv=2)  # two chunks of 4 and a tail of 3
    inputs = tuple(x.clone().requires_grad_() for x in (q, k, v, s0))
    assert torch.autograd.gradcheck(
        lambda q, k, v, s0: lightning_attn_chunked(q, k, v, slope, s0, chunk_size=4), inputs
    )


@pytest.mark.parametrize("use_final_state", [False, True])
def test_chunked_gradients_match_autograd_through_naive(use_final_state, segments):
    q, k, v, slope, s0 = make_inputs(B=2, H=3, T=45, Dk=8, Dv=6)
    g = torch.Generator().manual_seed(1)
    w_o = torch.randn(2, 3, 45, 6, generator=g, dtype=torch.float64)
    w_s = torch.randn(2, 3, 8, 6, generator=g, dtype=torch.float64)

    def grads(fn):
        leaves = [x.clone().requires_grad_() for x in (q, k, v, s0)]
        o, s = fn(*leaves[:3], slope, leaves[3])
        loss = (o * w_o).sum() + ((s * w_s).sum() if use_final_state else 0)
        return torch.autograd.grad(loss, leaves)

    ref = grads(lightning_attn_naive)
    got = grads(lambda *a: lightning_attn_chunked(*a, chunk_size=8))  # 5 chunks and a tail of 5
    for name, r, x in zip(["q", "k", "v", "initial_state"], ref, got, strict=True):
        torch.testing.assert_close(x, r, rtol=1e-10, atol=1e-10, msg=f"grad {name}")


def test_bad_inputs_raise_clear_errors():
    q, k, v, slope, s0 = make_inputs()
    with pytest.raises(ValueError, match="slope must be"):
        lightning_attn_chunked(q, k, v, slope[:2])
    with pytest.raises(ValueError, match="state must be"):
        lightning_attn_naive(q, k, v, slope, s0[:, :, :2])
    with pytest.raises(ValueError, match="one token"):
        lightning_attn_decode(q, k, v, slope, s0)
    with pytest.raises(ValueError, match="same shape"):
        lightning_attn_chunked(q, k[..., :4], v, slope)
    with pytest.raises(ValueError, match="no gradient"):
        lightning_attn_chunked(q, k, v, slope.clone().requires_grad_())
    with pytest.raises(ValueError, match="impl must be"):
        kernels.lightning_attention(q, k, v, slope, impl="flash")


@pytest.mark.parametrize("with_state", [False, True])
def test_varlen_rows_match_each_row_alone(with_state):
    """Right-padded rows of different lengths (an engine's prefill chunks): each row's real outputs and
    its state after its own last token equal the naive recurrence over that row alone; the pads hold
    garbage, which must not matter."""
    q, k, v, slope, s0 = make_inputs(B=4, T=37, state=with_state)
    lengths = torch.tensor([37, 1, 20, 36])
    for b, n in enumerate(lengths.tolist()):  # garbage after each row's end
        for x in (q, k, v):
            x[b, :, n:] = 1e3
    o, s = kernels.lightning_attn_varlen(q, k, v, slope, lengths, s0)
    for b, n in enumerate(lengths.tolist()):
        row = slice(b, b + 1)
        o_ref, s_ref = lightning_attn_naive(
            q[row, :, :n], k[row, :, :n], v[row, :, :n], slope, None if s0 is None else s0[row]
        )
        torch.testing.assert_close(o[row, :, :n], o_ref, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(s[row], s_ref, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="lengths"):
        kernels.lightning_attn_varlen(q, k, v, slope, torch.tensor([37, 0, 1, 1]))
