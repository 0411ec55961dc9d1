"""What the five-grade and the pairwise judge share: their options (a missing URL fails when the judge
is built, before any training step) and the sorting of a batch into items to judge and item errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.base import Reward
from verifiers.genrm.options import JudgeOptions


class EndpointJudge:
    def __init__(self, **options: Any) -> None:
        self.opts = JudgeOptions.resolve(**options)
        self.opts.clients()

    @staticmethod
    def judgeable(
        items: Sequence[Mapping[str, Any]], no_reference: str
    ) -> tuple[list[Reward | None], list[int]]:
        """(a slot per item, holding its error when it cannot be judged; the indices of the others)."""
        out: list[Reward | None] = [None] * len(items)
        where = []
        for i, item in enumerate(items):
            reference = item.get("reference")
            if not isinstance(item.get("response"), str):
                out[i] = Reward.error("item has no text `response`")
            elif reference is None or not str(reference).strip():
                out[i] = Reward.error(no_reference)
            else:
                where.append(i)
        return out, where

    @staticmethod
    def endpoint_failed(out: list[Reward | None], exc: Exception) -> list[Reward]:
        return [r or Reward.error(f"judge endpoint failed: {exc}") for r in out]
