"""A pairwise judge measured where no constant can do well (shared/DESIGN.md, "Judging judges").

From labelled responses (several per prompt, each with its true grade: the labels file of `m1 genrm eval`)
`balanced_pairs` builds a pairwise set that no trivial judge can score well on:

- three classes in equal numbers: the text in the response's role is better ("response wins"), the text
  in the reference's role is better ("reference wins"), equal grades ("tie"). A skewed set holds mostly
  the second case (the reference is usually the best text of its prompt); M1's references are sampled
  answers picked by Swiss rounds, so a reference worse than the response is real, and here a flawed text
  sits in the reference's role as often as a flawed response does;
- a length confound on purpose: in half the decisive pairs of each of those two classes the worse text is
  the longer one (a judge that prefers length is right on half of them, wrong on the other half);
- tie pairs are two texts of equal grade and different length (a judge that prefers length is wrong).

`measure_pairs` scores per-order verdicts on that set. Each pair is judged in both orders and the orders
are combined as the pairwise judge combines them (verifiers/genrm/pair.py: a tie when they disagree). It
reports accuracy, balanced accuracy (the mean over classes of each class's recall) with a 95% interval,
position consistency (both orders agree), how often a single order's winner is the text shown first,
failed judgments, and the judge's length slope: the least-squares fit

    score = a + b * truth + c * log2(len(response) / len(reference))

over the pairs, where ``c`` is the change of the judge's score per doubling of the response's length at
equal quality (AlpacaEval's length control regresses out the same difference); 0 for a judge that reads
quality only, near 1 for "the longer text wins". `trivial_baselines` puts the same numbers beside it for
judges that read nothing: always the reference, always the first shown (the orders then disagree on every
pair: a tie), the longer text wins, and a random verdict. Any verdict drawn independently of the pair has
balanced accuracy exactly 1/K (K classes), so by construction every one of them is at or near 1/K.

Not tied to a judge: the verdicts come from `verifiers.genrm.pair.compare` at an endpoint
(`verifiers.genrm.evaluate.evaluate_judge`) or from any function of the two texts (the baselines, tests).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from verifiers.genrm.pair import combine

CLASSES = {1: "response wins", -1: "reference wins", 0: "tie"}
Verdicts = tuple[list[float | None], list[float | None]]  # (forward, backward), from the response's side


@dataclass(frozen=True)
class Pair:
    """Two texts for one question: ``response`` in the role the reward is for, ``reference`` in the other.
    ``truth`` is the sign of (grade of the response - grade of the reference)."""

    prompt_id: str
    domain: str
    question: str
    response: str
    reference: str
    truth: int
    grades: tuple[int, int]  # (response, reference)

    @property
    def log_length_ratio(self) -> float:
        return math.log2(max(len(self.response), 1) / max(len(self.reference), 1))


def _by_prompt(rows: Iterable[Mapping[str, Any]], domains: Sequence[str] | None) -> dict[str, list]:
    """The distinct responses of each prompt (the first row of a repeated text is kept)."""
    out: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in rows:
        if domains is not None and r.get("domain", "all") not in domains:
            continue
        out[str(r["prompt_id"])].setdefault(str(r["response"]), r)
    return {k: list(v.values()) for k, v in out.items()}


def _round_robin(per_prompt: list[list], n: int) -> list:
    """Up to n items taken one per prompt in turn, so that a few prompts with many pairs do not fill it."""
    out, depth = [], 0
    while len(out) < n and any(depth < len(p) for p in per_prompt):
        for p in per_prompt:
            if depth < len(p) and len(out) < n:
                out.append(p[depth])
        depth += 1
    return out


def balanced_pairs(
    rows: Iterable[Mapping[str, Any]],
    *,
    seed: int = 0,
    domains: Sequence[str] | None = None,
    max_per_class: int | None = None,
) -> list[Pair]:
    """The balanced pairwise set of the module's docstring, from labelled rows (``prompt_id, question,
    response, grade`` and optionally ``domain``), deterministic in ``seed``. ``domains``: only rows of
    these domains. At most ``max_per_class`` pairs per class (rounded down to an even number)."""
    rng = random.Random(f"balanced-pairs/{seed}")
    cells: dict[str, list[list]] = {"worse_longer": [], "worse_shorter": [], "tie": []}
    groups = _by_prompt(rows, domains)
    for pid in sorted(groups):
        per: dict[str, list] = {k: [] for k in cells}
        for x, y in combinations(groups[pid], 2):
            if len(x["response"]) == len(y["response"]):
                continue  # no length to confound, no longer text to prefer
            if x["grade"] == y["grade"]:
                per["tie"].append((x, y) if rng.random() < 0.5 else (y, x))
                continue
            better, worse = (x, y) if x["grade"] > y["grade"] else (y, x)
            longer = len(worse["response"]) > len(better["response"])
            per["worse_longer" if longer else "worse_shorter"].append((better, worse))
        for k, pairs in per.items():
            rng.shuffle(pairs)
            cells[k].append(pairs)
    order = list(range(len(groups)))
    rng.shuffle(order)
    totals = {k: sum(map(len, v)) for k, v in cells.items()}
    # m pairs from each length cell, half of each to each decisive class, and m ties: m per class; without
    # a tie of two different lengths in the rows, the two decisive classes alone
    m = min(totals["worse_longer"], totals["worse_shorter"], totals["tie"] or 10**9)
    if max_per_class is not None:
        m = min(m, max_per_class)
    m -= m % 2
    n_ties = min(m, totals["tie"])

    def pair(row_response, row_reference) -> Pair:
        g = (int(row_response["grade"]), int(row_reference["grade"]))
        return Pair(
            str(row_response["prompt_id"]),
            str(row_response.get("domain", "all")),
            str(row_response["question"]),
            str(row_response["response"]),
            str(row_reference["response"]),
            int(np.sign(g[0] - g[1])),
            g,
        )

    out: list[Pair] = []
    for cell in ("worse_longer", "worse_shorter"):
        chosen = _round_robin([cells[cell][i] for i in order], m)
        for i, (better, worse) in enumerate(chosen):  # alternate roles: half "response wins"
            out.append(pair(better, worse) if i % 2 == 0 else pair(worse, better))
    out += [pair(a, b) for a, b in _round_robin([cells["tie"][i] for i in order], n_ties)]
    rng.shuffle(out)
    return out


def _sign(x: float | None) -> int | None:
    return None if x is None else int(np.sign(x))


def length_slope(scores: Sequence[float], truth: Sequence[float], log_ratio: Sequence[float]) -> float:
    """``c`` of the least-squares fit score = a + b * truth + c * log_ratio; 0 with too few points or
    no spread in length."""
    if len(scores) < 4 or np.std(log_ratio) == 0:
        return 0.0
    x = np.column_stack([np.ones(len(scores)), np.asarray(truth, float), np.asarray(log_ratio, float)])
    coef, *_ = np.linalg.lstsq(x, np.asarray(scores, float), rcond=None)
    return float(coef[2])


def balanced_accuracy(truth: Sequence[int], predicted: Sequence[int | None]) -> tuple[float, float, float]:
    """(mean over the classes present of each class's recall, its 95% interval's low and high ends).
    A missing prediction (a failed judgment) counts as wrong."""
    recalls, variance = [], 0.0
    for c in sorted(set(truth)):
        hits = [p == c for t, p in zip(truth, predicted, strict=True) if t == c]
        r = float(np.mean(hits))
        recalls.append(r)
        variance += r * (1 - r) / len(hits)
    if not recalls:
        return float("nan"), float("nan"), float("nan")
    value = float(np.mean(recalls))
    half = 1.96 * math.sqrt(variance) / len(recalls)
    return value, max(0.0, value - half), min(1.0, value + half)


def measure_pairs(pairs: Sequence[Pair], verdicts: Verdicts) -> dict[str, Any]:
    """The measures of the module's docstring, from per-order scores (each from the response's side:
    ``forward`` with the response shown first, ``backward`` with it shown second; None: no verdict)."""
    forward, backward = verdicts
    combined = [combine(f, b) for f, b in zip(forward, backward, strict=True)]
    scores = [s for s, _ in combined]
    signs = [_sign(s) for s in scores]
    truth = [p.truth for p in pairs]
    consistent = [c for _, c in combined if c is not None]
    bal, lo, hi = balanced_accuracy(truth, signs)
    # a single order's decisive winner is the first-shown text when forward > 0 or backward < 0
    first = [f > 0 for f in forward if f] + [b < 0 for b in backward if b]
    scored = [i for i, s in enumerate(scores) if s is not None]
    per_class = {
        CLASSES[c]: float(np.mean([s == c for s, t in zip(signs, truth, strict=True) if t == c]))
        for c in sorted(set(truth), reverse=True)
    }
    return {
        "n": len(pairs),
        "classes": {CLASSES[c]: truth.count(c) for c in sorted(set(truth), reverse=True)},
        "accuracy": float(np.mean([s == t for s, t in zip(signs, truth, strict=True)])) if pairs else 0.0,
        "balanced_accuracy": bal,
        "balanced_low": lo,
        "balanced_high": hi,
        "recall": per_class,
        "position_consistency": float(np.mean(consistent)) if consistent else float("nan"),
        "first_shown_wins": float(np.mean(first)) if first else float("nan"),
        "length_slope": length_slope(
            [scores[i] for i in scored],
            [truth[i] for i in scored],
            [pairs[i].log_length_ratio for i in scored],
        ),
        "failed": sum(s is None for s in scores),
    }


def verdicts_of(pairs: Sequence[Pair], judge: Callable[[str, str, str], float | None]) -> Verdicts:
    """Per-order scores of ``judge(question, first, second)`` (+1: first wins, -1: second, 0: tie), from
    the response's side."""
    forward = [judge(p.question, p.response, p.reference) for p in pairs]
    backward = [judge(p.question, p.reference, p.response) for p in pairs]
    return forward, [None if b is None else -b for b in backward]


