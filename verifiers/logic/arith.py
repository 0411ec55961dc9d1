"""Exact, safe arithmetic for the number puzzles (game of 24, mathador, math path).

Answers are parsed with ``ast`` (never ``eval``): only integer literals, + - * / and parentheses are
allowed, and evaluation uses Fractions so 8 / 3 * 3 is exactly 8."""

from __future__ import annotations

import ast
import itertools
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
# Typographic operators models like to use.
NORMALISE = str.maketrans(
    {"×": "*", "·": "*", "÷": "/", "−": "-", "–": "-", "[": "(", "]": ")", "{": "(", "}": ")"}
)


MAX_LENGTH = 500  # far beyond any puzzle's answer; bounds parser recursion and big-number work


class ExprError(ValueError):
    """The text is not an arithmetic expression over integer literals."""


@dataclass
class Evaluated:
    value: Fraction
    numbers: list[int]  # the integer literals, in order of appearance
    intermediates: list[Fraction]  # the result of every operation, innermost first


_TIMES = re.compile(r"(?<=\d)\s*[xX]\s*(?=[\d(])")  # 3 x 8 as multiplication


def _normalise(text: str) -> str:
    """Operator symbols as Python's (× ÷ − and x between numbers)."""
    return _TIMES.sub("*", text.translate(NORMALISE))


def _operators(side: str) -> int:
    """How many operators one side of an equation has: the expression side has more than the result."""
    return sum(side.count(o) for o in "+-*/")


def clean_expression(text: str) -> str:
    """Normalise operator symbols and drop a trailing '= value' so '(8-2)×4 = 24' parses."""
    text = _normalise(text).strip().strip("`$").strip()
    if "=" in text:
        sides = [s.strip() for s in text.split("=")]
        # "24 = (..)" and "(..) = 24": keep the side that has operators
        text = max(sides, key=_operators)
    return text


def evaluate(text: str) -> Evaluated:
    """Parse and evaluate exactly; raises ExprError for anything but integers, + - * /, parentheses,
    and ZeroDivisionError for division by zero."""
    src = clean_expression(text)
    if not src:
        raise ExprError("empty expression")
    if len(src) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(src, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"not an arithmetic expression: {src!r}") from exc
    numbers: list[int] = []
    steps: list[Fraction] = []

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            numbers.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                r = a + b
            elif isinstance(node.op, ast.Sub):
                r = a - b
            elif isinstance(node.op, ast.Mult):
                r = a * b
            else:
                if b == 0:
                    raise ZeroDivisionError("division by zero")
                r = a / b
            steps.append(r)
            return r
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
        ):
            raise ExprError("negative literals are not allowed; use subtraction")
        raise ExprError(f"unsupported element {type(node).__name__} in {src!r}")

    return Evaluated(walk(tree.body), numbers, steps)


def _float_ops(a: float, b: float) -> list[tuple[float, str]]:
    out = [(a + b, "+"), (a * b, "*"), (a - b, "-")]
    if b != 0:
        out.append((a / b, "/"))
    return out


class _OutOfBudget(Exception):
    pass


def solve(numbers: list[int], target: int, max_nodes: int | None = None) -> tuple[str | None, int]:
    """An expression using every number exactly once that equals target, and the number of search
    nodes visited. None when no solution was found (within ``max_nodes``, which generators use to
    redraw numbers instead of waiting on a rare hard case).

    Depth-first over pairwise combinations, skipping multisets of values already explored. The search
    runs in floats (Fractions make it several times slower) and every hit is confirmed exactly, so a
    rounding coincidence can never yield a wrong expression; at worst a solution is missed and the
    generator draws new numbers."""
    nodes = 0
    seen: set[tuple[float, ...]] = set()

    def rec(items: list[tuple[float, Any]]) -> Any:
        nonlocal nodes
        nodes += 1
        if max_nodes is not None and nodes > max_nodes:
            raise _OutOfBudget
        key = tuple(sorted(round(v, 9) for v, _ in items))
        if key in seen:
            return None
        seen.add(key)
        for i, j in itertools.permutations(range(len(items)), 2):
            (a, ea), (b, eb) = items[i], items[j]
            rest = [items[k] for k in range(len(items)) if k not in (i, j)]
            for v, op in _float_ops(a, b):
                if op in "+*" and i > j:  # commutative: the (j, i) order covers it
                    continue
                expr = (op, ea, eb)
                if not rest:  # last step: compare instead of recursing
                    if abs(v - target) < 1e-9 and evaluate(_render(expr, top=True)).value == target:
                        return expr
                    continue
                found = rec([*rest, (v, expr)])
                if found is not None:
                    return found
        return None

    if len(numbers) == 1:
        return (str(numbers[0]) if numbers[0] == target else None), 1
    try:
        tree = rec([(float(n), n) for n in numbers])
    except _OutOfBudget:
        return None, nodes
    return (_render(tree, top=True) if tree is not None else None), nodes


def _render(tree: Any, top: bool = False) -> str:
    if isinstance(tree, int):
        return str(tree)
    op, a, b = tree
    text = f"{_render(a)} {op} {_render(b)}"
    return text if top else f"({text})"


def score_expression(
    answer: str, numbers: list[int], target: int, positive_integers: bool = False
) -> tuple[float, dict[str, Any]]:
    """1 when the expression uses exactly the given numbers and equals target (with every intermediate
    result a positive integer when ``positive_integers``)."""
    sides = _normalise(answer).split("=")
    if len(sides) > 2:
        return 0.0, {"error": "parse error: more than one '=' in the expression"}
    if len(sides) == 2:  # "(8 - 2) * 4 = 24" or "24 = ...": the other side must be the stated target
        stated = min(sides, key=_operators).strip().strip("`$").strip()
        if not re.fullmatch(r"\d{1,18}", stated, flags=re.ASCII):
            return 0.0, {"error": f"parse error: {stated[:30]!r} after '=' is not a number"}
        if int(stated) != target:
            return 0.0, {
                "correct": False,
                "reason": "the equation states another result",
                "stated": int(stated),
            }
    try:
        ev = evaluate(answer)
    except ExprError as exc:
        return 0.0, {"error": f"parse error: {exc}"}
    except ZeroDivisionError:
        return 0.0, {"correct": False, "reason": "division by zero"}
    if sorted(ev.numbers) != sorted(numbers):
        return 0.0, {
            "correct": False,
            "reason": "numbers used differ from the given ones",
            "used": ev.numbers,
            "given": numbers,
        }
    if positive_integers:
        bad = [str(v) for v in ev.intermediates if v <= 0 or v.denominator != 1]
        if bad:
            return 0.0, {
                "correct": False,
                "reason": "an intermediate result is not a positive integer",
                "intermediate": bad[0],
            }
    if ev.value != target:
        return 0.0, {"correct": False, "reason": "wrong value", "value": str(ev.value), "target": target}
    return 1.0, {"correct": True}


def change_one_number(expr: str, rng: random.Random) -> str:
    """The expression with one integer literal changed (so it no longer uses the given numbers)."""
    spans = [m.span() for m in re.finditer(r"\d+", expr)]
    a, b = rng.choice(spans)
    return expr[:a] + str(int(expr[a:b]) + rng.randint(1, 3)) + expr[b:]
