"""A length-window reward: 1 inside [min_words, max_words], decaying linearly to 0 outside.

An example of a third-party verifier plugin. It satisfies `verifiers.base.Verifier` (a `name`, a
`version`, and `verify(items) -> list[Reward]`) and is found through the `m1.verifiers` entry point
declared in this package's pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.base import Reward


class LengthVerifier:
    name = "length"
    version = "0.1.0"

    def __init__(self, min_words: int = 1, max_words: int = 200, slack: int = 100) -> None:
        if not 0 <= min_words <= max_words or slack <= 0:
            raise ValueError("need 0 <= min_words <= max_words and slack > 0")
        self.min_words, self.max_words, self.slack = min_words, max_words, slack

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        return [self._one(item) for item in items]

    def _one(self, item: Mapping[str, Any]) -> Reward:
        response = item.get("response")
        if not isinstance(response, str):
            return Reward.error("item has no text `response`")
        words = len(response.split())
        outside = max(self.min_words - words, words - self.max_words, 0)
        return Reward(max(0.0, 1.0 - outside / self.slack), {"words": words, "outside_by": outside})
