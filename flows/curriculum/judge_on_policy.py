"""A judge on the policy's own answers, beside the rule: what the synthetic labelled set cannot show.

The judge is trained and measured on perturbations of references (flows/genrm/labels.py); the policy errs
otherwise (another name in the right template, a garbled tail), and a stage trains on how the judge orders
the policy's answers to one prompt. So: sample ``k`` answers of a policy checkpoint to each of ``n``
general prompts the judge never trained on (the seed of its held-out prompts, `labels.heldout_seed`),
grade each by the rule its labels come from (`rule_grade`, 1-5) and by the judge, and compare the two
within each prompt (m1model/rl/length_bias.py `order_against_rule`: the stage report's count, on its own
rollouts). A constant judge ties every pair: 0.5. The interval is a percentile bootstrap over prompts,
since the pairs of one prompt are not independent.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flows.config import GenRMConfig
from flows.genrm.general import general_tasks, to_item
from flows.genrm.labels import GENERAL_SEED_OFFSET, heldout_seed, rule_grade
from m1model.rl.length_bias import RuleOrder, order_against_rule

BOOTSTRAP = 2000


@dataclass
class PolicyOrder:
    """A judge's order of a policy's answers beside the rule's (`order`), its share's 95% interval, and
    the answers' rule grades (how many of each: a policy that answers every prompt alike leaves no pair
    for the rule to tell apart)."""

    order: RuleOrder
    low: float
    high: float
    prompts: int
    answers: int
    rule_grades: dict[int, int] = field(default_factory=dict)
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PolicyOrder:
        grades = {int(g): n for g, n in d.get("rule_grades", {}).items()}  # JSON keys are strings
        return cls(**{**d, "order": RuleOrder(**d["order"]), "rule_grades": grades})

    def gate(self, margin: float) -> str | None:
        """Why a stage must not train on this judge's reward for these answers, or None: the share it
        orders as the rule does must be ``margin`` above a constant judge's 0.5, with its interval's low end
        above 0.5 (`JudgeEval.gate`'s rule, on the policy's own answers). Ties are half: a judge that ties
        a pair gives it no advantage, so above 0.5 the advantages it gives point where the rule's do more
        often than not."""
        o = self.order
        if math.isnan(o.share):
            return (
                f"the rule tells none of the {self.answers} answers to one prompt apart: "
                "no pair to measure the judge on"
            )
        if o.share >= 0.5 + margin and self.low > 0.5:
            return None
        asked = f"{margin:.2f} above a constant judge's 0.5 and " if margin else ""
        return f"{self.describe()}, where the gate asks {asked}the interval above 0.5"

    def describe(self) -> str:
        o = self.order
        return (
            f"it orders {o.share:.3f} of the pairs of the policy's own answers that the rule tells apart as "
            f"the rule does (95% {self.low:.3f}-{self.high:.3f}; {o.right} as the rule, {o.wrong} the other "
            f"way, {o.tied} tied; {self.prompts} prompts)"
        )

    def table(self) -> list[dict[str, Any]]:
        o = self.order
        decided = o.right + o.wrong + o.tied
        return [
            {
                "metric": "ordered as the rule (ties half)",
                "value": round(o.share, 3),
                "baseline": 0.5,
                "note": f"95% {self.low:.3f}-{self.high:.3f} (bootstrap over {self.prompts} prompts); "
                "a constant judge ties every pair",
            },
            {
                "metric": "pairs the rule tells apart",
                "value": decided,
                "baseline": None,
                "note": f"the judge: {o.right} as the rule, {o.wrong} the other way, {o.tied} tied",
            },
            {
                "metric": "pairs the rule ties, the judge splits",
                "value": o.split,
                "baseline": None,
                "note": "advantages the rule would not give",
            },
            {
                "metric": "answers by rule grade",
                "value": self.answers,
                "baseline": None,
                "note": ", ".join(f"{g}: {n}" for g, n in sorted(self.rule_grades.items(), reverse=True))
                + (f"; {self.failed} judgments failed (reward 0)" if self.failed else ""),
            },
        ]


def policy_items(g: GenRMConfig, n: int) -> list[dict[str, Any]]:
    """``n`` general items from the seed of the judge's held-out prompts (never its training prompts, nor
    the run's own `{run}-general` items); the first `eval_prompts` of them are its held-out labels'."""
    held_out = heldout_seed(g.seed)
    tasks = general_tasks(n, held_out + GENERAL_SEED_OFFSET)
    return [to_item(i, name, task, held_out) for i, (name, task) in enumerate(tasks)]


def sample_answers(
    checkpoint: str | Path,
    items: Sequence[Mapping[str, Any]],
    k: int,
    max_tokens: int,
    temperature: float,
    seed: int,
) -> list[str]:
    """``k`` sampled answers of the checkpoint to each item, in item order (a seeded call: each sequence
    draws from its own seed, m1model/engine.py `request_seed`: the k answers differ, a rerun repeats them)."""
    # heavy: torch
    from flows.curriculum.prompts import encode_prompt, stop_ids
    from m1model.engine import Engine, SamplingParams
    from m1model.policy import load_policy

    model, tokenizer = load_policy(checkpoint)
    prompts = [encode_prompt(tokenizer, item) for item in items for _ in range(k)]
    params = SamplingParams(
        temperature=temperature, max_tokens=max_tokens, stop_token_ids=tuple(stop_ids(tokenizer)), seed=seed
    )
    done = Engine(model.eval()).generate(prompts, params)
    return [tokenizer.decode(c.token_ids, skip_special_tokens=True) for c in done]


def order_share_interval(orders: Sequence[RuleOrder], seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the pooled share, resampling prompts."""
    rng = random.Random(seed)
    shares = []
    for _ in range(BOOTSTRAP):
        share = sum((orders[rng.randrange(len(orders))] for _ in orders), RuleOrder()).share
        if not math.isnan(share):  # a draw of prompts whose answers the rule never told apart
            shares.append(share)
    if not shares:
        return float("nan"), float("nan")
    shares.sort()
    return shares[int(0.025 * (len(shares) - 1))], shares[int(0.975 * (len(shares) - 1))]


