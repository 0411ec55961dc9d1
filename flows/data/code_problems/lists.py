"""Arithmetic over integer lists: one pass, a running value, counting pairs.

Not a flow: a family group of flows/data/code_problems (its __init__ says why they live here).
"""

from __future__ import annotations

import random

from flows.data.code_problems import (
    READ_LIST,
    Draft,
    call,
    family,
    int_list,
    list_cases,
    list_contract,
    pick,
)


def _size(rng: random.Random) -> int:
    """The largest n a statement allows (a varied constant; the tests stay within it)."""
    return rng.randint(6, 20)


@family("sum_above", 1, "stdio", "sum of the values above a threshold")
def sum_above(rng: random.Random, n_tests: int) -> Draft:
    k, lo, hi, max_n = rng.randint(-20, 40), -100, 100, _size(rng)
    verb = pick(rng, ["greater than", "strictly larger than", "above"])
    return Draft(
        f"Given a list of integers, print the sum of the values that are {verb} {k} "
        f"(print 0 if there are none).\n\n{list_contract(max_n, lo, hi)}\n"
        "Output: one integer.",
        f"{READ_LIST}\nprint(sum(x for x in a if x > {k}))",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n)],
        {"k": k},
    )


@family("count_divisible", 1, "stdio", "how many values a divisor divides (or does not)")
def count_divisible(rng: random.Random, n_tests: int) -> Draft:
    d, lo, hi, max_n = rng.randint(2, 9), 0, rng.choice([100, 1000, 10**6]), _size(rng)
    negate = rng.random() < 0.5
    return Draft(
        f"Count how many of the given integers are {'not ' if negate else ''}divisible by {d}.\n\n"
        f"{list_contract(max_n, lo, hi)}\nOutput: the count.",
        f"{READ_LIST}\nprint(sum(x % {d} {'!=' if negate else '=='} 0 for x in a))",
        [
            int_list(c)
            for c in list_cases(rng, n_tests, lo, hi, max_n, first=[d, d + 1, 2 * d, 3 * d, 2 * d + 1])
        ],
        {"d": d, "negate": negate},
    )


@family("value_range", 1, "stdio", "largest minus smallest value")
def value_range(rng: random.Random, n_tests: int) -> Draft:
    lo, hi, max_n = -rng.randint(10, 500), rng.randint(10, 500), _size(rng)
    what = pick(rng, ["the range of the list", "the spread of the values"])
    return Draft(
        f"Print {what}: its largest value minus its smallest value.\n\n{list_contract(max_n, lo, hi)}\n"
        "Output: one integer.",
        f"{READ_LIST}\nprint(max(a) - min(a))",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n)],
    )


@family("count_peaks", 1, "stdio", "count strict local maxima (or minima) inside the list")
def count_peaks(rng: random.Random, n_tests: int) -> Draft:
    lo, hi, max_n = 0, rng.randint(5, 30), _size(rng)
    peak = rng.random() < 0.5
    word, more = ("peak", "greater") if peak else ("valley", "smaller")
    cond = "a[i - 1] < a[i] > a[i + 1]" if peak else "a[i - 1] > a[i] < a[i + 1]"
    return Draft(
        f"A {word} is a position i with 1 < i < n whose value is strictly {more} than both of its "
        f"neighbours a_(i-1) and a_(i+1). Count the {word}s.\n\n"
        f"{list_contract(max_n, lo, hi)}\nOutput: the number of {word}s.",
        f"{READ_LIST}\nprint(sum({cond} for i in range(1, n - 1)))",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n, first=[lo, hi, lo, hi, lo, hi] * 4)],
        {"peak": peak},
    )


@family("running_sums", 1, "stdio", "prefix sums modulo m")
def running_sums(rng: random.Random, n_tests: int) -> Draft:
    m, lo, hi, max_n = rng.randint(5, 1000), 0, 500, _size(rng)
    return Draft(
        f"Print the running sums of the list modulo {m}: the i-th printed number is "
        f"(a_1 + ... + a_i) mod {m}.\n\n{list_contract(max_n, lo, hi)}\n"
        "Output: n integers on one line, separated by spaces.",
        f"{READ_LIST}\ns = 0\nout = []\nfor x in a:\n    s = (s + x) % {m}\n    out.append(s)\nprint(*out)",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n)],
        {"m": m},
    )


