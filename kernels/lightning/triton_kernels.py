"""Triton forward and backward kernels for lightning attention.

One program per (batch*head, block of BV value columns) walks the chunks in order, holding the
[Dk, BV] state in registers, as Lightning Attention-2's own Triton kernels do: the same chunk
algebra as `kernels.lightning.chunked` (see its docstring for the gradient formulas), with the
intra-chunk quadratic part done by `tl.dot`. (Parallelism is B * H * Dv/BV programs; a variant
that also splits the sequence, materialising chunk states as flash-linear-attention's `chunk`
kernels do, would fill a large GPU better at batch 1.)

  forward:      o and the final state.
  backward dq:  forward walk, recomputing the state; dq summed over the value blocks afterwards.
  backward dkv: reverse walk carrying R, the gradient reaching the state; dk summed over value
                blocks, dv exact per block, d initial_state = R after the first chunk.

A last chunk shorter than C is masked, and its decays use its real length, so the final state
is exact. The kernels run on CUDA tensors; CPU tensors run in Triton's interpreter (slow, for
testing on machines without a GPU).
"""

from __future__ import annotations

import contextlib
import functools
import os

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from kernels.lightning._common import check_inputs, initial, state_dtype

CHUNK = 64


def _fwd(
    q_ptr, k_ptr, v_ptr, o_ptr, s0_ptr, sT_ptr, slope_ptr,
    T, H: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr,
    C: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1).to(tl.int64)  # offsets below can pass 2**31
    s = tl.load(slope_ptr + i_bh % H)
    c = tl.arange(0, C)
    ck = tl.arange(0, BK)
    cv = i_v * BV + tl.arange(0, BV)
    mk = ck < DK
    mv = cv < DV
    diff = (c[:, None] - c[None, :]).to(s.dtype)
    intra = tl.where(diff >= 0, tl.exp(-s * tl.maximum(diff, 0.0)), 0.0)
    q_decay = tl.exp(-s * (c + 1).to(s.dtype))
    state_off = i_bh * DK * DV + ck[:, None] * DV + cv[None, :]
    state = tl.load(s0_ptr + state_off, mask=mk[:, None] & mv[None, :], other=0.0)
    for start in range(0, T, C):
        rows = start + c
        mr = rows < T
        qk_off = i_bh * T * DK + rows[:, None] * DK + ck[None, :]
        v_off = i_bh * T * DV + rows[:, None] * DV + cv[None, :]
        q = tl.load(q_ptr + qk_off, mask=mr[:, None] & mk[None, :], other=0.0)
        k = tl.load(k_ptr + qk_off, mask=mr[:, None] & mk[None, :], other=0.0)
        v = tl.load(v_ptr + v_off, mask=mr[:, None] & mv[None, :], other=0.0)
        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION) * intra
        o = tl.dot(qk, v, input_precision=PRECISION)
        o += tl.dot(q * q_decay[:, None], state.to(q.dtype), input_precision=PRECISION)
        tl.store(o_ptr + v_off, o.to(o_ptr.dtype.element_ty), mask=mr[:, None] & mv[None, :])
        length = tl.minimum(T - start, C)
        k_decay = tl.where(mr, tl.exp(-s * tl.maximum(length - 1 - c, 0).to(s.dtype)), 0.0)
        kv = tl.dot(tl.trans(k * k_decay[:, None]), v, input_precision=PRECISION)
        state = state * tl.exp(-s * length.to(s.dtype)) + kv
    tl.store(sT_ptr + state_off, state, mask=mk[:, None] & mv[None, :])


def _bwd_dq(
    q_ptr, k_ptr, v_ptr, do_ptr, s0_ptr, dq_ptr, slope_ptr,
    T, BH, H: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr,
    C: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1).to(tl.int64)  # offsets below can pass 2**31
    s = tl.load(slope_ptr + i_bh % H)
    c = tl.arange(0, C)
    ck = tl.arange(0, BK)
    cv = i_v * BV + tl.arange(0, BV)
    mk = ck < DK
    mv = cv < DV
    diff = (c[:, None] - c[None, :]).to(s.dtype)
    intra = tl.where(diff >= 0, tl.exp(-s * tl.maximum(diff, 0.0)), 0.0)
    q_decay = tl.exp(-s * (c + 1).to(s.dtype))
    state_off = i_bh * DK * DV + ck[:, None] * DV + cv[None, :]
    state = tl.load(s0_ptr + state_off, mask=mk[:, None] & mv[None, :], other=0.0)
    for start in range(0, T, C):
        rows = start + c
        mr = rows < T
        qk_off = i_bh * T * DK + rows[:, None] * DK + ck[None, :]
        v_off = i_bh * T * DV + rows[:, None] * DV + cv[None, :]
        k = tl.load(k_ptr + qk_off, mask=mr[:, None] & mk[None, :], other=0.0)
        v = tl.load(v_ptr + v_off, mask=mr[:, None] & mv[None, :], other=0.0)
        do = tl.load(do_ptr + v_off, mask=mr[:, None] & mv[None, :], other=0.0)
        dov = tl.dot(do, tl.trans(v), input_precision=PRECISION) * intra
        dq = tl.dot(dov, k, input_precision=PRECISION)
        dq += tl.dot(do, tl.trans(state.to(do.dtype)), input_precision=PRECISION) * q_decay[:, None]
        tl.store(dq_ptr + (i_v * BH).to(tl.int64) * T * DK + qk_off, dq, mask=mr[:, None] & mk[None, :])
        length = tl.minimum(T - start, C)
        k_decay = tl.where(mr, tl.exp(-s * tl.maximum(length - 1 - c, 0).to(s.dtype)), 0.0)
        kv = tl.dot(tl.trans(k * k_decay[:, None]), v, input_precision=PRECISION)
        state = state * tl.exp(-s * length.to(s.dtype)) + kv


