"""Triton lightning-attention kernels against the naive recurrence.

On CPU the kernels run in Triton's interpreter (chosen per call for CPU tensors, as TRITON_INTERPRET=1
would), so these tests run in CI without a GPU. The compiled path is compiled ahead of time for
sm_90 here too (no GPU needed), and run against the naive reference by a gpu-marked test.
"""

from __future__ import annotations

import pytest
import torch

import kernels
from kernels import lightning_attention, lightning_attn_naive

pytest.importorskip("triton")
from kernels.lightning.triton_kernels import lightning_attn_triton  # noqa: E402


def check_against_naive(B, H, T, Dk, Dv, dtype, device="cpu", tol=None):
    g = torch.Generator().manual_seed(T + Dv)
    q, k = (torch.randn(B, H, T, Dk, generator=g, dtype=dtype) for _ in range(2))
    v = torch.randn(B, H, T, Dv, generator=g, dtype=dtype)
    slope = torch.rand(H, generator=g, dtype=torch.float64) * 0.9 + 0.05
    s0 = torch.randn(B, H, Dk, Dv, generator=g, dtype=dtype)
    w_o = torch.randn(B, H, T, Dv, generator=g, dtype=dtype)
    w_s = torch.randn(B, H, Dk, Dv, generator=g, dtype=dtype)

    def run(fn, dev):
        leaves = [x.to(dev).requires_grad_() for x in (q, k, v, s0)]
        o, s = fn(*leaves[:3], slope.to(dev), leaves[3])
        grads = torch.autograd.grad((o * w_o.to(dev)).sum() + (s * w_s.to(dev)).sum(), leaves)
        return [x.cpu() for x in (o, s, *grads)]

    ref = run(lightning_attn_naive, "cpu")
    got = run(lightning_attn_triton, device)
    rtol, atol = tol or ((1e-10, 1e-10) if dtype == torch.float64 else (1e-4, 1e-4))
    for name, r, x in zip(["o", "final_state", "dq", "dk", "dv", "d_initial_state"], ref, got, strict=True):
        torch.testing.assert_close(x, r, rtol=rtol, atol=atol, msg=name)


@pytest.mark.parametrize(
    "B, H, T, Dk, Dv, dtype",
    [
        (1, 2, 5, 4, 3, torch.float64),  # shorter than one chunk, head dims below the 16-wide tiles
        (2, 2, 70, 8, 6, torch.float64),  # a full chunk and a short one
        (1, 1, 130, 16, 80, torch.float32),  # three chunks; two value blocks (dq, dk summed over them)
    ],
)
def test_triton_interpreted_matches_naive(B, H, T, Dk, Dv, dtype):
    check_against_naive(B, H, T, Dk, Dv, dtype)


def test_dispatcher_reaches_every_implementation():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 20, 8, generator=g, dtype=torch.float64) for _ in range(3))
    slope = torch.tensor([0.1, 0.7], dtype=torch.float64)
    o_ref, s_ref = lightning_attn_naive(q, k, v, slope)
    for impl in ("naive", "chunked", "triton", "auto"):
        o, s = lightning_attention(q, k, v, slope, impl=impl)
        torch.testing.assert_close(o, o_ref, rtol=1e-10, atol=1e-10, msg=impl)
        torch.testing.assert_close(s, s_ref, rtol=1e-10, atol=1e-10, msg=impl)
    o, _ = kernels.lightning_attn_triton(q, k, v, slope)  # the lazy wrapper `import kernels` exports
    torch.testing.assert_close(o, o_ref, rtol=1e-10, atol=1e-10)


