"""Pass-rate filtering (M1 paper, section 4.1): sample k responses per item from a policy, verify them,
and keep items that are neither always solved nor never solved: low < pass rate < high.

Two samplers: any OpenAI-compatible endpoint (vLLM, `m1 serve model`; chat or completions API with
n = k), and the bundled m1model engine in process from a checkpoint folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import polars as pl

from flows.curate.llm import Endpoint
from flows.curate.result import split_by_reason
from flows.schema import require_columns


class Sampler(Protocol):
    name: str

    def sample(self, prompts: list[str], k: int) -> list[list[str]]:
        """k responses per prompt, in order."""
        ...


@dataclass
class EndpointSampler:
    endpoint: Endpoint
    api: Literal["chat", "completions"] = "chat"
    max_tokens: int = 1024
    temperature: float = 1.0
    template: str = "{prompt}"

    @property
    def name(self) -> str:
        return f"{self.endpoint.base_url} ({self.endpoint.model}, {self.api})"

    def sample(self, prompts: list[str], k: int) -> list[list[str]]:
        texts = [self.template.format(prompt=p) for p in prompts]
        call = self.endpoint.chat if self.api == "chat" else self.endpoint.complete
        return call(texts, n=k, max_tokens=self.max_tokens, temperature=self.temperature)


@dataclass
class EngineSampler:
    """The bundled model, in this process (CPU or GPU), from a checkpoint folder with its tokenizer."""

    checkpoint: str | Path
    max_tokens: int = 256
    temperature: float = 1.0
    seed: int = 0
    template: str = "{prompt}"
    batch_size: int = 64
    _state: dict = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return f"m1model engine ({self.checkpoint})"

    def sample(self, prompts: list[str], k: int) -> list[list[str]]:
        from m1model import Engine, M1ForCausalLM, SamplingParams
        from m1model.tokenizer import load_tokenizer

        if not self._state:
            model = M1ForCausalLM.from_pretrained(self.checkpoint).eval()
            self._state.update(tok=load_tokenizer(self.checkpoint), engine=Engine(model, self.batch_size))
        tok, engine = self._state["tok"], self._state["engine"]
        ids = [tok(self.template.format(prompt=p))["input_ids"] for p in prompts]
        params = SamplingParams(
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            stop_token_ids=(tok.eos_token_id,),
        )
        done = engine.generate([p for p in ids for _ in range(k)], params)
        texts = [tok.decode(c.token_ids, skip_special_tokens=True) for c in done]
        return [texts[i * k : (i + 1) * k] for i in range(len(prompts))]


def passrate_filter(
    df: pl.DataFrame,
    sampler: Sampler,
    k: int = 8,
    low: float = 0.0,
    high: float = 0.9,
    verifier: str = "math",
    prompt_column: str = "prompt",
    answer_column: str | None = None,
    id_column: str = "id",
):
    """Keep rows with low < pass rate < high; `rates` holds every row's pass rate; adds `pass_rate`.

    The reference checked against is `answer_column` if given, else `answer` when present (added by
    extract_answers), else `reference`.
    """
    from verifiers.base import default_registry, verify_safely

    answer_column = answer_column or ("answer" if "answer" in df.columns else "reference")
    require_columns(df, [prompt_column, answer_column, id_column], where="passrate input")
    check = default_registry().get(verifier)
    samples = sampler.sample(df[prompt_column].cast(pl.String).to_list(), k) if df.height else []
    refs = df[answer_column].cast(pl.String).to_list()
    items = [{"response": r, "reference": ref} for ref, rs in zip(refs, samples, strict=True) for r in rs]
    rewards = verify_safely(check, items) if items else []
    # Correctness only: a verifier's format bonus must not count as solving the item.
    solved = [rw.details.get("correct", rw.reward >= 1.0) is True for rw in rewards]
    correct = [sum(solved[i * k : (i + 1) * k]) for i in range(df.height)]
    rate = pl.Series("pass_rate", [c / k for c in correct], dtype=pl.Float64)
    out = df.with_columns(rate)
    reasons = pl.select(
        pl.when(rate <= low)
        .then(pl.format(f"too hard: pass rate {{}} <= {low} ({k} samples)", rate.round(3)))
        .when(rate >= high)
        .then(pl.format(f"too easy: pass rate {{}} >= {high} ({k} samples)", rate.round(3)))
    ).to_series()
    rates = pl.DataFrame(
        {"id": df[id_column], "pass_rate": rate, "correct": correct, "samples": [k] * df.height},
        schema_overrides={"correct": pl.Int64, "samples": pl.Int64},
    )
    return split_by_reason(
        out,
        reasons,
        "pass-rate",
        f"pass rate outside ({low}, {high}) over {k} samples from {sampler.name}",
        rates=rates,
    )