def judge_policy(
    judge, items: Sequence[Mapping[str, Any]], answers: Sequence[str], k: int, seed: int = 0
) -> PolicyOrder:
    """The judge (a verifier: `verify(items) -> rewards`) on ``k`` answers per item, beside the rule."""
    if len(answers) != k * len(items):
        raise ValueError(f"{len(answers)} answers for {len(items)} items x {k}")
    answered = [{**items[i // k], "response": text} for i, text in enumerate(answers)]
    rule = [rule_grade(x, x["response"]) for x in answered]
    rewards = judge.verify(answered)
    per_prompt = [
        order_against_rule([[(rule[j], rewards[j].reward) for j in range(i * k, (i + 1) * k)]])
        for i in range(len(items))
    ]
    pooled = sum(per_prompt, RuleOrder())
    low, high = order_share_interval(per_prompt, seed)
    return PolicyOrder(
        pooled,
        low,
        high,
        prompts=len(items),
        answers=len(answered),
        rule_grades=dict(Counter(rule)),
        failed=sum("error" in r.details for r in rewards),
    )


def policy_order(
    judge,
    g: GenRMConfig,
    checkpoint: str | Path,
    n: int,
    k: int,
    *,
    max_tokens: int,
    temperature: float,
    seed: int,
    status: Callable[[str], AbstractContextManager] = lambda _: nullcontext(),
) -> PolicyOrder:
    """The judge on ``k`` sampled answers of ``checkpoint`` to each of ``n`` general prompts it never trained
    on, beside the rule: what `m1 genrm eval --policy` prints and the second gate keeps. ``status`` names
    each of the two slow steps (the CLI's spinner)."""
    items = policy_items(g, n)
    with status(f"sampling {k} answers of {checkpoint} to each of {n} general prompts ..."):
        answers = sample_answers(checkpoint, items, k, max_tokens, temperature, seed)
    with status(f"judging {len(answers)} answers ..."):
        return judge_policy(judge, items, answers, k, seed)
