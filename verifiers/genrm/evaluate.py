"""How good is a judge? The two checks of M1 section 4.2.1, on labelled responses.

1. Agreement with the labels: accuracy of the five-grade judge's (rounded) grade, Spearman rank correlation,
   a confusion matrix of grades, and the majority-class baseline (always answering the commonest grade).
2. Best-of-N: per prompt, N responses drawn from its labelled pool; the judge's favourite (highest grade,
   ties broken at random) is correct or not (a correct final answer: grade >= 4). Averaged over draws and
   prompts, against pass@N (any of the N correct: the ceiling a perfect judge reaches) and a random pick
   (the floor), for N = 1, 2, 4, 8.

With ``pairwise`` the blind pairwise judge (the curricula's `genrm`) is also scored: each labelled response
against its prompt's reference, the verdict's sign against the sign of the grade difference, and how often
the two presentation orders agree (position consistency).

Rows are labelled responses, ``prompt_id, question, reference, response, grade`` each (the labels file of
`m1 genrm eval`, read by flows/genrm/files.py; `m1 genrm train-judge` writes one for its held-out prompts).
`JudgeEval.gate` is what a run asks before it trains on a judge.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from verifiers.endpoint import EndpointError
from verifiers.genrm.grade import GradeJudge
from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.pair import compare

NS = (1, 2, 4, 8)
CORRECT = 4  # grades 4 and 5: a correct final answer


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation; 0 when either side is constant or shorter than 3 (no evidence)."""
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(spearmanr(x, y).statistic)


@dataclass
class JudgeEval:
    n: int
    accuracy: float
    majority_baseline: float
    spearman: float
    failed: int  # judgments that ended in an error (not counted as any grade)
    confusion: dict[int, dict[str, int]]  # true grade -> predicted grade ("fail") -> count
    best_of_n: list[dict[str, float]]  # per N: judge, pass@N, random, prompts
    pairwise: dict[str, float] | None = None
    rejected: int = 0
    per_domain: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgeEval:
        """From `dataclasses.asdict` output read back from JSON (grade keys become ints again)."""
        confusion = {int(t): dict(c) for t, c in d["confusion"].items()}
        return cls(**(d | {"confusion": confusion}))

    def table(self) -> list[dict[str, Any]]:
        """The headline numbers as rows (the console table and the Prefect table artifact)."""
        rows: list[dict[str, Any]] = [
            {
                "metric": "grade accuracy",
                "value": round(self.accuracy, 4),
                "baseline": round(self.majority_baseline, 4),
                "note": "baseline: majority class",
            },
            {"metric": "Spearman vs labels", "value": round(self.spearman, 4), "baseline": 0.0, "note": ""},
            {"metric": "failed judgments", "value": self.failed, "baseline": None, "note": f"of {self.n}"},
        ]
        for domain, acc in sorted(self.per_domain.items()):
            rows.append(
                {"metric": f"grade accuracy ({domain})", "value": round(acc, 4), "baseline": None, "note": ""}
            )
        for b in self.best_of_n:
            rows.append(
                {
                    "metric": f"Best-of-{b['n']} accuracy",
                    "value": round(b["judge"], 4),
                    "baseline": round(b["random"], 4),
                    "note": f"pass@{b['n']} {b['pass']:.3f} (ceiling); baseline: random pick",
                }
            )
        if self.pairwise:
            p = self.pairwise
            rows.append(
                {
                    "metric": "pairwise accuracy",
                    "value": round(p["accuracy"], 4),
                    "baseline": round(_reference_baseline(p), 4),
                    "note": "vs the reference, blind; baseline: always the reference "
                    f"(majority verdict {p['majority_baseline']:.3f})",
                }
            )
            rows.append(
                {
                    "metric": "position consistency",
                    "value": round(p["position_consistency"], 4),
                    "baseline": None,
                    "note": "both orders agree",
                }
            )
        return rows

    def gate(self) -> str | None:
        """Why a run must not train on this judge, or None when it may: its grades must beat always
        answering the commonest grade, and its pairwise verdicts always preferring the reference, on the
        held-out labels. A judge that loses to a constant adds noise to the reward, not signal."""
        misses = []
        if self.accuracy <= self.majority_baseline:
            misses.append(
                f"grade accuracy {self.accuracy:.2f} <= majority grade {self.majority_baseline:.2f}"
            )
        if self.pairwise and self.pairwise["accuracy"] <= _reference_baseline(self.pairwise):
            misses.append(
                f"pairwise accuracy {self.pairwise['accuracy']:.2f} <= always the reference "
                f"{_reference_baseline(self.pairwise):.2f}"
            )
        return "; ".join(misses) or None


def _reference_baseline(pairwise: dict[str, float]) -> float:
    """Accuracy of always preferring the reference."""
    return pairwise["reference_baseline"]