def test_triton_empty_sequence_passes_the_state_through():
    s0 = torch.randn(1, 2, 4, 4)
    o, s = lightning_attn_triton(
        torch.zeros(1, 2, 0, 4), torch.zeros(1, 2, 0, 4), torch.zeros(1, 2, 0, 4), torch.rand(2), s0
    )
    assert o.shape == (1, 2, 0, 4)
    torch.testing.assert_close(s, s0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_triton_compiled_on_cuda_matches_naive():
    check_against_naive(2, 4, 300, 64, 64, torch.float32, device="cuda")
    check_against_naive(1, 2, 200, 128, 96, torch.float32, device="cuda")
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 8, 1000, 64, generator=g).to("cuda", torch.bfloat16) for _ in range(3))
    slope = torch.rand(8, generator=g)
    o, s = lightning_attention(q, k, v, slope.cuda())  # auto picks triton on CUDA; bf16 runs TF32 dots
    o_ref, s_ref = lightning_attn_naive(q.float().cpu(), k.float().cpu(), v.float().cpu(), slope)
    assert o.dtype == torch.bfloat16 and s.dtype == torch.float32
    assert (o.float().cpu() - o_ref).norm() / o_ref.norm() < 1e-2
    assert (s.cpu() - s_ref).norm() / s_ref.norm() < 1e-2


class _SharedMemory(Exception):
    """Raised in place of the PTX stage: the bytes of shared memory the lowered kernel needs."""


def compile_for_hopper(name: str, Dk: int, Dv: int, C: int, num_stages: int, *, shared_only: bool = False):
    """Compile one kernel for sm_90 ahead of time (no GPU needed). shared_only: stop after lowering to
    LLVM IR, where Triton has laid out shared memory, and return the bytes a block needs (ptxas, the
    slow part at 64-wide chunks, is not run)."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels.lightning.triton_kernels import _blocks, _kernel

    kernel = _kernel(name, interpret=False)
    BK, BV, _ = _blocks(Dk, Dv)
    constexprs = {"H": 2, "DK": Dk, "DV": Dv, "C": C, "BK": BK, "BV": BV, "PRECISION": "ieee"}
    signature = {
        arg: "*fp32" if arg.endswith("_ptr") else "constexpr" if arg in constexprs else "i32"
        for arg in kernel.arg_names
    }

    def stop_before_ptx(*args):
        if not args:  # asked for a cache key: these builds are not the normal ones
            return "shared-only", "1"
        stages = args[1]

        def stop(src, metadata):
            raise _SharedMemory(metadata["shared"])

        stages["ptx"] = stop

    hook = knobs.runtime.add_stages_inspection_hook
    knobs.runtime.add_stages_inspection_hook = stop_before_ptx if shared_only else hook
    try:
        return triton.compile(
            ASTSource(kernel, signature, constexprs),
            target=GPUTarget("cuda", 90, 32),
            options={"num_stages": num_stages},
        )
    except _SharedMemory as shared:
        return shared.args[0]
    finally:
        knobs.runtime.add_stages_inspection_hook = hook


@pytest.fixture
def triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")  # today's default, stated to silence 3.9's notice


@pytest.mark.parametrize("name", ["fwd", "bwd_dq", "bwd_dkv"])
def test_triton_kernels_compile_for_hopper_without_a_gpu(name, triton_cache):
    """The interpreter runs any Python; this compiles each kernel to a cubin for sm_90 ahead of time,
    so type, shape and tl.dot constraints of the compiled path are checked on a CPU-only machine.
    Small tiles keep it quick (ptxas is slow on the real 64-wide ones); the code path is the same."""
    assert compile_for_hopper(name, 12, 12, C=16, num_stages=3).asm["cubin"]


@pytest.mark.slow
def test_kernels_at_minimax_head_dim_fit_a_hopper_blocks_shared_memory(triton_cache):
    """MiniMax's heads are 128 wide. With Triton's default 3 pipelining stages the dk/dv backward needs
    278528 bytes of shared memory, more than an H200 block has: it failed there with OutOfResources
    (and this compile gives the same figure on a CPU-only machine). The launches take fewer stages
    where 3 do not fit."""
    from kernels.lightning.triton_kernels import CHUNK, SHARED_MEMORY, _blocks, _stages

    BK, BV, _ = _blocks(128, 128)
    assert compile_for_hopper("bwd_dkv", 128, 128, CHUNK, 3, shared_only=True) > SHARED_MEMORY
    for name in ("fwd", "bwd_dq", "bwd_dkv"):
        assert compile_for_hopper(name, 128, 128, CHUNK, _stages(BK, BV), shared_only=True) <= SHARED_MEMORY
