"""How good is a judge? The checks of M1 section 4.2.1 on labelled responses, measured where no constant
can do well (shared/DESIGN.md, "Judging judges").

1. The five-grade judge against the labels: accuracy of its (rounded) grade beside the majority grade
   (always answering the commonest grade), balanced accuracy (the mean over true grades of each grade's
   recall: any constant scores 1/K there, whatever the label mix), Spearman rank correlation, the grade
   confusion matrix, and its length slope: the least-squares fit grade = a + b * true grade + c * log2(length
   of the response), ``c`` the grade per doubling of length at equal true grade.
2. Best-of-N: per prompt, N responses drawn from its labelled pool; the judge's favourite (highest grade,
   ties broken at random) is correct or not (a correct final answer: grade >= 4). Averaged over draws and
   prompts, against pass@N (any of the N correct: the ceiling a perfect judge reaches) and a random pick
   (the floor), for N = 1, 2, 4, 8.
3. With ``pairwise``, the blind pairwise judge (the curricula's `genrm`) on the balanced pairwise set of
   verifiers/genrm/balanced.py, built from the rows of ``pair_domains`` (the domains a pairwise judge scores
   in the curricula: general; every row when none is of those): every pair in both orders, balanced
   accuracy beside the trivial judges' (always the reference, always the first shown, the longer text
   wins, a random verdict), position consistency and the length slope; judged as `genrm-pair` judges
   with the same ``pair_method`` (two texts in one prompt, or each graded alone: verifiers/genrm/pair.py).

Rows are labelled responses, ``prompt_id, question, reference, response, grade`` each (the labels file of
`m1 genrm eval`, read by flows/genrm/files.py; `m1 genrm train-judge` writes one for its held-out prompts).
`JudgeEval.gate` is what a run asks before it trains on a judge: the balanced measures only, of the judge
the curriculum uses (the five-grade measures on the general items' responses for `genrm-grade`, the
balanced pairwise set for `genrm`/`genrm-pair`).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from verifiers.endpoint import EndpointError
from verifiers.genrm.balanced import (
    balanced_accuracy,
    balanced_pairs,
    best_trivial,
    measure_pairs,
    trivial_baselines,
)
from verifiers.genrm.grade import GradeJudge
from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.pair import compare

NS = (1, 2, 4, 8)
CORRECT = 4  # grades 4 and 5: a correct final answer
PAIR_DOMAINS = ("general",)  # the domains a pairwise judge scores in the curricula
JUDGED_DOMAIN = "general"  # the domain the curricula's judges score: the gate reads its measures
# verifier -> the measures it is gated on
KINDS = {"genrm-grade": "grade", "genrm-pair": "pair", "genrm": "pair"}
MAX_PAIRS_PER_CLASS = 48  # 144 pairs, 288 judgments: a 95% interval of about +-0.08 on balanced accuracy
GATE_MARGIN = 0.10


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation; 0 when either side is constant or shorter than 3 (no evidence)."""
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(spearmanr(x, y).statistic)


def grade_length_slope(predicted: Sequence[float], truth: Sequence[int], lengths: Sequence[int]) -> float:
    """``c`` of the least-squares fit predicted = a + b * truth + c * log2(length); 0 without spread."""
    logs = [math.log2(max(n, 1)) for n in lengths]
    if len(predicted) < 4 or np.std(logs) == 0:
        return 0.0
    x = np.column_stack([np.ones(len(logs)), np.asarray(truth, float), np.asarray(logs)])
    coef, *_ = np.linalg.lstsq(x, np.asarray(predicted, float), rcond=None)
    return float(coef[2])


