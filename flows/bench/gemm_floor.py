"""The dense-GEMM floor of a training step: its matrix products alone, timed back to back on this machine.

Every exact implementation of a forward + backward performs the weight GEMMs (projections, experts, LM
head) of the step; only how the rest is done differs. So the time of those GEMMs alone bounds any fp32
implementation from below, and `reference_seconds / floor` is the largest speed-up over a reference that
is possible on this machine. Shapes are recorded as the step dispatches them (one run under a dispatch
mode), then each distinct shape is timed alone, best of a few runs, and weighted by its count.

Not a benchmark of its own: the baseline `m1 bench train-step` measures in the same run.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

# torch is imported inside the functions: every bench module is imported when the CLI starts.


@dataclass(frozen=True)
class GemmFloor:
    flops: float  # of the recorded GEMMs
    seconds: float  # the same GEMMs alone, back to back
    calls: int

    @property
    def gflops_per_s(self) -> float:
        return self.flops / self.seconds / 1e9


def record_gemms(step: Callable[[], object]) -> Counter[tuple[int, int, int]]:
    """(M, K, N) -> count of the weight GEMMs one call of `step` dispatches (forward and backward)."""
    # heavy: torch; not at m1 start-up
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    # Matrix products against weights. The batched ones (bmm) are the attention core, which implementations
    # do differently (chunk sizes, recurrences): left out, so the floor stays a lower bound.
    gemms = {aten.mm.default, aten.addmm.default, aten.addmm_.default}
    shapes: Counter[tuple[int, int, int]] = Counter()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in gemms:
                a, b = args[-2], args[-1]  # mm(a, b); addmm(bias, a, b), beta/alpha keyword-only
                shapes[(a.shape[0], a.shape[1], b.shape[1])] += 1
            return func(*args, **(kwargs or {}))

    with Record():
        step()
    return shapes


def gemm_floor(shapes: Counter[tuple[int, int, int]], tries: int = 3) -> GemmFloor:
    """Time each distinct shape alone (best of `tries`) and sum, weighted by how often the step runs it."""
    # heavy: torch; not at m1 start-up
    import torch

    seconds = 0.0
    for (m, k, n), count in shapes.items():
        a, b = torch.randn(m, k), torch.randn(k, n)
        torch.mm(a, b)  # warm-up: first-call allocations and kernel selection
        best = float("inf")
        for _ in range(tries):
            t0 = time.perf_counter()
            torch.mm(a, b)
            best = min(best, time.perf_counter() - t0)
        seconds += best * count
    flops = sum(2.0 * m * k * n * count for (m, k, n), count in shapes.items())
    return GemmFloor(flops=flops, seconds=seconds, calls=sum(shapes.values()))
