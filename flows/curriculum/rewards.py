"""The reward function a stage trains on: decode each response, score it with its domain's verifier.

Verifiers come from the plugin registry (`verifiers.base.default_registry`) and run through
`verify_safely`, so one crashing item scores 0 instead of aborting an RL step.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from flows.errors import InputError
from verifiers.base import Registry, Reward, Verifier, default_registry, verify_safely


def resolve_verifiers(
    domains: Iterable[str],
    names: Mapping[str, str],
    registry: Registry | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Verifier]:
    """One verifier per domain, built now (with its ``options``, by verifier name) so that a missing
    plugin fails before any training."""
    registry = registry if registry is not None else default_registry()
    out = {}
    for domain in sorted(set(domains)):
        if domain not in names:
            raise InputError(
                f"no verifier for domain {domain!r}: add it to the curriculum's [verifiers] table"
            )
        try:
            out[domain] = registry.get(names[domain], **dict((options or {}).get(names[domain], {})))
        except KeyError as exc:
            raise InputError(f"domain {domain!r}: {exc.args[0]}") from None
    return out


def verifier_options(config) -> dict[str, dict[str, Any]]:
    """Options the run's own services and folders give the built-in verifiers that need them: the SWE
    verifier's repositories (and, with GenRM, the judge's endpoint)."""
    from flows.swe.flow import repos_dir

    return {"swe": {"repos_dir": str(repos_dir(config))}}


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
