"""`LogicVerifier`: the reward plugin ``logic`` that scores responses to generated logic items.

An item is a canonical RL row as written by `m1 logic generate` (``task``, ``metadata`` JSON holding the
structured ``puzzle``) plus the model's ``response``. The task's rule checker judges the answer against
the puzzle, not against the reference string, so any valid solution of a multi-solution puzzle counts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.base import Reward
from verifiers.logic import get_task


class LogicVerifier:
    name = "logic"
    version = "1"

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        return [self._one(item) for item in items]

    def _one(self, item: Mapping[str, Any]) -> Reward:
        task_name = item.get("task")
        if not task_name:
            return Reward.error("item has no 'task'")
        try:
            task = get_task(str(task_name))
        except KeyError as exc:
            return Reward.error(str(exc.args[0]))
        metadata = item.get("metadata")
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except ValueError as exc:
                return Reward.error(f"metadata is not JSON: {exc}")
        if not isinstance(metadata, Mapping) or not isinstance(metadata.get("puzzle"), Mapping):
            return Reward.error("metadata has no 'puzzle' object (generate items with `m1 logic generate`)")
        response = item.get("response")
        if not isinstance(response, str):
            return Reward.error("item has no string 'response'")
        reward, details = task.verify(dict(metadata["puzzle"]), response)
        return Reward(float(reward), {"task": task.name, **details})
