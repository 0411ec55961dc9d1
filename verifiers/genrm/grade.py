"""`genrm-grade`: the five-grade judge for items with a reference answer (M1 section 4.2.1).

The judge sees the question, the reference's final answer and the response, and replies with a grade
1-5 (rubric in verifiers/genrm/prompts.py). With k samples (option ``k``) the grades are averaged.
With ``grade_views = "both"`` the response is also graded against the question alone (the pointwise
prompt, no reference), and the lower of the two mean grades counts: a response is as good as the stricter
of two judgments that err apart (a small judge misses a changed fact in one and not the other: on the
run's judge, Best-of-8 0.69 -> 0.80 over three seeds, flows/genrm/README.md).

    reward = (grade - 1) / 4   in [0, 1]

With ``grade_score = "expected"`` each grade is the judge's probability-weighted grade (a float in 1-5,
verifiers/genrm/calls.py), so the reward is continuous.

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
from verifiers.genrm.prompts import grade_prompt, point_prompt


def grade_reward(grade: float) -> float:
    return (grade - 1) / 4


class GradeJudge(EndpointJudge):
    name = "genrm-grade"
    version = "2"

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        from verifiers.math import reference_answer

        out, where = self.judgeable(items, "item has no `reference` (the five-grade judge needs one)")
        both = self.opts.grade_views == "both"
        prompts, cuts = [], []
        for i in where:
            item = items[i]
            question, response = str(item.get("prompt", "")), item["response"]
            text, cut = grade_prompt(
                question, reference_answer(str(item["reference"])), response, self.opts.budget
            )
            prompts.append(text)
            cuts.append(cut)
            if both:  # its cuts are the grade prompt's: the same question and response, the same budget
                prompts.append(point_prompt(question, response, self.opts.budget)[0])
        if prompts:
            try:
                judged = ask(self.opts, prompts, parse_grade, self.opts.grade_score == "expected")
            except EndpointError as exc:
                return self.endpoint_failed(out, exc)
            views = 2 if both else 1
            for n, (i, cut) in enumerate(zip(where, cuts, strict=True)):
                against_ref, *against_question = judged[n * views : (n + 1) * views]
                details: dict[str, Any] = {
                    "judge": self.opts.model,
                    "grades": against_ref.verdicts,
                    "attempts": against_ref.attempts,
                }
                if against_question:
                    details["question_grades"] = against_question[0].verdicts
                if cut:
                    details["truncated"] = {f"{k}_chars_cut": v for k, v in cut.items()}
                failed = next((j for j in (against_ref, *against_question) if not j.parsed), None)
                if failed is not None:
                    last = failed.replies[-1][:300] if failed.replies else ""
                    out[i] = Reward.error(
                        f"judge failed: no grade 1-5 in its reply after {failed.attempts} attempt(s)",
                        **details,
                        reply=last,
                    )
                    continue
                grade = min(fmean(j.parsed) for j in (against_ref, *against_question))
                out[i] = Reward(grade_reward(grade), details | {"grade": grade})
        return [r for r in out if r is not None]
