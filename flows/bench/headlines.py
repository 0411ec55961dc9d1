"""The figures each bench is judged by, with their goals: what `m1 bench report` and `compare` list first
and what the README's benchmark table shows.

A figure is named as flows/bench/capture.py names it (``table | row | column``). A bench with no entry
here (a new one) shows its first ratios instead. tests/foundation/test_bench_history.py checks that every
name below is a figure of its bench's latest recorded run, so a renamed table or column fails there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flows.bench.history import Group

_GOAL = re.compile(r"^(>=|<=|>|<)\s*([\d.]+)\s*(%|x)?$")


@dataclass(frozen=True)
class Headline:
    label: str
    figure: str
    goal: str = ""  # ">= 10x", "<= 15%", "< 2048": the figure's side of the bound

    def met(self, value: float | None) -> bool | None:
        """Whether `value` meets the goal (None: no goal or no value)."""
        m = _GOAL.match(self.goal)
        if not m or value is None:
            return None
        bound = float(m.group(2)) / (100 if m.group(3) == "%" else 1)
        return {">=": value >= bound, "<=": value <= bound, ">": value > bound, "<": value < bound}[
            m.group(1)
        ]


HEADLINES: dict[str, list[Headline]] = {
    "attention": [
        Headline(
            "chunked vs naive, T = 4K", "lightning attention fwd+bwd | length 4096 | naive/ chunked", ">= 10x"
        ),
        Headline("chunked vs SDPA, T = 16K", "lightning attention fwd+bwd | length 16384 | SDPA/ chunked"),
        Headline(
            "fused log-softmax, memory",
            "selective log-softmax | kernels.selective_log_softmax | memory ratio",
        ),
    ],
    "decode": [
        Headline("hybrid / all-softmax per token, 1K", "decode | context 1,024 | hybrid / all-softmax"),
        Headline("hybrid / all-softmax per token, 16K", "decode | context 16,384 | hybrid / all-softmax"),
    ],
    "train-step": [
        Headline(
            "share of the step outside the GEMM floor",
            "m1model's step against the weight-GEMM floor | outside the floor | share of m1model's step",
            "<= 15%",
        ),
        Headline("vs transformers' MiniMax", "train step | m1model | speed-up vs transformers"),
        Headline(
            "floor-bound limit vs transformers",
            "m1model's step against the weight-GEMM floor | weight-GEMM floor | speed-up vs transformers",
        ),
    ],
    "sft": [Headline("micro-batches vs whole batch", "SFT step | overhead 256 | speed-up vs whole")],
    "dedup": [
        Headline(
            "vs datasketch per document (CPU)", "MinHash LSH | datasketch per-doc* | ours × (cpu)", ">= 10"
        ),
        Headline("vs datasketch bulk (CPU)", "MinHash LSH | datasketch bulk* | ours × (cpu)", ">= 3"),
        Headline("recall", "MinHash LSH | ours | recall"),
        Headline("peak memory, MB", "MinHash LSH | ours | peak MB", "< 2048"),
    ],
    "verify": [
        Headline(
            "math verify vs math-verify",
            "math verification throughput | MathVerifier: + fast paths (2 workers) | x baseline",
            ">= 3x",
        )
    ],
    "rewards": [
        Headline(
            "reward service vs direct calls",
            "reward service: 20000 requests | ratio service / direct | value",
            ">= 1x",
        )
    ],
    "sandbox": [
        Headline(
            "process sandbox vs bare process",
            "sandbox overhead per run: python3 -c pass | process | x subprocess",
        ),
        Headline(
            "docker sandbox vs bare process",
            "sandbox overhead per run: python3 -c pass | docker | x subprocess",
        ),
    ],
    "rl": [
        Headline(
            "vs TRL GRPOTrainer",
            "seconds per generation batch : P=8 x G=8 | m1model RLTrainer | speed-up vs TRL",
        )
    ],
    "swe": [
        Headline(
            "SWE task in Docker vs a venv, 1 worker",
            "SWE evaluation: 4 isodate tasks | s per task, 1 worker(s) | docker / venv",
            "<= 1.2x",
        )
    ],
    "genrm": [
        Headline(
            "served, heavy-tailed lengths, 32 clients vs sequential",
            "judged items/s #2 | heavy-tailed: m1 serve model, 32 clients | vs baseline",
            ">= 4x",
        ),
        Headline(  # 8 tokens per judgment: prefill-bound, little for continuous batching to win
            "served judge (8 tokens), 32 clients vs sequential",
            "judged items/s | judge: m1 serve model, 32 clients | vs baseline",
        ),
    ],
    "engine": [
        Headline(
            "continuous vs sequential, heavy-tailed", "heavy-tailed | continuous | vs sequential", ">= 4x"
        ),
        Headline("continuous vs static, heavy-tailed", "heavy-tailed | continuous | vs static", ">= 1.7x"),
        Headline("continuous vs static, uniform", "uniform | continuous | vs static"),
        Headline(
            "RL rollouts P=8 x G=16 vs static", "RL rollouts: P=8 x G=16 | continuous | speed-up", "> 1x"
        ),
    ],
    "train-scale": [
        Headline(
            "one stage on 2 processes vs 1",
            "RL steps: 8 prompts x 4 responses x 16 new tokens | procs 2 | vs 1 process",
            ">= 1.6x",
        )
    ],
}
FALLBACK = 3  # ratios shown for a bench with no headlines


def headlines(bench: str, group: Group | None = None) -> list[Headline]:
    """The bench's headlines; for a bench without any, the first ratios of `group` (its latest runs)."""
    if bench in HEADLINES or group is None:
        return HEADLINES.get(bench, [])
    ratios = [f for f in group.figures if group.is_ratio(f)][:FALLBACK]
    return [Headline(f, f) for f in ratios]
