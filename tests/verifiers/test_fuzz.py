"""Built-in verifiers never crash: gold answers, random junk, empty and megabyte responses, edge numbers
and Unicode look-alikes, and malformed item fields. `verify` itself must not raise (no `verify_safely`
here), every reward is a finite number in [0, 1], and junk never scores full reward.

testgen builds test suites and scores nothing, so it has no `verify` to fuzz; logic verifiers are fuzzed
with their own tasks.
"""

from __future__ import annotations

import math
import random
import time
from fractions import Fraction

import pytest

from verifiers.base import Reward
from verifiers.code import CodeVerifier
from verifiers.constraints import ConstraintVerifier
from verifiers.math import MathVerifier

MB = 1 << 20
# Each fuzz test takes 2-15 s here; a bound far above that catches a hang (regex backtracking, a lost
# timeout) without turning a loaded CI machine into a failure: speed itself is `m1 bench`'s business.
HANG_S = 180
_FRAGMENTS = [
    "\\boxed{",
    "\\fbox",
    "}",
    "{",
    "\\{",
    "$",
    "$$",
    "\\(",
    "\\)",
    "\\frac{",
    "\\sqrt",
    "\\lor",
    "<think>",
    "</think>",
    "```",
    "```python\n",
    "the answer is ",
    "Answer: ",
    "\n",
    " ",
    "\\",
    "%",
    "^",
    "_",
    "=",
    ",",
    ".",
    "!!!",
    "[x]",
    "**",
    "#",
    "\x00",
    "\u200b",
    "\ufeff",
    "\U0001d7d2",  # mathematical bold digit
    "\u0417",  # Cyrillic Ze, looks like 3
    "\u041e",  # Cyrillic O
    "\u2212",
    "\u00bd",
    "\u00b2",
    "\ud800",  # a lone surrogate
]


def junk(rng: random.Random, n: int) -> list[str]:
    """Random strings: printable characters mixed with the delimiters the extractors look for."""
    out = []
    for _ in range(n):
        parts = [
            rng.choice(_FRAGMENTS) if rng.random() < 0.4 else chr(rng.randint(32, 126))
            for _ in range(rng.randint(1, 60))
        ]
        out.append("".join(parts))
    return out