@dataclass
class JudgeEval:
    n: int
    accuracy: float
    majority_baseline: float
    spearman: float
    failed: int  # judgments that ended in an error (not counted as any grade)
    confusion: dict[int, dict[str, int]]  # true grade -> predicted grade ("fail") -> count
    best_of_n: list[dict[str, float]]  # per N: judge, pass@N, random, prompts
    pairwise: dict[str, Any] | None = None  # the balanced pairwise set's measures (see `_pairwise`)
    rejected: int = 0
    per_domain: dict[str, float] = field(default_factory=dict)
    balanced_accuracy: float = float("nan")  # mean recall over the true grades
    length_slope: float = 0.0  # grade per doubling of the response's length, at equal true grade
    # per domain: n, accuracy, majority (its commonest grade's share), balanced (with its 95% interval
    # low/high) and constant (any constant grade's balanced accuracy, 1/K)
    grade_by_domain: dict[str, dict[str, float]] = field(default_factory=dict)
    grade_views: str = "reference"  # what each grade was against (`JudgeOptions.grade_views`)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgeEval:
        """From `dataclasses.asdict` output read back from JSON (grade keys become ints again)."""
        confusion = {int(t): dict(c) for t, c in d["confusion"].items()}
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**(known | {"confusion": confusion}))

    @property
    def constant_grade_baseline(self) -> float:
        """Balanced accuracy of any constant grade: 1/K for K true grades."""
        return 1 / max(len(self.confusion), 1)

    def best_of(self, n: int) -> dict[str, float] | None:
        return next((b for b in self.best_of_n if b["n"] == n), None)

    def table(self) -> list[dict[str, Any]]:
        """The headline numbers as rows (the console table, the Prefect table artifact, the report)."""
        rows: list[dict[str, Any]] = [
            _row(
                "grade accuracy",
                self.accuracy,
                self.majority_baseline,
                "baseline: always the commonest grade"
                + (
                    "; each grade the lower of two: against the reference, the question"
                    if self.grade_views == "both"
                    else ""
                ),
            ),
            _row(
                "grade balanced accuracy",
                self.balanced_accuracy,
                self.constant_grade_baseline,
                "mean recall over the true grades; baseline: any constant grade",
            ),
            _row("Spearman vs labels", self.spearman, 0.0, ""),
            _row(
                "grade length slope",
                self.length_slope,
                0.0,
                "grade per doubling of the response's length at equal true grade (0: no length bias)",
            ),
            {"metric": "failed judgments", "value": self.failed, "baseline": None, "note": f"of {self.n}"},
        ]
        for domain, acc in sorted(self.per_domain.items()):
            d = self.grade_by_domain.get(domain)
            if d is None:
                rows.append(_row(f"grade accuracy ({domain})", acc, None, ""))
                continue
            rows.append(
                _row(
                    f"grade accuracy ({domain})",
                    acc,
                    d["majority"],
                    f"{int(d['n'])} responses; baseline: its commonest grade",
                )
            )
            rows.append(
                _row(
                    f"grade balanced accuracy ({domain})",
                    d["balanced"],
                    d["constant"],
                    f"95% interval {d['low']:.3f}-{d['high']:.3f}; baseline: any constant grade",
                )
            )
        for b in self.best_of_n:
            halfway = b["random"] + (b["pass"] - b["random"]) / 2
            rows.append(
                _row(
                    f"Best-of-{b['n']} accuracy",
                    b["judge"],
                    b["random"],
                    f"pass@{b['n']} {b['pass']:.3f} (ceiling), halfway {halfway:.3f}; baseline: random pick",
                )
            )
        if self.pairwise:
            rows += pairwise_rows(self.pairwise)
        return rows

    def gate(
        self, margin: float = GATE_MARGIN, judge: str = "both", domain: str = JUDGED_DOMAIN
    ) -> str | None:
        """Why a run must not train on this judge as ``judge`` ("grade": the five-grade `genrm-grade`,
        "pair": the pairwise `genrm-pair`, "both"), or None when it may. On balanced measures only: the
        five-grade judge's balanced accuracy on ``domain``'s responses (all responses when it has none)
        ``margin`` above any constant grade's, with its 95% interval's low end above that too; the pairwise
        judge's balanced accuracy ``margin`` above the best trivial judge's on the same pairs, its interval's
        low end above that judge. A judge that does not beat what reads nothing adds noise (or its biases)
        to the reward, not signal."""
        if judge not in ("grade", "pair", "both"):
            raise ValueError(f"judge must be grade, pair or both, not {judge!r}")
        misses = []
        if judge in ("grade", "both"):
            misses += self._grade_misses(margin, domain)
        if judge in ("pair", "both") and self.pairwise:
            p = self.pairwise
            name, best = p["best_trivial"], p["best_trivial_accuracy"]
            if not (p["balanced_accuracy"] >= best + margin and p["balanced_low"] > best):
                misses.append(
                    f"pairwise balanced accuracy {p['balanced_accuracy']:.2f} (95% interval "
                    f"{p['balanced_low']:.2f}-{p['balanced_high']:.2f}) not {margin:.2f} above {name!r} "
                    f"{best:.2f} on the same {p['n']} pairs"
                )
        return "; ".join(misses) or None

    def _grade_misses(self, margin: float, domain: str) -> list[str]:
        d = self.grade_by_domain.get(domain)
        if d is None:  # an evaluation without that domain (or from before per-domain measures): all of it
            if self.balanced_accuracy >= self.constant_grade_baseline + margin:
                return []
            return [
                f"grade balanced accuracy {self.balanced_accuracy:.2f} < a constant grade's "
                f"{self.constant_grade_baseline:.2f} + {margin:.2f}"
            ]
        if d["balanced"] >= d["constant"] + margin and d["low"] > d["constant"]:
            return []
        return [
            f"grade balanced accuracy on {domain} {d['balanced']:.2f} (95% interval {d['low']:.2f}-"
            f"{d['high']:.2f}) not {margin:.2f} above a constant grade's {d['constant']:.2f} "
            f"({int(d['n'])} responses)"
        ]

    def verdicts(self, margin: float = GATE_MARGIN) -> dict[str, str | None]:
        """The gate for each way a curriculum can use the judge: verifier name -> why not, or None."""
        return {name: self.gate(margin, KINDS[name]) for name in ("genrm-grade", "genrm-pair")}