def _bwd_dkv(
    q_ptr, k_ptr, v_ptr, do_ptr, dsT_ptr, dk_ptr, dv_ptr, ds0_ptr, slope_ptr,
    T, BH, H: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr,
    C: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1).to(tl.int64)  # offsets below can pass 2**31
    s = tl.load(slope_ptr + i_bh % H)
    c = tl.arange(0, C)
    ck = tl.arange(0, BK)
    cv = i_v * BV + tl.arange(0, BV)
    mk = ck < DK
    mv = cv < DV
    diff = (c[:, None] - c[None, :]).to(s.dtype)
    intra = tl.where(diff >= 0, tl.exp(-s * tl.maximum(diff, 0.0)), 0.0)
    q_decay = tl.exp(-s * (c + 1).to(s.dtype))
    state_off = i_bh * DK * DV + ck[:, None] * DV + cv[None, :]
    r = tl.load(dsT_ptr + state_off, mask=mk[:, None] & mv[None, :], other=0.0)
    n_chunks = (T + C - 1) // C
    for i in range(0, n_chunks):
        start = (n_chunks - 1 - i) * C  # walk the chunks backwards
        rows = start + c
        mr = rows < T
        qk_off = i_bh * T * DK + rows[:, None] * DK + ck[None, :]
        v_off = i_bh * T * DV + rows[:, None] * DV + cv[None, :]
        q = tl.load(q_ptr + qk_off, mask=mr[:, None] & mk[None, :], other=0.0)
        k = tl.load(k_ptr + qk_off, mask=mr[:, None] & mk[None, :], other=0.0)
        v = tl.load(v_ptr + v_off, mask=mr[:, None] & mv[None, :], other=0.0)
        do = tl.load(do_ptr + v_off, mask=mr[:, None] & mv[None, :], other=0.0)
        length = tl.minimum(T - start, C)
        k_decay = tl.where(mr, tl.exp(-s * tl.maximum(length - 1 - c, 0).to(s.dtype)), 0.0)
        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION) * intra
        dov = tl.dot(do, tl.trans(v), input_precision=PRECISION) * intra
        rc = r.to(q.dtype)
        dk = tl.dot(v * k_decay[:, None], tl.trans(rc), input_precision=PRECISION)
        dk += tl.dot(tl.trans(dov), q, input_precision=PRECISION)
        dv = tl.dot(k * k_decay[:, None], rc, input_precision=PRECISION)
        dv += tl.dot(tl.trans(qk), do, input_precision=PRECISION)
        tl.store(dk_ptr + (i_v * BH).to(tl.int64) * T * DK + qk_off, dk, mask=mr[:, None] & mk[None, :])
        tl.store(dv_ptr + v_off, dv, mask=mr[:, None] & mv[None, :])
        r = r * tl.exp(-s * length.to(s.dtype))
        r += tl.dot(tl.trans(q * q_decay[:, None]), do, input_precision=PRECISION)
    tl.store(ds0_ptr + state_off, r, mask=mk[:, None] & mv[None, :])


@functools.cache
def _kernel(name: str, interpret: bool):
    """Wrap a kernel for the compiler or the interpreter, once per mode.

    @triton.jit would fix the mode at import time from TRITON_INTERPRET; choosing per call lets one
    process test on CPU and run on GPU. (So the kernels call no @triton.jit library helpers such
    as tl.cdiv: those are compiled-only when triton was imported without TRITON_INTERPRET.)
    """
    fn = {"fwd": _fwd, "bwd_dq": _bwd_dq, "bwd_dkv": _bwd_dkv}[name]
    return InterpretedFunction(fn) if interpret else JITFunction(fn)


