r"""Exact verdicts for structured answers: radicals, percentages, units, integer sets and intervals, and
integer polynomials in x.

Both sides first go through math-verify's own LaTeX normalization (`normalize_latex`, the same
config math-verify applies to a ``\boxed{}`` answer: it strips units, ``\text{cm}``, fixes ``\sqrt3``).
That is a few regex passes; the expensive part of math-verify is the ANTLR parse and SymPy comparison
that follow. The normalized text is then read only when it fully matches one of a few small grammars
whose math-verify verdict is known exactly; anything else returns None and goes to math-verify.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from math import isqrt

from latex2sympy2_extended.math_normalization import normalize_latex
from math_verify.parser import LatexExtractionConfig

# math-verify normalizes a boxed match with its default config and boxed="last" (parser.extract_latex)
_CONFIG = replace(LatexExtractionConfig().normalization_config, boxed="last")
_INT = r"-?(?:0|[1-9]\d{0,5})"  # |n| < 10**6 keeps every comparison below far from float rounding
_INTEGER = re.compile(_INT)
_RADICAL = re.compile(rf"(?:({_INT}|-)\s*)?\\sqrt\{{\s*([1-9]\d{{0,5}})\s*\}}")
_PERCENT = re.compile(rf"({_INT})\s*\\%")
_SET = re.compile(r"\\\{(.*)\\\}")
_INTERVAL = re.compile(rf"([\[(])\s*({_INT})\s*,\s*({_INT})\s*([\])])")
_LIMIT = 10**6


@lru_cache(maxsize=65536)
def normalized(answer: str) -> str | None:
    r"""`answer` as math-verify's LaTeX normalization leaves it before parsing, or None where the
    answer could be read differently by math-verify's extraction than as one ``\boxed{}`` body
    (unbalanced braces, a nested ``\boxed``, dollar signs)."""
    if "boxed" in answer or "$" in answer or "\n" in answer or "%" in answer.replace("\\%", ""):
        return None
    depth = 0
    for ch in answer:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return None
    if depth:
        return None
    return normalize_latex(f"\\boxed{{{answer}}}", _CONFIG).strip()


def _squarefree(n: int) -> tuple[int, int]:
    """(k, s) with n == k*k*s and s squarefree."""
    k, s, f = 1, n, 2
    while f * f <= s:
        while s % (f * f) == 0:
            s //= f * f
            k *= f
        f += 1
    return k, s


def _radical(text: str) -> tuple[int, int] | None:
    """An integer or ``a\\sqrt{b}`` in canonical form (coefficient, squarefree radicand), else None."""
    if _INTEGER.fullmatch(text):
        return int(text), 1
    match = _RADICAL.fullmatch(text)
    if match is None:
        return None
    coef = {None: 1, "-": -1}.get(match.group(1))
    coef = int(match.group(1)) if coef is None else coef
    k, s = _squarefree(int(match.group(2)))
    value = (coef * k, s if coef else 1)  # 0\sqrt{2} is 0
    return value if abs(value[0]) * isqrt(s) < _LIMIT else None


def _set(text: str) -> frozenset[int] | None:
    r"""``\{a, b, ...\}`` of at least two distinct integers, else None."""
    match = _SET.fullmatch(text)
    if match is None:
        return None
    parts = [p.strip() for p in match.group(1).split(",")]
    if len(parts) < 2 or not all(_INTEGER.fullmatch(p) for p in parts):
        return None
    values = frozenset(int(p) for p in parts)
    return values if len(values) == len(parts) else None


def _interval(text: str) -> tuple[str, int, int, str] | None:
    """``[a, b)`` and the like with integers a < b (an empty or reversed pair may read as a tuple)."""
    match = _INTERVAL.fullmatch(text)
    if match is None or int(match.group(2)) >= int(match.group(3)):
        return None
    return match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)


_TOKEN = re.compile(r"\s*(\d+|[x()+\-^{}])")
Poly = tuple[int, ...]  # integer coefficients, lowest degree first, no trailing zeros


class _PolyReader:
    """Recursive descent over integer polynomials in x: sums, implicit products, parentheses, integer
    powers. An integer may only lead a term (``2 3`` or ``x^23`` would read otherwise in LaTeX)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise ValueError(text)
            self.tokens.append(match.group(1))
            pos = match.end()
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ValueError(expected)
        self.at += 1
        return token

    def sum(self) -> dict[int, int]:
        total: dict[int, int] = {}
        sign = -1 if self.peek() == "-" else 1
        if self.peek() in ("-", "+"):
            self.take()
        while True:
            for deg, c in self.product().items():
                total[deg] = total.get(deg, 0) + sign * c
            if self.peek() not in ("+", "-"):
                return total
            sign = -1 if self.take() == "-" else 1

    def product(self) -> dict[int, int]:
        start = self.at
        result = {0: int(self.take())} if (self.peek() or "").isdigit() else {0: 1}
        while self.peek() in ("x", "("):
            factor = {1: 1} if self.take() == "x" else self.group()
            if self.peek() == "^":
                self.take()
                factor = _power(factor, self.exponent())
            result = _multiply(result, factor)
        if self.at == start:
            raise ValueError("empty term")
        return result

    def group(self) -> dict[int, int]:
        inner = self.sum()
        self.take(")")
        return inner

    def exponent(self) -> int:
        """A single digit, or up to two in braces (``x^23`` is x^2 * 3 in LaTeX)."""
        if self.peek() != "{":
            power = self.take()
            if not (power.isdigit() and len(power) == 1):
                raise ValueError(power)
            return int(power)
        self.take("{")
        power = self.take()
        self.take("}")
        if not (power.isdigit() and int(power) <= 12):
            raise ValueError(power)
        return int(power)