def _row(metric: str, value: float, baseline: float | None, note: str) -> dict[str, Any]:
    return {
        "metric": metric,
        "value": round(value, 4),
        "baseline": None if baseline is None else round(baseline, 4),
        "note": note,
    }


def pairwise_rows(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The pairwise judge's rows: balanced accuracy beside every trivial judge, consistency, length slope."""
    classes = ", ".join(f"{v} {k}" for k, v in p["classes"].items())
    base = p["baselines"]
    rows = [
        _row(
            "pairwise balanced accuracy",
            p["balanced_accuracy"],
            p["best_trivial_accuracy"],
            f"{p['n']} pairs ({classes}; the worse text longer in half the decisive ones), "
            f"{p.get('method', 'pairwise')}, both orders; "
            f"95% interval {p['balanced_low']:.3f}-{p['balanced_high']:.3f}; "
            f"baseline: the best trivial judge ({p['best_trivial']})",
        )
    ]
    rows += [
        _row(f"  trivial: {name}", b["balanced_accuracy"], None, "balanced accuracy on the same pairs")
        for name, b in base.items()
    ]
    consistency = (
        "pointwise: each text graded alone, so both orders are one judgment (1 by construction)"
        if p.get("method") == "pointwise"
        else f"both orders agree; the first-shown text wins {p['first_shown_wins']:.0%} of single-order verdicts"
    )
    rows += [
        _row(
            "position consistency",
            p["position_consistency"],
            base["a random verdict"]["position_consistency"],
            f"{consistency}; baseline: a random verdict",
        ),
        _row(
            "pairwise length slope",
            p["length_slope"],
            base["the longer text wins"]["length_slope"],
            "score per doubling of the response's length at equal quality (0: no length bias); "
            "baseline: the longer text wins",
        ),
        {
            "metric": "failed pairwise judgments",
            "value": p["failed"],
            "baseline": None,
            "note": f"of {p['n']}",
        },
    ]
    return rows


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
    pair_domains: Sequence[str] | None = PAIR_DOMAINS,
    max_pairs_per_class: int | None = MAX_PAIRS_PER_CLASS,
    pair_method: str | None = None,
    grade_views: str | None = None,
) -> JudgeEval:
    """Grade every labelled response with `genrm-grade` at ``url`` and compute the report; with
    ``pairwise``, also judge the balanced pairwise set built from the rows of ``pair_domains``, the way
    `genrm-pair` judges a pair (``pair_method``; None: ``M1_GENRM_PAIR_METHOD`` or pairwise), each grade
    against what ``grade_views`` says (None: ``M1_GENRM_GRADE_VIEWS`` or the reference).
    ``max_tokens`` per judgment: None takes ``M1_GENRM_MAX_TOKENS`` or the judges' default.
    An endpoint that failed every judgment is an `EndpointError` with the first one's message."""
    # written grades, whatever M1_GENRM_GRADE_SCORE says: the labels and the confusion are whole grades
    judge = GradeJudge(
        url=url, model=model, k=k, max_tokens=max_tokens, grade_views=grade_views, grade_score="sampled"
    )
    items = [{"prompt": r["question"], "reference": r["reference"], "response": r["response"]} for r in rows]
    rewards = judge.verify(items)
    if rewards and all("judge endpoint failed" in r.details.get("error", "") for r in rewards):
        raise EndpointError(rewards[0].details["error"])
    predicted = [None if "error" in r.details else r.details["grade"] for r in rewards]
    labels = [int(r["grade"]) for r in rows]
    confusion: dict[int, Counter] = defaultdict(Counter)
    for t, p in zip(labels, predicted, strict=True):
        confusion[t]["fail" if p is None else str(round(p))] += 1
    rounded = [None if p is None else round(p) for p in predicted]
    hits = [p == t for t, p in zip(labels, rounded, strict=True)]
    scored = [
        (t, p, len(r["response"])) for t, p, r in zip(labels, predicted, rows, strict=True) if p is not None
    ]
    truth_s, pred_s, len_s = (list(x) for x in zip(*scored, strict=True)) if scored else ([], [], [])
    pools: dict[str, list[tuple[int, float | None]]] = defaultdict(list)
    for r, t, p in zip(rows, labels, predicted, strict=True):
        pools[r["prompt_id"]].append((t, p))
    by_domain: dict[str, list[int]] = defaultdict(list)  # domain -> its rows
    for i, r in enumerate(rows):
        by_domain[r.get("domain", "all")].append(i)
    grade_by_domain = {}
    for domain, idx in sorted(by_domain.items()):
        truth, guess = [labels[i] for i in idx], [rounded[i] for i in idx]
        bal, lo, hi = balanced_accuracy(truth, guess)
        grade_by_domain[domain] = {
            "n": len(idx),
            "accuracy": float(np.mean([hits[i] for i in idx])),
            "majority": Counter(truth).most_common(1)[0][1] / len(idx),
            "balanced": bal,
            "low": lo,
            "high": hi,
            "constant": 1 / len(set(truth)),
        }
    result = JudgeEval(
        n=len(rows),
        accuracy=float(np.mean(hits)),
        majority_baseline=Counter(labels).most_common(1)[0][1] / len(labels),
        spearman=rank_correlation(truth_s, pred_s) if scored else 0.0,
        failed=sum(p is None for p in predicted),
        confusion={t: dict(c) for t, c in sorted(confusion.items())},
        best_of_n=best_of_n(pools, ns, draws, seed),
        rejected=rejected,
        per_domain={d: m["accuracy"] for d, m in grade_by_domain.items()},
        balanced_accuracy=balanced_accuracy(labels, rounded)[0],
        length_slope=grade_length_slope(pred_s, truth_s, len_s),
        grade_by_domain=grade_by_domain,
        grade_views=judge.opts.grade_views,
    )
    if pairwise:
        opts = JudgeOptions.resolve(
            url=url, model=model, max_tokens=max_tokens, pair_method=pair_method, grade_score="sampled"
        )
        result.pairwise = _pairwise(opts, rows, pair_domains, max_pairs_per_class, seed)
    return result


def _pairwise(
    opts: JudgeOptions,
    rows: Sequence[dict[str, Any]],
    domains: Sequence[str] | None,
    max_per_class: int | None,
    seed: int,
) -> dict[str, Any] | None:
    """The pairwise judge on the balanced set (verifiers/genrm/balanced.py): its measures, the trivial
    judges' on the same pairs, and the best of those. None when the rows make no pair."""
    if domains is not None and not any(r.get("domain", "all") in domains for r in rows):
        domains = None  # a labels file of other domains (or none): pair what it has
    pairs = balanced_pairs(rows, seed=seed, domains=domains, max_per_class=max_per_class)
    if not pairs:
        return None
    compared = compare(opts, [(p.question, p.response, p.reference) for p in pairs])
    measures = measure_pairs(pairs, ([c.forward for c in compared], [c.backward for c in compared]))
    baselines = trivial_baselines(pairs)
    name, best = best_trivial(baselines)
    return measures | {
        "method": opts.pair_method,
        "domains": sorted({p.domain for p in pairs}),
        "baselines": baselines,
        "best_trivial": name,
        "best_trivial_accuracy": best,
    }
