"""Bracket sequences for the Dyck-language tasks: random balanced words and a first-error checker."""

from __future__ import annotations

import random

PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
CLOSERS = {v: k for k, v in PAIRS.items()}


def random_dyck(rng: random.Random, length: int, types: int, max_depth: int) -> str:
    """A balanced word of ``length`` (even) brackets over the first ``types`` bracket kinds."""
    openers = list(PAIRS)[:types]
    stack: list[str] = []
    out: list[str] = []
    opens_left = length // 2
    while opens_left or stack:
        can_open = opens_left > 0 and len(stack) < max_depth
        if can_open and (not stack or rng.random() < 0.55):
            b = rng.choice(openers)
            stack.append(b)
            out.append(b)
            opens_left -= 1
        else:
            out.append(PAIRS[stack.pop()])
    return "".join(out)


def first_error(seq: str) -> int:
    """1-based position of the first closing bracket that closes nothing or the wrong kind; 0 if none.
    (Unclosed brackets at the end are not an error here: the tasks never produce them.)"""
    stack: list[str] = []
    for i, c in enumerate(seq, 1):
        if c in PAIRS:
            stack.append(c)
        elif not stack or stack.pop() != CLOSERS[c]:
            return i
    return 0


def closing(prefix: str) -> str:
    """The brackets that close every unclosed opener of a valid prefix, innermost first."""
    stack: list[str] = []
    for c in prefix:
        if c in PAIRS:
            stack.append(c)
        else:
            stack.pop()
    return "".join(PAIRS[c] for c in reversed(stack))
