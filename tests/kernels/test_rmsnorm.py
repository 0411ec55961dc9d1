"""kernels.rms_norm against MiniMaxRMSNorm's math through autograd (the reference), and gradcheck."""

from __future__ import annotations

import pytest
import torch

from kernels import rms_norm


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' MiniMaxRMSNorm.forward: normalise in float32, cast back, scale (float64 kept in
    float64 here, as rms_norm does for gradcheck; MiniMax models are never float64)."""
    h = x.to(torch.promote_types(x.dtype, torch.float32))
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


@pytest.mark.parametrize(
    ("dtype", "atol"), [(torch.float32, 1e-5), (torch.bfloat16, 2e-2), (torch.float64, 1e-12)]
)
@pytest.mark.parametrize("shape", [(3, 7, 32), (5, 16), (1, 1, 1, 8)])
def test_rms_norm_matches_the_reference_values_and_gradients(dtype, atol, shape):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=g) * 3 + 0.5).to(dtype).requires_grad_()
    weight = (torch.randn(shape[-1], generator=g) * 0.2 + 1).to(dtype).requires_grad_()
    dy = torch.randn(shape, generator=g).to(dtype)
    ours = rms_norm(x, weight, 1e-6)
    ref = reference(x, weight, 1e-6)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    torch.testing.assert_close(ours, ref, atol=atol, rtol=atol)
    for a, b in zip(
        torch.autograd.grad(ours, (x, weight), dy), torch.autograd.grad(ref, (x, weight), dy), strict=True
    ):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, atol=atol * 10, rtol=atol * 10)


def test_rms_norm_passes_gradcheck_and_skips_a_frozen_weight():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 6, dtype=torch.float64, generator=g, requires_grad=True)
    weight = torch.randn(6, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, w: rms_norm(a, w, 1e-5), (x, weight))
    frozen = weight.detach()
    rms_norm(x, frozen, 1e-5).sum().backward()
    assert x.grad is not None and frozen.grad is None


def test_rms_norm_of_a_zero_row_is_zero_not_nan():
    x = torch.zeros(2, 8, requires_grad=True)
    y = rms_norm(x, torch.ones(8), 1e-6)
    y.sum().backward()
    assert torch.equal(y, torch.zeros(2, 8)) and torch.isfinite(x.grad).all()
