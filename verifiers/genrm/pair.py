"""`genrm-pair` (also registered as `genrm`): the pairwise judge for open-ended items (M1 section 4.2.1).

The response is compared with the item's reference answer, blind (the judge sees "A" and "B", never
which is the reference), in both orders to cancel position bias. Each order gives +1 (the response
wins), 0 (tie) or -1; k samples per order are averaged. Judges prefer the first-shown answer often
enough (shared/ANCHORS.md: 63% across 27 judges) that the two orders are combined as common practice
says: their mean when they agree in sign, a tie (0) when they disagree; ``position_consistent`` in the
details records which.

Items that carry IFEval-style ``constraints`` also get the `constraints` verifier's rule reward
r_c in [0, 1], mixed in with weight w (option ``constraint_weight``) so the range stays [-1, 1]:

    reward = (s + w * (2 r_c - 1)) / (1 + w)

`compare` is the same judgment for any two texts (Swiss-round reference selection uses it). With the
option ``pair_method = "pointwise"`` it asks instead for each text's grade against the question alone (the
five-grade rubric, no reference, no second text; DeepSeek-GRM's pointwise judge) and compares the grades:
sample j of the first text against sample j of the second, +1, 0 or -1, averaged. The judge never sees the
two side by side, so the order cannot sway it: both orders are the same judgment by construction (a small
judge trained from scratch learns one text against the question where it does not learn two at once:
flows/genrm/README.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from verifiers.base import ItemError, Reward, item_field
from verifiers.endpoint import EndpointError
from verifiers.genrm.calls import Judged, ask
from verifiers.genrm.judge import EndpointJudge
from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.parse import parse_grade, parse_verdict
from verifiers.genrm.prompts import pair_prompt, point_prompt

_SCORE = {"A": 1.0, "B": -1.0, "C": 0.0}  # from the point of view of the text shown as A


@dataclass
class Comparison:
    """How ``first`` fared against ``second`` over both orders: score in [-1, 1], or an error."""

    score: float | None
    forward: float | None  # first shown as A
    backward: float | None  # first shown as B
    consistent: bool | None
    error: str | None = None
    truncated: dict[str, int] | None = None

    def details(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "forward": self.forward,
            "backward": self.backward,
            "position_consistent": self.consistent,
        }
        if self.truncated:
            d["truncated"] = self.truncated
        return d


def combine(forward: float | None, backward: float | None) -> tuple[float | None, bool | None]:
    """(score, consistent) of the two orders' mean scores, each from the first text's point of view."""
    if forward is None and backward is None:
        return None, None
    if forward is None or backward is None:  # one order failed: use the other, consistency unknown
        return (forward if forward is not None else backward), None
    if forward == 0 and backward == 0 or forward * backward > 0:
        return (forward + backward) / 2, True
    return 0.0, False


def _order_score(j: Judged, sign: float) -> float | None:
    return fmean(_SCORE[v] * sign for v in j.parsed) if j.parsed else None


def compare(opts: JudgeOptions, triples: Sequence[tuple[str, str, str]]) -> list[Comparison]:
    """(question, first, second) -> how first compares with second, judged in both orders, blind (or each
    text graded alone: ``opts.pair_method``). Raises `EndpointError` when the endpoint fails (for the whole
    batch)."""
    if opts.pair_method == "pointwise":
        return _compare_pointwise(opts, triples)
    prompts, cuts = [], []
    for question, first, second in triples:
        forward, cut_f = pair_prompt(question, first, second, opts.budget)
        backward, cut_b = pair_prompt(question, second, first, opts.budget)
        prompts += [forward, backward]
        cuts.append(cut_f | cut_b)
    judged = ask(opts, prompts, parse_verdict)
    out = []
    for t in range(len(triples)):
        jf, jb = judged[2 * t], judged[2 * t + 1]
        forward, backward = _order_score(jf, 1.0), _order_score(jb, -1.0)
        score, consistent = combine(forward, backward)
        error = None
        if score is None:
            attempts = jf.attempts + jb.attempts
            error = f"judge failed: no verdict [[A]]/[[B]]/[[C]] in its replies after {attempts} attempt(s)"
        truncated = {f"{k}_chars_cut": v for k, v in cuts[t].items()} or None
        out.append(Comparison(score, forward, backward, consistent, error, truncated))
    return out


def _compare_pointwise(opts: JudgeOptions, triples: Sequence[tuple[str, str, str]]) -> list[Comparison]:
    """Each distinct (question, text) graded once against the question; sample j of the first text's grades
    against sample j of the second's (both read), their sign averaged."""
    index: dict[tuple[str, str], int] = {}
    prompts, cuts = [], []
    for question, *texts in triples:
        for text in texts:
            if (question, text) not in index:
                index[(question, text)] = len(prompts)
                prompt, cut = point_prompt(question, text, opts.budget)
                prompts.append(prompt)
                cuts.append(cut)
    judged = ask(opts, prompts, parse_grade, opts.grade_score == "expected")
    out = []
    for question, first, second in triples:
        i, j = index[(question, first)], index[(question, second)]
        signs = [
            float((a > b) - (a < b))
            for a, b in zip(judged[i].verdicts, judged[j].verdicts, strict=True)
            if a is not None and b is not None
        ]
        score = fmean(signs) if signs else None
        error = None
        if score is None:
            attempts = judged[i].attempts + judged[j].attempts
            error = f"judge failed: no grade of both texts in its replies after {attempts} attempt(s)"
        # named as the pairwise judge names its blocks: the question, then each text (as A and B)
        cut = cuts[i] | {"response_a": cuts[i].get("response", 0), "response_b": cuts[j].get("response", 0)}
        truncated = {f"{k}_chars_cut": c for k, c in cut.items() if k != "response" and c} or None
        # one judgment whichever text is shown first: the same score for both orders, consistent
        out.append(Comparison(score, score, score, None if score is None else True, error, truncated))
    return out


class PairJudge(EndpointJudge):
    name = "genrm-pair"
    version = "1"

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        out, where = self.judgeable(items, "item has no `reference` to compare with")
        triples = [
            (str(items[i].get("prompt", "")), items[i]["response"], str(items[i]["reference"])) for i in where
        ]
        if triples:
            try:
                compared = compare(self.opts, triples)
            except EndpointError as exc:
                return self.endpoint_failed(out, exc)
            for i, c in zip(where, compared, strict=True):
                out[i] = self._reward(items[i], c)
        return [r for r in out if r is not None]

    def _reward(self, item: Mapping[str, Any], c: Comparison) -> Reward:
        details = {"judge": self.opts.model, **c.details()}
        if c.score is None:
            return Reward.error(c.error or "judge failed", **details)
        try:
            constraints = item_field(item, "constraints")
        except ItemError as exc:
            return Reward.error(str(exc), **details)
        if not constraints or not self.opts.constraint_weight:
            return Reward(c.score, details | {"judge_score": c.score})
        from verifiers.constraints import ConstraintVerifier

        (rule,) = ConstraintVerifier().verify([item])
        if "error" in rule.details:
            return Reward.error(f"constraints: {rule.details['error']}", **details)
        w = self.opts.constraint_weight
        reward = (c.score + w * (2 * rule.reward - 1)) / (1 + w)
        return Reward(
            reward,
            details | {"judge_score": c.score, "constraint_reward": rule.reward, "constraints": rule.details},
        )
