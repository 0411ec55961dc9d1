"""The one policy-sampler interface: k responses per prompt, from an endpoint or an m1model checkpoint.

Pass-rate filtering (flows/curate/passrate.py) and logic calibration (flows/logic_calibration.py) both
sample through it, configured by the same `PolicyConfig`.

It lives in flows/ because it joins an endpoint (verifiers.endpoint) and m1model, which only flows/ may
import together (shared/DESIGN.md's layers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from flows.config import PolicyConfig
from flows.errors import ConfigError, InputError
from verifiers.endpoint import Endpoint


class Sampler(Protocol):
    name: str

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
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
        return f"{self.endpoint.url} ({self.endpoint.model}, {self.api})"

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        texts = [self.template.format(prompt=p) for p in prompts]
        call = self.endpoint.chat if self.api == "chat" else self.endpoint.complete
        return call(texts, n=k, max_tokens=self.max_tokens, temperature=self.temperature)


@dataclass
class EngineSampler:
    """The bundled model in this process (CPU or GPU), loaded once from a checkpoint folder."""

    checkpoint: str | Path
    max_tokens: int = 256
    temperature: float = 1.0
    seed: int = 0
    template: str = "{prompt}"
    batch_size: int = 256  # requests generating at once (the engine's slots)
    _state: dict = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return f"m1model engine ({self.checkpoint})"

    def _load(self):
        if not self._state:
            # heavy: torch, transformers
            from m1model import Engine
            from m1model.policy import CheckpointError, load_policy

            try:
                model, tokenizer = load_policy(self.checkpoint)
            except CheckpointError as exc:
                raise InputError(str(exc)) from None
            self._state.update(tokenizer=tokenizer, engine=Engine(model, max_num_seqs=self.batch_size))
        return self._state["tokenizer"], self._state["engine"]

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        # heavy: torch, transformers
        from m1model import SamplingParams

        tokenizer, engine = self._load()
        vocab = engine.model.config.vocab_size
        fallback = tokenizer.eos_token_id or 0
        # An empty prompt still needs one token to condition on; ids beyond the model's vocabulary (a
        # tokenizer with added tokens) cannot be embedded.
        ids = [
            [t if t < vocab else fallback for t in tokenizer(self.template.format(prompt=p))["input_ids"]]
            or [fallback]
            for p in prompts
        ]
        stop = tuple(t for t in (tokenizer.eos_token_id,) if t is not None)
        params = SamplingParams(
            temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed, stop_token_ids=stop
        )
        done = engine.generate([p for p in ids for _ in range(k)], params)
        texts = [tokenizer.decode(c.token_ids, skip_special_tokens=True) for c in done]
        return [texts[i * k : (i + 1) * k] for i in range(len(prompts))]


def make_sampler(
    policy: PolicyConfig, *, default_checkpoint: str | Path | None = None, template: str = "{prompt}"
) -> Sampler:
    """A checkpoint in process when one is named (or given as the default), else the endpoint.
    ``template`` shapes each prompt the way the policy was trained to read it."""
    checkpoint = policy.checkpoint or (None if policy.endpoint.url else default_checkpoint)
    if checkpoint:
        return EngineSampler(
            checkpoint, max_tokens=policy.max_tokens, temperature=policy.temperature, template=template
        )
    if policy.endpoint.url:
        return EndpointSampler(
            policy.endpoint.client(),
            api=policy.endpoint.api,
            max_tokens=policy.max_tokens,
            temperature=policy.temperature,
            template=template,
        )
    raise ConfigError("no policy to sample from: set policy.checkpoint or policy.endpoint.url")