def _multiply(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for da, ca in a.items():
        for db, cb in b.items():
            out[da + db] = out.get(da + db, 0) + ca * cb
    return out


def _power(base: dict[int, int], n: int) -> dict[int, int]:
    out = {0: 1}
    for _ in range(n):
        out = _multiply(out, base)
    return out


def _polynomial(text: str) -> Poly | None:
    """An integer polynomial in x of degree >= 1 written with +, -, implicit products, parentheses and
    small integer powers, else None."""
    if "x" not in text:
        return None
    try:
        reader = _PolyReader(text)
        coeffs = reader.sum()
    except ValueError:
        return None
    if reader.peek() is not None:
        return None
    top = max((d for d, c in coeffs.items() if c), default=0)
    poly = tuple(coeffs.get(d, 0) for d in range(top + 1))
    # degree 0 evaluates to a number, and x itself (also "(x)", "1x", "x+0") is a lone Symbol, which
    # math-verify compares by name
    if top < 1 or poly == (0, 1) or any(abs(c) >= _LIMIT for c in poly):
        return None
    return poly


def _percent_verdict(gold: str, answer: str) -> bool | None:
    """math-verify reads ``p\\%`` as p * UnevaluatedExpr(1/100) and, against an integer q, compares
    p with q; it may still find p/100 == q symbolically, so that case is left to it."""
    g, a = _PERCENT.fullmatch(gold), _PERCENT.fullmatch(answer)
    if g is None and a is None:
        return None
    if g is not None and a is not None:
        return int(g.group(1)) == int(a.group(1))
    p = int((g or a).group(1))  # type: ignore[union-attr]
    other = answer if g is not None else gold
    if not _INTEGER.fullmatch(other):
        return None
    q = int(other)
    if q == p:
        return True
    return False if 100 * q != p else None


def structured_verdict(gold: str, answer: str) -> bool | None:
    """math-verify's verdict on two answers in one of the understood forms, else None."""
    g, a = normalized(gold), normalized(answer)
    if not g or not a:
        return None
    if "." in gold or "." in answer:
        return None  # floats compare after rounding: the plain-number fast path handles those
    if (pct := _percent_verdict(g, a)) is not None:
        return pct
    for read in (_radical, _set, _interval, _polynomial):
        rg, ra = read(g), read(a)
        if rg is not None and ra is not None:
            return rg == ra
    return None
