"""`genrm-grade`: the five-grade judge for items with a reference answer (M1 section 4.2.1).

The judge sees the question, the reference's final answer and the response, and replies with a grade
1-5 (rubric in verifiers/genrm/prompts.py). With k samples (option ``k``) the grades are averaged.

    reward = (mean grade - 1) / 4   in [0, 1]

A judgment whose replies never held a readable grade is reward 0 with an ``error`` detail naming the
judge's failure, so a training report can tell "the judge failed" from "the judge said 1"; an endpoint
that is down fails the whole batch the same way, at once, with the endpoint's own message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from verifiers.base import Reward
from verifiers.endpoint import EndpointError
from verifiers.genrm.calls import ask
from verifiers.genrm.judge import EndpointJudge
from verifiers.genrm.parse import parse_grade
from verifiers.genrm.prompts import grade_prompt


def grade_reward(grade: float) -> float:
    return (grade - 1) / 4


class GradeJudge(EndpointJudge):
    name = "genrm-grade"
    version = "1"

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        from verifiers.math import reference_answer

        out, where = self.judgeable(items, "item has no `reference` (the five-grade judge needs one)")
        prompts, cuts = [], []
        for i in where:
            item = items[i]
            text, cut = grade_prompt(
                str(item.get("prompt", "")),
                reference_answer(str(item["reference"])),
                item["response"],
                self.opts.budget,
            )
            prompts.append(text)
            cuts.append(cut)
        if prompts:
            try:
                judged = ask(self.opts, prompts, parse_grade)
            except EndpointError as exc:
                return self.endpoint_failed(out, exc)
            for i, j, cut in zip(where, judged, cuts, strict=True):
                details: dict[str, Any] = {
                    "judge": self.opts.model,
                    "grades": j.verdicts,
                    "attempts": j.attempts,
                }
                if cut:
                    details["truncated"] = {f"{k}_chars_cut": v for k, v in cut.items()}
                if not j.parsed:
                    last = j.replies[-1][:300] if j.replies else ""
                    out[i] = Reward.error(
                        f"judge failed: no grade 1-5 in its reply after {j.attempts} attempt(s)",
                        **details,
                        reply=last,
                    )
                    continue
                grade = fmean(j.parsed)
                out[i] = Reward(grade_reward(grade), details | {"grade": grade})
        return [r for r in out if r is not None]
