"""The generation window of a stage, widened the way MiniMax-M1 section 5 describes.

The paper grows the output length limit (40K -> 80K) in steps, and only when two signals agree:

1. **length**: the 99th percentile of response lengths nears the current window (responses are being
   cut off, so the window, not the task, limits them);
2. **perplexity**: the perplexity of generated sequences has converged, i.e. the model has settled at
   this length before being asked to go longer. Per step we take the mean negative log-likelihood per
   generated token under the sampling policy, ``nll_t``, and call it converged when over the last
   ``ppl_steps`` steps the relative change of ``exp(nll)`` stays below ``ppl_tol``:

       max_{s in last ppl_steps} |exp(nll_s) - exp(nll_{s-1})| / exp(nll_{s-1}) < ppl_tol

Both signals are logged every step, so a widening (or its absence) can be read off the curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class LengthWindow:
    start: int  # tokens at the start of the stage
    limit: int | None = None  # widen up to this; None or step 0: a fixed window
    step: int = 0  # tokens added per widening
    quantile: float = 0.99
    near: float = 0.95  # "nears the window": the quantile reaches near * window
    ppl_steps: int = 3  # steps over which the perplexity must be stable
    ppl_tol: float = 0.05  # largest relative change of perplexity counted as stable
    current: int = 0
    perplexities: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < self.start:
            raise ValueError("the window's limit must be >= its start")
        self.current = self.current or self.start

    @property
    def widens(self) -> bool:
        return bool(self.limit is not None and self.step and self.current < self.limit)

    def observe(self, lengths: np.ndarray, mean_nll: float) -> dict[str, float]:
        """Record one step's responses; widen when both signals hold. Returns the step's window metrics
        (the window the step was generated with, and both signals)."""
        metrics = {"max_new_tokens": float(self.current)}
        self.perplexities.append(math.exp(min(mean_nll, 50.0)))
        p = float(np.quantile(lengths, self.quantile)) if len(lengths) else 0.0
        length_ready = p >= self.near * self.current
        recent = self.perplexities[-(self.ppl_steps + 1) :]
        changes = [abs(b - a) / max(a, 1e-12) for a, b in zip(recent, recent[1:], strict=False)]
        ppl_change = max(changes) if changes else math.inf
        ppl_ready = len(changes) >= self.ppl_steps and ppl_change < self.ppl_tol
        metrics |= {
            "response_len_p99_ratio": p / self.current,
            "perplexity": self.perplexities[-1],
            "perplexity_change": ppl_change if math.isfinite(ppl_change) else -1.0,
            "window_length_ready": float(length_ready),
            "window_ppl_ready": float(ppl_ready),
            "window_widened": 0.0,
        }
        if self.widens and length_ready and ppl_ready:
            self.current = min(self.limit, self.current + self.step)
            self.perplexities.clear()  # a new length: convergence is measured afresh
            metrics["window_widened"] = 1.0
        return metrics

    def state_dict(self) -> dict:
        return {"current": self.current, "perplexities": list(self.perplexities)}

    def load_state_dict(self, state: dict) -> None:
        self.current = int(state["current"])
        self.perplexities = [float(x) for x in state["perplexities"]]
