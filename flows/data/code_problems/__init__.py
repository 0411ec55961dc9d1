"""Parametrised programming-problem families: seeded statements, reference solutions and test inputs.

A family is a function ``(rng, n_tests) -> Draft`` registered with `@family`. It draws its constants and
wording from ``rng`` and proposes test *inputs* only: the expected outputs come from running the
reference (and any independent `alternatives`, e.g. a brute force, which must agree) in the sandbox
(flows/tasks/suites.py), never from a hand-written value.

Two styles, as the `code` verifier reads them (verifiers/code.py):

- ``stdio``: inputs are stdin texts, the reference is a program;
- ``function``: inputs are ``{"args": [...], "kwargs": {}}``, the reference defines ``fn_name``.

`problem(name, seed, n_tests)` is deterministic in (name, seed): the same seed gives the same problem
in every process. The families live in modules by topic: lists, strings, numbers, dp.

Not a flow: the families the code-tasks flow (flows/tasks/code.py) draws its problems from.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Style = Literal["stdio", "function"]

STDIO_CONTRACT = (
    "Read the input from standard input and print the answer to standard output. "
    "Answer with a complete Python 3 program in a ```python code block."
)
FUNCTION_CONTRACT = (
    "Answer with the function (and any helpers it needs) in a ```python code block; "
    "it is called directly, so it must not read input or print."
)


@dataclass(frozen=True)
class Draft:
    """What a family draws for one seed (see the module docstring)."""

    statement: str
    code: str
    inputs: list[Any]
    params: dict[str, Any] = field(default_factory=dict)
    fn_name: str | None = None
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    name: str
    difficulty: int  # 1: one pass over the input; 2: strings, number theory, hashing; 3: DP and greedy
    style: Style
    summary: str
    draw: Callable[[random.Random, int], Draft]


@dataclass(frozen=True)
class Problem:
    family: str
    difficulty: int
    style: Style
    seed: int
    statement: str  # the full prompt: task, input/output contract, answer format
    code: str
    inputs: list[Any]
    params: dict[str, Any]
    fn_name: str | None
    alternatives: tuple[str, ...]

    @property
    def reference(self) -> str:
        """The reference as the answer a model should give: one fenced Python block."""
        return f"```python\n{self.code.strip()}\n```"


FAMILIES: dict[str, Family] = {}


def family(name: str, difficulty: int, style: Style, summary: str):
    def register(draw: Callable[[random.Random, int], Draft]) -> Callable[[random.Random, int], Draft]:
        if name in FAMILIES:
            raise RuntimeError(f"two code problem families named {name!r}")
        FAMILIES[name] = Family(name, difficulty, style, summary, draw)
        return draw

    return register


def problem(name: str, seed: int, n_tests: int) -> Problem:
    """The family's problem for this seed, with `n_tests` proposed inputs (edge cases first)."""
    fam = get_family(name)
    draft = fam.draw(random.Random(f"{name}/{seed}"), n_tests)
    if (fam.style == "function") != (draft.fn_name is not None):
        raise RuntimeError(f"family {name}: fn_name must be set exactly for the function style")
    contract = FUNCTION_CONTRACT if fam.style == "function" else STDIO_CONTRACT
    return Problem(
        family=name,
        difficulty=fam.difficulty,
        style=fam.style,
        seed=seed,
        statement=f"{draft.statement.strip()}\n\n{contract}",
        code=draft.code.strip() + "\n",
        inputs=draft.inputs[:n_tests],
        params=draft.params,
        fn_name=draft.fn_name,
        alternatives=draft.alternatives,
    )


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(
            f"unknown code problem family {name!r} (known: {', '.join(sorted(FAMILIES))})"
        ) from None


# -- helpers the families share ------------------------------------------------------------------------


def pick(rng: random.Random, options: list[str]) -> str:
    return options[rng.randrange(len(options))]


def call(*args: Any) -> dict[str, Any]:
    """A function-style test input."""
    return {"args": list(args), "kwargs": {}}


def int_list(values: list[int]) -> str:
    """The usual list input: n on the first line, the n values on the second."""
    return f"{len(values)}\n{' '.join(map(str, values))}\n"


def list_cases(
    rng: random.Random, n_tests: int, lo: int, hi: int, max_n: int, first: list[int] | None = None
) -> list[list[int]]:
    """Lists for n_tests tests: a typical one (`first`, else random), then the edge cases (a single
    value, all equal, the extremes), then random lengths. The typical case comes first so that even a
    two-test suite holds one input that exercises the problem."""

    def rand() -> list[int]:
        return [rng.randint(lo, hi) for _ in range(rng.randint(min(3, max_n), max_n))]

    same = rng.randint(lo, hi)
    cases = [first[:max_n] if first else rand(), [rng.randint(lo, hi)], [same] * min(max_n, 4)]
    cases.append([lo, hi] if max_n >= 2 else [hi])
    while len(cases) < n_tests:
        cases.append(rand())
    return cases[:n_tests]


LIST_INPUT = (
    "Input: the first line holds n ({n_range}); the second line holds the n integers a_1 ... a_n "
    "({lo} <= a_i <= {hi}), separated by spaces."
)
READ_LIST = "n, *a = map(int, open(0).read().split())"


def list_contract(max_n: int, lo: int, hi: int) -> str:
    return LIST_INPUT.format(n_range=f"1 <= n <= {max_n}", lo=lo, hi=hi)


def word_cases(rng: random.Random, n_tests: int, words: list[str], max_words: int) -> list[list[str]]:
    cases = [[pick(rng, words)]]
    while len(cases) < n_tests:
        cases.append([pick(rng, words) for _ in range(rng.randint(2, max_words))])
    return cases[:n_tests]


WORDS = (
    "apple river stone cloud maple tiger lemon orbit pixel quartz ember delta noble vivid "
    "harbor lantern meadow copper violet saddle timber glacier rocket walnut canyon"
).split()


def _load() -> None:
    # lazy: each family module registers itself in FAMILIES above, so they load after this module's body
    from flows.data.code_problems import dp, lists, numbers, strings  # noqa: F401 - registers families


_load()