@family("kth_largest", 1, "function", "k-th largest distinct value, or None")
def kth_largest(rng: random.Random, n_tests: int) -> Draft:
    k = rng.randint(2, 4)
    ordinal = {2: "second", 3: "third", 4: "fourth"}[k]
    name = pick(rng, [f"{ordinal}_largest", f"{ordinal}_biggest", "kth_largest_distinct"])
    max_n = _size(rng)
    return Draft(
        f"Write a Python function `{name}(nums)` that takes a list of 1 to {max_n} integers and returns "
        f"the {ordinal} largest distinct value in it, or None when it has fewer than {k} distinct values.",
        f"def {name}(nums):\n    values = sorted(set(nums))\n    return values[-{k}] if len(values) >= {k} else None",
        [call(c) for c in list_cases(rng, n_tests, -50, 50, max_n, first=rng.sample(range(-50, 51), 6))],
        {"k": k},
        fn_name=name,
    )


@family("rotate_list", 1, "function", "rotate a list left or right by k places")
def rotate_list(rng: random.Random, n_tests: int) -> Draft:
    right = rng.random() < 0.5
    name = pick(rng, ["rotate", "rotate_right" if right else "rotate_left", "shift_cyclic"])
    max_k = rng.randint(5, 100)
    end, start = ("last", "front") if right else ("first", "back")
    body = "items[-k:] + items[:-k]" if right else "items[k:] + items[:k]"
    return Draft(
        f"Write a Python function `{name}(items, k)` that returns a new list: the non-empty list `items` "
        f"rotated to the {'right' if right else 'left'} by k places (0 <= k <= {max_k}; the {end} element "
        f"moves to the {start} k times).",
        f"def {name}(items, k):\n    k %= len(items)\n    return {body} if k else list(items)",
        [call(c, rng.randint(0, max_k)) for c in list_cases(rng, n_tests, 0, 9, 8)],
        {"right": right},
        fn_name=name,
    )


@family("pair_sum_count", 2, "stdio", "count pairs with a given sum")
def pair_sum_count(rng: random.Random, n_tests: int) -> Draft:
    lo, hi, max_n = -10, 10, _size(rng)
    target = rng.randint(-5, 10)
    brute = f"{READ_LIST}\nprint(sum(a[i] + a[j] == {target} for i in range(n) for j in range(i + 1, n)))"
    return Draft(
        f"Count the pairs of positions i < j with a_i + a_j = {target}.\n\n"
        f"{list_contract(max_n, lo, hi)}\nOutput: the number of pairs.",
        f"{READ_LIST}\nseen = {{}}\npairs = 0\nfor x in a:\n"
        f"    pairs += seen.get({target} - x, 0)\n    seen[x] = seen.get(x, 0) + 1\nprint(pairs)",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n, first=[1, target - 1] * 10)],
        {"target": target},
        alternatives=(brute,),
    )


@family("longest_run", 2, "stdio", "longest strictly increasing (or decreasing) contiguous run")
def longest_run(rng: random.Random, n_tests: int) -> Draft:
    lo, hi, max_n = 0, rng.randint(3, 20), _size(rng)
    rising = rng.random() < 0.5
    op, word = (">", "greater") if rising else ("<", "smaller")
    brute = (
        f"{READ_LIST}\nbest = 1\nfor i in range(n):\n    for j in range(i + 1, n + 1):\n"
        f"        if all(a[t + 1] {op} a[t] for t in range(i, j - 1)):\n            best = max(best, j - i)\n"
        "print(best)"
    )
    return Draft(
        "Find the length of the longest contiguous stretch of the list in which every value is "
        f"strictly {word} than the one before it.\n\n{list_contract(max_n, lo, hi)}\n"
        "Output: the length (at least 1).",
        f"{READ_LIST}\nbest = run = 1\nfor i in range(1, n):\n    run = run + 1 if a[i] {op} a[i - 1] else 1\n"
        "    best = max(best, run)\nprint(best)",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n)],
        {"rising": rising},
        alternatives=(brute,),
    )
