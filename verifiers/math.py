r"""Math verifier: extract the final answer from a long chain of thought, decide equivalence with
math-verify, and combine correctness with a format reward, as in the M1 paper.

Reward, always in [0, 1]: 0 unless the answer is correct; a correct answer scores 1 in the required
format (``\boxed{}`` after well-formed reasoning tags) and ``1 - format_weight`` otherwise (a "the
answer is ..." phrase). So a box around a wrong answer earns nothing and reward > 0 means correct.
Rules that keep the reward from being gamed:

- hedging: every distinct final answer (each ``\boxed{}`` after the reasoning, else each "the answer
  is" phrase, and each side of a ``\lor``/``\vee`` inside one) must equal the reference. Repeating the
  same answer, also in another form (``\boxed{42}`` and ``\boxed{42.0}``), counts as one answer;
  ``\boxed{41} or \boxed{42}`` scores 0, with the reason in ``details["rejected"]``. Without a
  ``</think>`` the whole response is the answer section, so boxes in its reasoning count too;
- the last-line fallback (a bare final line taken as the answer) is off unless ``last_line_fallback``;
- answers and references are compared after Unicode normalization (`verifiers.format.normalize_unicode`:
  NFKC, so ``\boxed{４２}`` is 42);
- with ``require_think``, a response without a closed ``<think>`` block scores 0: its answer is not read.

math-verify (LaTeX -> SymPy, then numeric, symbolic, set/interval and relation comparison) is the
source of truth. It costs milliseconds to seconds per item, and an RL batch holds G responses per prompt
that mostly repeat a few answers, so `MathVerifier` puts three things in front of it, none of which may
change a verdict (`m1 bench verify` checks that on every item):

- fast paths, decided exactly as math-verify would decide them and only where that is certain:
  identical answers, answers that differ only in layout (``\left(``, spaces around operators,
  ``\dfrac``), plain integers, decimals and integer fractions, and (`verifiers.math_fast`) radicals,
  percentages, answers with units, and sets and intervals of integers;
- a cache of verdicts per (reference, answer) pair, and of parsed references inside each worker;
- a process pool for the rest (math-verify is pure Python and CPU-bound; threads would not help, and
  timeouts, which are signals (`verifiers.deadline`), only work in a process's main thread).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from fractions import Fraction
from functools import lru_cache
from multiprocessing import get_context
from typing import Any

from cachetools import LRUCache
from math_verify import parse, verify
from math_verify.errors import TimeoutException

from verifiers.base import Reward
from verifiers.deadline import deadline
from verifiers.format import extract_answer, format_ok, last_boxed, normalize_unicode, think_ok
from verifiers.math_fast import structured_verdict

Verdict = tuple[bool, str | None]  # (equivalent, error such as a timeout)

# Layout-only LaTeX: sizing commands, thin spaces, and spaces that do not separate two word characters
# ("x + 1" == "x+1", but "1 2" and "a b" keep theirs).
_LAYOUT = re.compile(
    r"\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\[,;:!](?![a-zA-Z])|\\displaystyle|(?<!\w)\s+|\s+(?!\w)"
)
_INT = r"(?:0|[1-9]\d*)"
_PLAIN_NUMBER = re.compile(rf"-?{_INT}(?:\.\d+)?")
_FRACTION = re.compile(rf"(-?)(?:\\[dt]?frac\{{({_INT})\}}\{{({_INT})\}}|({_INT})/({_INT}))")
_MAX_DIGITS = 12
# math-verify compares floats after rounding to 6 decimals: answers further apart than this can never
# round to the same value, answers closer than this (but not equal) are left to math-verify.
_SURELY_DIFFERENT = Fraction(2, 10**6)
# "41 \lor 42": math-verify keeps the last side of a relation, so each side is an answer of its own
_OR = re.compile(r"\\(?:lor|vee)(?![a-zA-Z])")
_MAX_ANSWERS = 4  # more distinct answers than this are rejected without being compared
_EXCERPT = 200  # characters of an answer kept in a reward's details


def _excerpt(answer: str) -> str:
    return answer if len(answer) <= _EXCERPT else answer[:_EXCERPT] + "..."


def wrap(answer: str) -> str:
    """The form both the baseline and the verifier hand to math-verify."""
    return f"\\boxed{{{answer}}}"


def reference_answer(reference: str) -> str:
    """A reference may be a bare answer or a worked solution ending in ``\\boxed{}``."""
    boxed = last_boxed(reference)
    text = boxed if boxed is not None else reference
    return text.strip().strip("$").strip()


def distinct_answers(answers: Sequence[str], gold: str) -> list[str]:
    """The answers to compare with `gold`: each side of a ``\\lor`` (unless the reference itself has
    one) as its own answer, layout-only variants of one answer once, in order of appearance."""
    seen: dict[str, str] = {}
    split = _OR.search(gold) is None
    for answer in dict.fromkeys(answers):  # the same string once: a megabyte of \\boxed{1} is one answer
        sides = _OR.split(answer) if split else [answer]
        for side in (s.strip() for s in sides):
            if side:
                seen.setdefault(layout_normal(side) or side, side)
    return list(seen.values())


def math_verify_equal(gold: str, answer: str, timeout_s: int = 5) -> bool:
    """Plain math-verify on one pair: the baseline of `m1 bench verify` and the definition of a verdict."""
    return verify(
        parse(wrap(gold), parsing_timeout=timeout_s),
        parse(wrap(answer), parsing_timeout=timeout_s),
        timeout_seconds=timeout_s,
    )


def layout_normal(answer: str) -> str | None:
    """`answer` without layout-only LaTeX, or None where that could change its meaning (``\\text``
    keeps its spaces; a command such as ``\\pi x`` needs its space)."""
    if "\\text" in answer or "\\mbox" in answer:
        return None
    text = _LAYOUT.sub("", answer.strip())
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return text if text and not re.search(r"\\[a-zA-Z]+\s", text) else None


def _plain_number(text: str) -> Fraction | None:
    """An integer, decimal or fraction of integers written plainly (``-3``, ``2.50``, ``\\frac{7}{2}``,
    ``7/2``), else None."""
    if sum(ch.isdigit() for ch in text) > _MAX_DIGITS:
        return None
    if _PLAIN_NUMBER.fullmatch(text):
        return Fraction(text)
    match = _FRACTION.fullmatch(text)
    if match is None:
        return None
    sign, num, den = match.group(1), match.group(2) or match.group(4), match.group(3) or match.group(5)
    if int(den) == 0:
        return None
    return Fraction(int(num), int(den)) * (-1 if sign else 1)


def fast_verdict(gold: str, answer: str) -> bool | None:
    """math-verify's verdict where it can be known without parsing, else None.

    Identical strings parse to identical results and math-verify's string comparison accepts them;
    strings that differ only in layout parse to the same expression.
    Plain numbers: integers and fractions of integers compare exactly; when a decimal is involved
    math-verify rounds both to 6 places (15 significant digits), decided here for magnitudes below 1e6
    whenever the two are equal or surely further apart than the rounding.
    """
    if answer.strip() == gold.strip() and answer.strip():
        return True
    if (g := layout_normal(gold)) is not None and g == layout_normal(answer):
        return True
    g, a = _plain_number(gold.strip()), _plain_number(answer.strip())
    if g is None or a is None:
        return structured_verdict(gold, answer)
    if g == a:
        return True
    if "." not in gold and "." not in answer:
        return False  # no float on either side: math-verify compares the rationals exactly
    if max(abs(g), abs(a)) < 10**6 and abs(g - a) >= _SURELY_DIFFERENT:
        return False
    return None


@lru_cache(maxsize=4096)
def _parse_reference(gold: str) -> list:
    # Each of a prompt's G responses is compared with the same reference: parse it once per worker.
    return parse(wrap(gold), parsing_timeout=None)


def slow_verdict(pair: tuple[str, str], timeout_s: int = 5) -> Verdict:
    """math-verify on one pair within ``timeout_s`` in all (`verifiers.deadline`: math-verify's own
    single alarm can be lost, which leaves a pathological answer unbounded), the reference parse
    cached; runs in the main thread, here or in pool workers."""
    gold, answer = pair
    try:
        with deadline(timeout_s) as expiry:
            equal = verify(
                _parse_reference(gold), parse(wrap(answer), parsing_timeout=None), timeout_seconds=None
            )
    except TimeoutException:
        return False, f"math-verify timed out (>{timeout_s}s)"
    except Exception as exc:  # noqa: BLE001 - math-verify itself returns False here; keep the reason
        return False, f"math-verify failed: {type(exc).__name__}: {exc}"
    # math-verify catches a timeout inside parse and verify and answers False
    return (False, f"math-verify timed out (>{timeout_s}s)") if expiry.fired else (equal, None)


def _slow_chunk(pairs: list[tuple[str, str]], timeout_s: int) -> list[Verdict]:
    return [slow_verdict(p, timeout_s) for p in pairs]


class MathVerifier:
    """Reward in [0, 1]: 0 unless correct; correct scores 1 when formatted, ``1 - format_weight`` when
    not (see the module docstring for the rules against gaming).

    Items need ``response`` and ``reference`` (a bare answer or a solution with ``\\boxed{}``).
    ``timeout_s`` bounds math-verify's work on each (reference, answer) pair; ``workers`` > 0 verifies in a process
    pool of that size (0: in this process). ``last_line_fallback`` also reads an unmarked final line
    (for evaluating models that do not box, never for RL rewards); an answer longer than
    ``max_answer_chars`` is wrong without being parsed.
    """

    name = "math"
    version = "2.0.0"

    def __init__(
        self,
        format_weight: float = 0.1,
        require_think: bool = False,
        timeout_s: int = 5,
        workers: int = 0,
        cache_size: int = 100_000,
        last_line_fallback: bool = False,
        max_answer_chars: int = 1000,
    ) -> None:
        if not 0 <= format_weight <= 1:
            raise ValueError("format_weight must be in [0, 1]")
        if max_answer_chars < 1:
            raise ValueError("max_answer_chars must be >= 1")
        self.format_weight = format_weight
        self.require_think = require_think
        self.timeout_s = max(1, int(math.ceil(timeout_s)))
        self.workers = workers
        self.last_line_fallback = last_line_fallback
        self.max_answer_chars = max_answer_chars
        self._cache: LRUCache[tuple[str, str], Verdict] = LRUCache(cache_size)
        self._pool: Executor | None = None

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        prepared = [self._prepare(item) for item in items]
        pairs = {(p[0], a) for p in prepared if not isinstance(p, Reward) for a in p[1]}
        verdicts = {pair: self._cache[pair] for pair in pairs if pair in self._cache}
        verdicts |= self._resolve(sorted(pairs - verdicts.keys()))
        return [p if isinstance(p, Reward) else self._score(*p, verdicts) for p in prepared]

    def _score(
        self,
        gold: str,
        answers: list[str],
        details: dict[str, Any],
        verdicts: Mapping[tuple[str, str], Verdict],
    ) -> Reward:
        found = [verdicts[(gold, a)] for a in answers]
        correct = bool(found) and all(equal for equal, _ in found)
        details["correct"] = correct
        if error := next((e for _, e in found if e), None):
            details["error"] = error
        if len(answers) > 1 and not correct:
            details["rejected"] = (
                f"{len(answers)} final answers ({' | '.join(map(_excerpt, answers))}), not all equal to the "
                "reference: a hedged response scores 0"
            )
        if not correct:
            return Reward(0.0, details)
        return Reward(1.0 if details["format_ok"] else 1.0 - self.format_weight, details)

    def _prepare(self, item: Mapping[str, Any]) -> tuple[str, list[str], dict[str, Any]] | Reward:
        """(reference, the distinct answers to compare with it, details), or the item's final reward
        (an error, or a response rejected before any comparison)."""
        response, reference = item.get("response"), item.get("reference")
        if not isinstance(response, str):
            return Reward.error("item has no text `response`")
        if reference is None or not str(reference).strip():
            return Reward.error("item has no `reference` answer")
        response = normalize_unicode(response)
        gold = reference_answer(normalize_unicode(str(reference)))
        ok, why = format_ok(response, require_think=self.require_think)
        details: dict[str, Any] = {"reference": gold, "format_ok": ok, "format": why}
        if self.require_think and not think_ok(response, require_think=True)[0]:
            details.update(answer=None, extracted_by=None, correct=False)
            details["rejected"] = f"{why}: require_think reads no answer outside a closed <think> block"
            return Reward(0.0, details)
        extraction = extract_answer(response, last_line=self.last_line_fallback)
        details["answer"] = _excerpt(extraction.text) if extraction else None
        details["extracted_by"] = extraction.method if extraction else None
        answers = distinct_answers(extraction.answers, gold) if extraction else []
        if len(answers) > 1:
            details["answers"] = [_excerpt(a) for a in answers[: _MAX_ANSWERS + 1]]
        if len(answers) > _MAX_ANSWERS:
            details["correct"] = False
            details["rejected"] = f"{len(answers)} different final answers: a hedged response scores 0"
            return Reward(0.0, details)
        if (longest := max((len(a) for a in answers), default=0)) > self.max_answer_chars:
            details["correct"] = False
            details["rejected"] = (
                f"an answer of {longest} characters (max_answer_chars={self.max_answer_chars})"
            )
            return Reward(0.0, details)
        return gold, answers, details

    def _resolve(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], Verdict]:
        """Verdicts of pairs not in the cache: fast paths here, math-verify for the rest."""
        verdicts: dict[tuple[str, str], Verdict] = {}
        slow: list[tuple[str, str]] = []
        for gold, answer in pairs:
            quick = fast_verdict(gold, answer)
            if quick is None:
                slow.append((gold, answer))
            else:
                verdicts[(gold, answer)] = (quick, None)
        verdicts |= zip(slow, self._slow(slow), strict=True)
        self._cache.update(verdicts)
        return verdicts

    def _slow(self, pairs: list[tuple[str, str]]) -> list[Verdict]:
        if self.workers <= 0 or len(pairs) < 2 * self.workers:
            return _slow_chunk(pairs, self.timeout_s)
        # One task per reference: its pairs share one parse of it, which splitting them across workers
        # would repeat; many references per batch keep the workers evenly loaded.
        by_gold: dict[str, list[tuple[str, str]]] = {}
        for pair in pairs:
            by_gold.setdefault(pair[0], []).append(pair)
        chunks = sorted(by_gold.values(), key=len, reverse=True)
        try:
            results = list(self._executor().map(_slow_chunk, chunks, [self.timeout_s] * len(chunks)))
        except BrokenProcessPool:  # a worker died (killed from outside): start afresh next batch
            self.close()
            return _slow_chunk(pairs, self.timeout_s)
        verdicts = {
            pair: v
            for chunk, result in zip(chunks, results, strict=True)
            for pair, v in zip(chunk, result, strict=True)
        }
        return [verdicts[pair] for pair in pairs]

    def _executor(self) -> Executor:
        if self._pool is None:
            # fork: workers inherit the already-imported math-verify and SymPy instead of re-importing
            self._pool = ProcessPoolExecutor(self.workers, mp_context=get_context("fork"))
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