def _longer(question: str, first: str, second: str) -> float:
    return float(np.sign(len(first) - len(second)))


def _first(question: str, first: str, second: str) -> float:
    return 1.0


def trivial_baselines(pairs: Sequence[Pair]) -> dict[str, dict[str, Any]]:
    """The measures of judges that read nothing, on the same pairs: always the reference, always the first
    shown, the longer text wins, and a random verdict (balanced accuracy exactly 1/K for any verdict drawn
    independently of the pair; its other measures are their expectations)."""
    out = {
        "always the reference": measure_pairs(pairs, ([-1.0] * len(pairs), [-1.0] * len(pairs))),
        "always the first shown": measure_pairs(pairs, verdicts_of(pairs, _first)),
        "the longer text wins": measure_pairs(pairs, verdicts_of(pairs, _longer)),
    }
    k = len({p.truth for p in pairs}) or 1
    share = {c: sum(p.truth == c for p in pairs) / max(len(pairs), 1) for c in CLASSES}
    # uniform verdicts per order: the combined verdict is +1 or -1 with 1/9 each and a tie with 7/9
    p_combined = {1: 1 / 9, -1: 1 / 9, 0: 7 / 9}
    out["a random verdict"] = {
        "n": len(pairs),
        "accuracy": sum(share[c] * p_combined[c] for c in CLASSES),
        "balanced_accuracy": 1 / k,
        "position_consistency": 1 / 3,  # the two orders' verdicts agree (same sign or both ties)
        "first_shown_wins": 0.5,
        "length_slope": 0.0,
        "failed": 0,
    }
    return out


def best_trivial(baselines: Mapping[str, Mapping[str, Any]]) -> tuple[str, float]:
    """(name, balanced accuracy) of the trivial judge that does best."""
    name = max(baselines, key=lambda k: baselines[k]["balanced_accuracy"])
    return name, float(baselines[name]["balanced_accuracy"])