def best_of_n(
    grades_by_prompt: dict[str, list[tuple[int, float | None]]], ns: Sequence[int], draws: int, seed: int
) -> list[dict[str, float]]:
    """Per N: mean correctness of the judge's pick, of any (pass@N) and of a random pick, over draws."""
    rng = random.Random(seed)
    out = []
    for n in ns:
        judge, ceiling, floor, used = [], [], [], 0
        for pool in grades_by_prompt.values():
            if len(pool) < n:
                continue
            used += 1
            for _ in range(draws):
                pick = rng.sample(pool, n)
                correct = [label >= CORRECT for label, _ in pick]
                scores = [s if s is not None else -1.0 for _, s in pick]
                best = max(scores)
                chosen = rng.choice([i for i, s in enumerate(scores) if s == best])
                judge.append(correct[chosen])
                ceiling.append(any(correct))
                floor.append(float(np.mean(correct)))
        if used:
            out.append(
                {
                    "n": n,
                    "judge": float(np.mean(judge)),
                    "pass": float(np.mean(ceiling)),
                    "random": float(np.mean(floor)),
                    "prompts": used,
                }
            )
    return out


def evaluate_judge(
    url: str,
    rows: Sequence[dict[str, Any]],
    *,
    model: str = "default",
    k: int = 1,
    pairwise: bool = True,
    ns: Sequence[int] = NS,
    draws: int = 20,
    seed: int = 0,
    rejected: int = 0,
    max_tokens: int | None = None,
) -> JudgeEval:
    """Grade every labelled response with `genrm-grade` at ``url`` and compute the report.
    ``max_tokens`` per judgment: None takes ``M1_GENRM_MAX_TOKENS`` or the judges' default.
    An endpoint that failed every judgment is an `EndpointError` with the first one's message."""
    judge = GradeJudge(url=url, model=model, k=k, max_tokens=max_tokens)
    items = [{"prompt": r["question"], "reference": r["reference"], "response": r["response"]} for r in rows]
    rewards = judge.verify(items)
    if rewards and all("judge endpoint failed" in r.details.get("error", "") for r in rewards):
        raise EndpointError(rewards[0].details["error"])
    predicted = [None if "error" in r.details else r.details["grade"] for r in rewards]
    labels = [int(r["grade"]) for r in rows]
    confusion: dict[int, Counter] = defaultdict(Counter)
    for t, p in zip(labels, predicted, strict=True):
        confusion[t]["fail" if p is None else str(round(p))] += 1
    hits = [p is not None and round(p) == t for t, p in zip(labels, predicted, strict=True)]
    scored = [(t, p) for t, p in zip(labels, predicted, strict=True) if p is not None]
    rho = rank_correlation(*zip(*scored, strict=True)) if scored else 0.0
    by_domain: dict[str, list[bool]] = defaultdict(list)
    for r, h in zip(rows, hits, strict=True):
        by_domain[r.get("domain", "all")].append(h)
    pools: dict[str, list[tuple[int, float | None]]] = defaultdict(list)
    for r, t, p in zip(rows, labels, predicted, strict=True):
        pools[r["prompt_id"]].append((t, p))
    result = JudgeEval(
        n=len(rows),
        accuracy=float(np.mean(hits)),
        majority_baseline=Counter(labels).most_common(1)[0][1] / len(labels),
        spearman=rho,
        failed=sum(p is None for p in predicted),
        confusion={t: dict(c) for t, c in sorted(confusion.items())},
        best_of_n=best_of_n(pools, ns, draws, seed),
        rejected=rejected,
        per_domain={d: float(np.mean(h)) for d, h in by_domain.items()},
    )
    if pairwise:
        result.pairwise = _pairwise(url, model, rows, max_tokens)
    return result


def _pairwise(
    url: str, model: str, rows: Sequence[dict[str, Any]], max_tokens: int | None = None
) -> dict[str, float] | None:
    """Each response against its prompt's reference response (perturbation "reference"), blind.

    The sign, from the response's point of view: the labels' is sign(grade of the response - grade of
    the reference), +1 the response is better, -1 the reference, 0 equal grades; the judge's is the sign of
    `compare`'s score with the response as the first text (both orders, combined as verifiers/genrm/pair.py
    says: orders that disagree make a tie). ``accuracy`` is the share of pairs whose signs are equal, over
    every pair: a tie verdict is right on equal grades only, and a failed judgment (no order parsed) is
    wrong. ``reference_baseline`` is the accuracy of always answering -1, ``majority_baseline`` of always
    answering the commonest sign; ``position_consistency`` is over the pairs judged in both orders."""
    refs = {r["prompt_id"]: r for r in rows if r.get("perturbation") == "reference"}
    triples, truth = [], []
    for r in rows:
        ref = refs.get(r["prompt_id"])
        if ref is None or r is ref:
            continue
        item = json.loads(ref["item"]) if isinstance(ref.get("item"), str) else ref.get("item") or {}
        reference_text = (
            f"<answer>{ref['reference']}</answer>"
            if r.get("domain") == "logic"
            else item.get("reference", ref["response"])
        )
        triples.append((r["question"], r["response"], reference_text))
        truth.append(int(np.sign(r["grade"] - ref["grade"])))
    if not triples:
        return None
    compared = compare(JudgeOptions.resolve(url=url, model=model, max_tokens=max_tokens), triples)
    signs = [None if c.score is None else int(np.sign(c.score)) for c in compared]
    consistent = [c.consistent for c in compared if c.consistent is not None]
    return {
        "n": len(triples),
        "accuracy": float(np.mean([s == t for s, t in zip(signs, truth, strict=True)])),
        "majority_baseline": Counter(truth).most_common(1)[0][1] / len(truth),
        "reference_baseline": sum(t < 0 for t in truth) / len(truth),  # always "the reference is better"
        "position_consistency": float(np.mean(consistent)) if consistent else float("nan"),
        "failed": sum(s is None for s in signs),
    }