def _interpret(x: torch.Tensor) -> bool:
    """CPU tensors can only run interpreted; TRITON_INTERPRET=1 forces it on CUDA too (for debugging)."""
    return not x.is_cuda or os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


# Shared memory a Hopper block may use (H100/H200: 227 KB).
SHARED_MEMORY = 232448


def _stages(BK: int, BV: int) -> int:
    """Software-pipelining stages for a launch: Triton's default 3, fewer where they do not fit.

    Each stage keeps one chunk's q and k ([C, BK]) and v and do ([C, BV]) tiles in flight in fp32
    shared memory. At MiniMax's head_dim 128 three stages need more than a block has: on an H200 the
    backward at Dk 128, Dv 96 asked for 278528 bytes (OutOfResources); 2 stages ran and matched the
    chunked torch path to 2e-7. At Dk 16 and 64 the stage count changed neither the result nor the time
    (3.8-4.0 ms fwd+bwd at T 16384, 8 heads, Dk 16)."""
    per_stage = CHUNK * (2 * BK + 2 * BV) * 4
    return next((n for n in (3, 2) if n * per_stage <= SHARED_MEMORY), 1)


def _blocks(Dk: int, Dv: int) -> tuple[int, int, int]:
    if Dk > 256:
        raise ValueError(f"the Triton kernels hold a [Dk, BV] state per program and need Dk <= 256; got {Dk}")
    BK = max(16, triton.next_power_of_2(Dk))
    BV = max(16, min(64, triton.next_power_of_2(Dv)))
    return BK, BV, triton.cdiv(Dv, BV)


class _LightningTritonFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, slope, s0, precision: str):  # type: ignore[override]
        B, H, T, Dk = q.shape
        Dv = v.shape[-1]
        BK, BV, NV = _blocks(Dk, Dv)
        o = torch.empty_like(v)
        sT = torch.empty_like(s0)
        if T == 0:
            sT.copy_(s0)
        else:
            meta = dict(C=CHUNK, BK=BK, BV=BV, PRECISION=precision, num_stages=_stages(BK, BV))
            _kernel("fwd", _interpret(q))[(NV, B * H)](q, k, v, o, s0, sT, slope, T, H, Dk, Dv, **meta)
        ctx.save_for_backward(q, k, v, slope, s0)
        ctx.precision = precision
        return o, sT

    @staticmethod
    def backward(ctx, do, dsT):  # type: ignore[override]
        q, k, v, slope, s0 = ctx.saved_tensors
        B, H, T, Dk = q.shape
        Dv = v.shape[-1]
        BK, BV, NV = _blocks(Dk, Dv)
        do = torch.zeros_like(v) if do is None else do.to(v.dtype).contiguous()
        dsT = torch.zeros_like(s0) if dsT is None else dsT.to(s0.dtype).contiguous()
        if T == 0:
            return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v), None, dsT, None
        dq = q.new_empty(NV, *q.shape)
        dk = k.new_empty(NV, *k.shape)
        dv = torch.empty_like(v)
        ds0 = torch.empty_like(s0)
        interpret = _interpret(q)
        # backward runs on autograd's device thread for q's device, so no device guard is needed here
        meta = dict(C=CHUNK, BK=BK, BV=BV, PRECISION=ctx.precision, num_stages=_stages(BK, BV))
        _kernel("bwd_dq", interpret)[(NV, B * H)](q, k, v, do, s0, dq, slope, T, B * H, H, Dk, Dv, **meta)
        _kernel("bwd_dkv", interpret)[(NV, B * H)](
            q, k, v, do, dsT, dk, dv, ds0, slope, T, B * H, H, Dk, Dv, **meta
        )
        return dq.sum(0), dk.sum(0), dv, None, ds0, None


def lightning_attn_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slope: torch.Tensor,
    initial_state: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lightning attention with Triton kernels; same signature and result as `lightning_attn_naive`.

    Inputs are computed in the state dtype (float32, or float64). Matmuls of float32/float64 inputs
    are exact IEEE; bf16/fp16 inputs, already low precision, use TF32 tensor cores.
    """
    check_inputs(q, k, v, slope, initial_state)
    if slope.requires_grad and torch.is_grad_enabled():
        raise ValueError("slope is a fixed decay rate here and gets no gradient; pass slope.detach()")
    dtype = state_dtype(q)
    precision = "ieee" if q.dtype in (torch.float32, torch.float64) else "tf32"
    s0 = initial(initial_state, q, v).contiguous()
    # Triton launches on the current CUDA device; make it q's.
    with torch.cuda.device(q.device) if q.is_cuda else contextlib.nullcontext():
        o, sT = _LightningTritonFn.apply(
            *(x.to(dtype).contiguous() for x in (q, k, v)), slope.to(dtype).contiguous(), s0, precision
        )
    return o.to(q.dtype), sT
