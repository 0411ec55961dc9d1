"""Per-domain reward scoring: each item is scored by the verifier of its domain.

Training (a stage's reward function), curation (the pass-rate filter) and evaluation all score this
way. Verifiers come from the plugin registry (`verifiers.base.default_registry`) and run through
`verify_safely`, so one crashing item scores 0 instead of aborting an RL step.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from verifiers.base import Registry, Reward, Verifier, default_registry, verify_safely

DEFAULT_VERIFIERS = {  # domain -> verifier plugin: the built-in verifier of each built-in domain
    "math": "math",
    "logic": "logic",
    "code": "code",
    "swe": "swe",
    "general": "genrm",
}


class NoVerifier(LookupError):
    """A domain without a verifier: none is named for it (``plugin`` is None), or no plugin has its name."""

    def __init__(self, message: str, domain: str, plugin: str | None) -> None:
        super().__init__(message)
        self.domain, self.plugin = domain, plugin


def resolve_verifiers(
    domains: Iterable[str],
    names: Mapping[str, str],
    registry: Registry | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Verifier]:
    """One verifier per domain, built now (with its ``options``, by verifier name) so that a missing
    plugin fails (`NoVerifier`) before any training."""
    registry = registry if registry is not None else default_registry()
    out = {}
    for domain in sorted(set(domains)):
        if domain not in names:
            raise NoVerifier(f"no verifier for domain {domain!r}", domain, None)
        try:
            out[domain] = registry.get(names[domain], **dict((options or {}).get(names[domain], {})))
        except KeyError as exc:
            raise NoVerifier(f"domain {domain!r}: {exc.args[0]}", domain, names[domain]) from None
    return out


def score(
    verifiers: Mapping[str, Verifier], items: Sequence[Mapping[str, Any]], texts: Sequence[str]
) -> list[Reward]:
    """Score each (item, response text) with the verifier of its domain, batched per domain."""
    by_domain: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        by_domain[item["domain"]].append(i)
    out: list[Reward] = [Reward(0.0)] * len(items)
    for domain, idx in by_domain.items():
        batch = [{**items[i], "response": texts[i]} for i in idx]
        for i, reward in zip(idx, verify_safely(verifiers[domain], batch), strict=True):
            out[i] = reward
    return out


def make_reward_fn(
    verifiers: Mapping[str, Verifier], decode: Callable[[Sequence[int]], str]
) -> Callable[[Sequence[Mapping[str, Any]], Sequence[Sequence[int]]], list[float]]:
    """The `reward_fn(items, responses)` of m1model.rl: responses arrive as token ids."""

    def reward_fn(items: Sequence[Mapping[str, Any]], responses: Sequence[Sequence[int]]) -> list[float]:
        return [r.reward for r in score(verifiers, items, [decode(r) for r in responses])]

    return reward_fn
