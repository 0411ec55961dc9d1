"""`general-rule`: the rule grade of a general-domain item (the `general` items of flows/genrm/general.py),
the ground truth the judges are trained and measured against and never see.

A general item's metadata names the one fact its prompt gives (``key``: a day, a price, an hour, a name)
and IFEval-style ``constraints`` (word limit, words to mention). The grade of a response:

    5  it carries the key fact and follows every instruction
    4  it carries the key fact and follows at least half of them
    3  it carries the key fact and follows fewer
    2  it gives another fact of the same kind instead (``others``: e.g. another day)
    1  it gives no such fact

    reward = 1 for grade 5, else (grade - 1) / 4

so a held-out general item counts as solved (reward 1) when the answer is right and follows the
instructions. This is what `m1 run` scores held-out general prompts with before and after training, while
the `general` stage trains on the judge (flows/curriculum/tiny.toml's ``[eval_verifiers]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from verifiers.base import ItemError, Reward
from verifiers.constraints import ConstraintVerifier


def mentions(text: str, word: str) -> bool:
    """``word`` in ``text`` as a whole word, case-insensitively."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None


def metadata(item: Mapping[str, Any]) -> dict[str, Any]:
    meta = item.get("metadata") or {}
    try:
        meta = json.loads(meta) if isinstance(meta, str) else dict(meta)
    except (TypeError, ValueError):
        raise ItemError("metadata is not a JSON object") from None
    if not isinstance(meta, dict) or "key" not in meta:
        raise ItemError("a general item's metadata names its `key` fact")
    return meta


def general_grade(item: Mapping[str, Any], response: str, others: Sequence[str] = ()) -> int:
    """The grade of the module's docstring; ``others``: the facts of the key's kind that are wrong."""
    key = str(metadata(item)["key"])
    if not mentions(response, key):
        return 2 if any(v != key and mentions(response, v) for v in others) else 1
    (r,) = ConstraintVerifier().verify([{**item, "response": response}])
    if r.reward >= 1:
        return 5
    return 4 if r.reward >= 0.5 else 3


class GeneralRule:
    name = "general-rule"
    version = "1"

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        out = []
        for item in items:
            response = item.get("response")
            if not isinstance(response, str):
                out.append(Reward.error("item has no text `response`"))
                continue
            try:
                grade = general_grade(item, response)
            except ItemError as exc:
                out.append(Reward.error(str(exc)))
                continue
            out.append(Reward(1.0 if grade == 5 else (grade - 1) / 4, {"grade": grade}))
        return out