def huge(rng: random.Random, *kinds: str) -> list[str]:
    """Megabyte responses: random text, and repetitions of the patterns that make regexes backtrack
    (each verifier takes those its parsers could trip on)."""
    made = {
        "random": lambda: "".join(rng.choice(_FRAGMENTS + list("abc 123\n")) for _ in range(MB // 4)),
        "open boxes": lambda: "\\boxed{" * (MB // 7),
        "one big box": lambda: "\\boxed{" + "9" * MB + "}",
        "many boxes": lambda: "\\boxed{1}" * (MB // 9),
        "phrases": lambda: "the answer is \\(" * (MB // 16),
        "fences": lambda: "```" * (MB // 3),
        "marks": lambda: "!" * MB + "x",
        "brackets": lambda: "[" * MB,
        "think tags": lambda: "<think>" * (MB // 7),
        "full-width": lambda: "\uff14" * MB,  # folded by NFKC
    }
    return [made[k]() for k in kinds or made]


def check(rewards: list[Reward], n: int) -> list[float]:
    assert len(rewards) == n
    for r in rewards:
        assert isinstance(r, Reward) and isinstance(r.details, dict)
        assert math.isfinite(r.reward) and 0 <= r.reward <= 1, r
    return [r.reward for r in rewards]


NOT_TEXT = [None, 42, 1.5, b"bytes", ["list"], {"dict": 1}]

# (answer in LaTeX, its value; None: not a finite number)
EDGE_NUMBERS = [
    ("0", 0),
    ("-1", -1),
    ("-42", -42),
    (str(10**30), 10**30),
    (str(-(10**30)), -(10**30)),
    ("10^{30}", 10**30),
    ("0.0000001", Fraction(1, 10**7)),
    ("\\frac{1}{3}", Fraction(1, 3)),
    ("nan", None),
    ("\\infty", None),
    ("-\\infty", None),
]
MATH_REFERENCES = [("42", 42), ("-7", -7), ("0", 0), (str(10**30), 10**30), ("\\frac{1}{2}", Fraction(1, 2))]
# Unicode look-alikes of the reference that are not the same answer
LOOKALIKES = {
    "42": ["\u04272", "4\u14bf", "\u0661\u0662"],  # Cyrillic Che + 2, Canadian syllabics, Arabic-Indic 12
    "0": ["O", "\u041e", "\u03bf"],
    "-7": ["\u20107"],
    str(10**30): ["1O" + "0" * 29],
    "\\frac{1}{2}": ["\\frac{l}{2}"],
}


def test_math_never_crashes_and_junk_never_scores():
    rng = random.Random(0)
    verifier = MathVerifier(timeout_s=2)
    start = time.perf_counter()
    for reference, value in MATH_REFERENCES:
        gold = [f"<think>work</think> \\boxed{{{reference}}}", f"\\boxed{{{reference}}}"]
        wrong_numbers = [f"\\boxed{{{a}}}" for a, v in EDGE_NUMBERS if v is None or Fraction(v) != value]
        lookalikes = [f"\\boxed{{{a}}}" for a in LOOKALIKES[reference]]
        noise = junk(rng, 40)
        boxed_noise = [f"\\boxed{{{j}}}" for j in junk(rng, 8)]
        items = [{"reference": reference, "response": r} for r in gold + wrong_numbers + lookalikes]
        items += [{"reference": reference, "response": r} for r in noise + boxed_noise + ["", "   "]]
        items += [{"reference": reference, "response": r} for r in NOT_TEXT]
        rewards = check(verifier.verify(items), len(items))
        assert rewards[:2] == [1.0, 1.0], reference
        k = 2 + len(wrong_numbers) + len(lookalikes)
        assert rewards[2:k] == [0.0] * (k - 2), reference  # edge numbers and look-alikes: wrong
        assert all(r < 1 for r in rewards[k:]), reference
    odd_references = [None, "", " ", 10**30, -0.0, {"a": 1}, "\\boxed{", "x" * MB]
    items = [{"reference": ref, "response": "\\boxed{42}"} for ref in odd_references]
    items += [{"response": "\\boxed{1}"}, {}]
    check(verifier.verify(items), len(items))
    items = [{"reference": "42", "response": r} for r in huge(rng)]  # every kind
    assert all(r < 1 for r in check(verifier.verify(items), len(items)))
    assert time.perf_counter() - start < HANG_S


@pytest.fixture(scope="module")
def code_verifier(process_sandbox):
    return CodeVerifier(time_limit_s=1, memory_mb=256)


SUM = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]
GOLD_CODE = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def test_code_never_crashes_and_junk_never_scores(code_verifier):
    rng = random.Random(1)
    start = time.perf_counter()
    # junk that compiles runs in the sandbox; the rest is a compile error found without running anything
    responses = junk(rng, 25) + ["", "  ", "0", "-7", str(10**30), "\uff50\uff52\uff49\uff4e\uff54(3)"]
    responses += huge(rng, "random", "fences", "brackets", "marks")
    items = [{"response": GOLD_CODE, "tests": SUM}]
    items += [{"response": r, "tests": SUM} for r in responses]
    items += [{"response": r, "tests": SUM} for r in NOT_TEXT]
    malformed = [
        {"tests": "not json"},
        {"tests": []},
        {"tests": [1, 2]},
        {"tests": SUM, "time_limit_s": "abc"},
        {"tests": SUM, "time_limit_s": float("inf")},
        {"tests": SUM, "time_limit_s": -1},
        {"tests": SUM, "memory_mb": 10**30 * 1.0},
        {"tests": SUM, "language": ["python"]},
        {"tests": SUM, "language": "brainfuck"},
        {"tests": SUM, "metadata": "{not json"},
        {"tests": [{"args": 5, "kwargs": [], "expected": 10**30}], "fn_name": "f"},
        {"tests": [{"input": 10**30, "output": None}]},
    ]
    items += [{"response": GOLD_CODE, **m} for m in malformed]
    rewards = check(code_verifier.verify(items), len(items))
    assert rewards[0] == 1.0
    assert all(r < 1 for r in rewards[1:])
    assert time.perf_counter() - start < HANG_S


CONSTRAINTS = [
    {"type": "word_count", "min": 5, "max": 60},
    {"type": "sentence_count", "min": 2},
    {"type": "paragraph_count", "max": 2},
    {"type": "char_count", "min": 20},
    {"type": "keywords", "words": ["photosynthesis"]},
    {"type": "forbidden_words", "words": ["banana"]},
    {"type": "keyword_frequency", "word": "light", "min": 1, "max": 3},
    {"type": "markdown", "bold": 1},
    {"type": "language", "lang": "en"},
    {"type": "starts_with", "text": "**Photosynthesis**"},
    {"type": "ends_with", "text": "Done."},
    {"type": "no_commas"},
    {"type": "placeholders", "min": 1},
]
GOLD_TEXT = (
    "**Photosynthesis** turns light into sugar inside every green leaf we see [here]. "
    "Plants use it daily and we all benefit from it. Done."
)
JSON_CONSTRAINTS = [
    {"type": "json_format"},
    {"type": "case", "mode": "lower"},
    {"type": "char_count", "max": 40},
    {"type": "keywords", "words": ["a"]},
]


def test_constraints_never_crash_and_junk_never_scores():
    rng = random.Random(2)
    verifier, strict = ConstraintVerifier(), ConstraintVerifier(mode="all")
    start = time.perf_counter()
    responses = junk(rng, 40) + ["", "0", "-7", str(10**30), GOLD_TEXT.replace("o", "\u043e")] + NOT_TEXT
    for constraints, gold in [(CONSTRAINTS, GOLD_TEXT), (JSON_CONSTRAINTS, '{"a": [1, -7, 0]}')]:
        items = [{"response": r, "constraints": constraints} for r in [gold, *responses]]
        for v in (verifier, strict):
            rewards = check(v.verify(items), len(items))
            assert rewards[0] == 1.0
            assert all(r < 1 for r in rewards[1:])
    items = [
        {"response": r, "constraints": CONSTRAINTS + JSON_CONSTRAINTS}
        for r in huge(rng, "random", "marks", "brackets", "fences", "full-width")
    ]
    assert all(r < 1 for r in check(verifier.verify(items), len(items)))
    bad_specs = [
        None,
        "junk",
        [],
        [5],
        [{"type": 5}],
        [{"type": "nope"}],
        [{"type": "word_count"}],
        [{"type": "word_count", "min": "abc"}],
        [{"type": "word_count", "min": 10**30}],
        [{"type": "word_count", "max": -1}],
        [{"type": "keywords", "words": [1]}],
        [{"type": "markdown", "bold": "x"}],
        [{"type": "markdown", "tables": 10**30}],
        [{"type": "case", "mode": "sideways"}],
        [{"type": "language", "lang": 5}],
        [{"type": "placeholders"}],
    ]
    items = [{"response": GOLD_TEXT, "constraints": spec} for spec in bad_specs]
    assert all(r < 1 for r in check(verifier.verify(items), len(items)))
    assert time.perf_counter() - start < HANG_S
