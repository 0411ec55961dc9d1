"""Number theory and counting: gcd/lcm, primes, bases, digit sums, FizzBuzz variants.

Not a flow: a family group of flows/data/code_problems (its __init__ says why they live here).
"""

from __future__ import annotations

import random

from flows.data.code_problems import READ_LIST, Draft, call, family, int_list, list_cases, list_contract, pick


def _numbers(rng: random.Random, n_tests: int, lo: int, hi: int, edges: list[int]) -> list[int]:
    cases = list(dict.fromkeys(edges))
    while len(cases) < n_tests:
        cases.append(rng.randint(lo, hi))
    return cases[:n_tests]


@family("gcd_lcm", 2, "stdio", "greatest common divisor or least common multiple of a list")
def gcd_lcm(rng: random.Random, n_tests: int) -> Draft:
    gcd = rng.random() < 0.5
    max_n = rng.randint(3, 10) if gcd else rng.randint(3, 6)  # the lcm brute force counts up to the lcm
    if gcd:
        factor, hi = rng.choice([1, 2, 3, 6, 12]), rng.choice([100, 1000, 10000])
        cases = [[x * factor for x in c] for c in list_cases(rng, n_tests, 1, hi // factor, max_n)]
        code = f"from math import gcd\nfrom functools import reduce\n{READ_LIST}\nprint(reduce(gcd, a))"
        alt = f"{READ_LIST}\nprint(max(d for d in range(1, min(a) + 1) if all(x % d == 0 for x in a)))"
    else:
        hi = rng.randint(8, 20)
        cases = list_cases(rng, n_tests, 1, hi, max_n)
        code = f"from math import lcm\n{READ_LIST}\nprint(lcm(*a))"
        alt = f"{READ_LIST}\nm = max(a)\nwhile any(m % x for x in a):\n    m += max(a)\nprint(m)"
    what = "greatest common divisor" if gcd else "least common multiple"
    return Draft(
        f"Print the {what} of all the given positive integers.\n\n{list_contract(max_n, 1, hi)}\n"
        "Output: one integer.",
        code,
        [int_list(c) for c in cases],
        {"gcd": gcd},
        alternatives=(alt,),
    )


@family("count_primes", 2, "function", "primes up to n")
def count_primes(rng: random.Random, n_tests: int) -> Draft:
    name = pick(rng, ["count_primes", "prime_count", "primes_up_to", "pi"])
    bound = pick(rng, ["at most n", "less than or equal to n"])
    top = 100 * rng.randint(5, 30)
    sieve = (
        f"def {name}(n):\n    if n < 2:\n        return 0\n    sieve = [True] * (n + 1)\n"
        "    sieve[0] = sieve[1] = False\n    for p in range(2, int(n**0.5) + 1):\n"
        "        if sieve[p]:\n            sieve[p * p :: p] = [False] * len(range(p * p, n + 1, p))\n"
        "    return sum(sieve)"
    )
    trial = f"def {name}(n):\n    return sum(all(k % d for d in range(2, k)) for k in range(2, n + 1))"
    return Draft(
        f"Write a Python function `{name}(n)` that returns how many prime numbers are {bound} "
        f"(0 <= n <= {top}).",
        sieve,
        [call(n) for n in _numbers(rng, n_tests, 3, top, [0, 1, 2, 97])],
        {"top": top},
        fn_name=name,
        alternatives=(trial,),
    )


@family("fizzbuzz", 1, "stdio", "FizzBuzz with drawn divisors and words")
def fizzbuzz(rng: random.Random, n_tests: int) -> Draft:
    a, b = rng.sample([2, 3, 4, 5, 7], 2)
    wa, wb = rng.sample(["Fizz", "Buzz", "Ping", "Pong", "Tick", "Tock"], 2)
    top = rng.choice([50, 100, 200])
    return Draft(
        f"For every integer i from 1 to n, print one line: {wa}{wb} if i is divisible by both {a} and "
        f"{b}, {wa} if only by {a}, {wb} if only by {b}, and i itself otherwise.\n\n"
        f"Input: one integer n (1 <= n <= {top}).\nOutput: n lines.",
        f"for i in range(1, int(input()) + 1):\n"
        f"    s = ({wa!r} if i % {a} == 0 else '') + ({wb!r} if i % {b} == 0 else '')\n"
        "    print(s or i)",
        [f"{n}\n" for n in _numbers(rng, n_tests, 2, top, [1, a * b])],
        {"a": a, "b": b, "words": [wa, wb]},
    )


@family("collatz", 1, "function", "steps of the Collatz map to reach 1, or the peak on the way")
def collatz(rng: random.Random, n_tests: int) -> Draft:
    steps = rng.random() < 0.5
    name = pick(
        rng,
        ["collatz_steps", "steps_to_one", "hailstone_length"] if steps else ["collatz_peak", "hailstone_max"],
    )
    top = 1000 * rng.randint(1, 100)
    goal = (
        "how many steps it takes to bring n down to 1 (0 for n = 1)"
        if steps
        else "the largest value reached on the way from n down to 1 (n itself included)"
    )
    loop = "steps += 1" if steps else "peak = max(peak, n)"
    start, result = ("steps = 0", "steps") if steps else ("peak = n", "peak")
    return Draft(
        f"The Collatz map replaces an even n by n / 2 and an odd n by 3n + 1. Write a Python function "
        f"`{name}(n)` that returns, for a positive integer n <= {top}, {goal}.",
        f"def {name}(n):\n    {start}\n    while n != 1:\n"
        f"        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        {loop}\n    return {result}",
        [call(n) for n in _numbers(rng, n_tests, 2, top, [1, 27])],
        {"steps": steps},
        fn_name=name,
    )


@family("to_base", 2, "stdio", "write n in a base from 2 to 16")
def to_base(rng: random.Random, n_tests: int) -> Draft:
    base = rng.randint(2, 16)
    digits = "0123456789ABCDEF"[:base]
    top = rng.choice([10**6, 10**9, 10**12])
    return Draft(
        f"Print the non-negative integer n written in base {base} (digits {', '.join(digits)}; no leading "
        f"zeros; 0 is written as 0).\n\nInput: one integer n (0 <= n <= {top}).\nOutput: one line.",
        f"n = int(input())\nout = ''\nwhile n:\n    out = {digits!r}[n % {base}] + out\n    n //= {base}\n"
        "print(out or '0')",
        [f"{n}\n" for n in _numbers(rng, n_tests, 1, top, [0, base, base - 1])],
        {"base": base},
        alternatives=(
            f"def rep(n):\n    return (rep(n // {base}) if n >= {base} else '') + {digits!r}[n % {base}]\n"
            "print(rep(int(input())))",
        ),
    )


@family("digit_sums", 1, "function", "repeated digit sum: the digit it ends on, or the number of rounds")
def digit_sums(rng: random.Random, n_tests: int) -> Draft:
    root = rng.random() < 0.5
    name = pick(
        rng,
        ["digital_root", "digit_root", "single_digit"]
        if root
        else ["additive_persistence", "digit_sum_rounds"],
    )
    top = 10 ** rng.randint(4, 15)
    goal = "that digit" if root else "how many replacements that takes (0 for a single-digit n)"
    code = (
        f"def {name}(n):\n    while n >= 10:\n        n = sum(int(d) for d in str(n))\n    return n"
        if root
        else f"def {name}(n):\n    rounds = 0\n    while n >= 10:\n        n = sum(map(int, str(n)))\n"
        "        rounds += 1\n    return rounds"
    )
    alternative = (
        f"def {name}(n):\n    return 0 if n == 0 else 1 + (n - 1) % 9"
        if root
        else f"def {name}(n):\n    return 0 if n < 10 else 1 + {name}(sum(int(d) for d in str(n)))"
    )
    return Draft(
        f"Write a Python function `{name}(n)` for an integer 0 <= n <= {top}: replace n by the sum of its "
        f"decimal digits, again and again, until a single digit remains, and return {goal}.",
        code,
        [call(n) for n in _numbers(rng, n_tests, 10, top, [0, 9, 19])],
        {"root": root},
        fn_name=name,
        alternatives=(alternative,),
    )


@family("sum_of_multiples", 2, "stdio", "sum of the multiples of a or b below n")
def sum_of_multiples(rng: random.Random, n_tests: int) -> Draft:
    a, b = rng.sample([2, 3, 5, 7, 11, 13], 2)
    top = rng.choice([10**4, 10**5, 10**6])
    closed = (
        "n = int(input())\n"
        "def s(k):\n    m = (n - 1) // k\n    return k * m * (m + 1) // 2\n"
        f"print(s({a}) + s({b}) - s({a * b}))"
    )
    return Draft(
        f"Print the sum of all positive integers below n that are multiples of {a} or {b}.\n\n"
        f"Input: one integer n (1 <= n <= {top}).\nOutput: one integer.",
        f"n = int(input())\nprint(sum(i for i in range(1, n) if i % {a} == 0 or i % {b} == 0))",
        [f"{n}\n" for n in _numbers(rng, n_tests, 2, top, [1, a * b])],
        {"a": a, "b": b},
        alternatives=(closed,),
    )
