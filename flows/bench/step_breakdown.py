"""Where a training step's time goes, by kind of operator: one step under torch's profiler.

`m1 bench train-step` reports the share of the step outside the weight-GEMM floor; this says what that
share is made of (the attention cores, softmax attention, elementwise work, copies and indexing), so
the next optimisation starts from a measurement. The profiler adds a little to every operator, so the
shares are of the profiled step, not seconds to subtract from the timed one.

Not a benchmark of its own: the profile `m1 bench train-step` prints beside its timings.
"""

from __future__ import annotations

from collections.abc import Callable

# aten operator -> kind; anything not listed is "other" (autograd bookkeeping, views, reductions, ...).
KINDS = {
    "weight GEMMs (mm, addmm)": ("aten::mm", "aten::addmm", "aten::addmm_"),
    "lightning attention core (bmm, scan)": ("aten::bmm", "aten::addcmul"),
    "softmax attention (SDPA)": (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    ),
    "elementwise (mul, add, silu, sigmoid, exp, ...)": (
        "aten::mul",
        "aten::mul_",
        "aten::add",
        "aten::add_",
        "aten::sub",
        "aten::sub_",
        "aten::div",
        "aten::neg",
        "aten::neg_",
        "aten::silu",
        "aten::silu_backward",
        "aten::sigmoid",
        "aten::sigmoid_backward",
        "aten::exp",
        "aten::log",
        "aten::rsqrt",
        "aten::pow",
        "aten::where",
        "aten::maximum",
        "aten::clamp",
    ),
    "copies and indexing (copy_, cat, gather, index_add, ...)": (
        "aten::copy_",
        "aten::cat",
        "aten::index",
        "aten::index_select",
        "aten::_index_put_impl_",
        "aten::index_add",
        "aten::scatter_add_",
        "aten::gather",
        "aten::masked_scatter",
        "aten::fill_",
        "aten::zero_",
        "aten::embedding_dense_backward",
    ),
}
_KIND_OF = {op: kind for kind, ops in KINDS.items() for op in ops}


def step_breakdown(step: Callable[[], object]) -> dict[str, float]:
    """kind -> self CPU seconds of one profiled call of `step`, plus "other" (every kind is present)."""
    # heavy: torch; not at m1 start-up
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    out = dict.fromkeys([*KINDS, "other"], 0.0)
    for event in prof.key_averages():
        out[_KIND_OF.get(event.key, "other")] += event.self_cpu_time_total / 1e6
    return out
