"""Dynamic programming and greedy problems, each with an independent brute force that must agree.

Not a flow: a family group of flows/data/code_problems (its __init__ says why they live here).
"""

from __future__ import annotations

import random

from flows.data.code_problems import (
    READ_LIST,
    WORDS,
    Draft,
    call,
    family,
    int_list,
    list_cases,
    list_contract,
    pick,
)


@family("extreme_subarray", 3, "stdio", "largest or smallest sum of a contiguous stretch (Kadane)")
def extreme_subarray(rng: random.Random, n_tests: int) -> Draft:
    lo, hi, max_n = -rng.randint(5, 50), rng.randint(5, 50), rng.randint(6, 20)
    largest = rng.random() < 0.5
    f = "max" if largest else "min"
    return Draft(
        f"Print the {'largest' if largest else 'smallest'} possible sum of a non-empty contiguous stretch "
        f"a_i ... a_j of the list.\n\n{list_contract(max_n, lo, hi)}\nOutput: one integer.",
        f"{READ_LIST}\nbest = cur = a[0]\nfor x in a[1:]:\n    cur = {f}(x, cur + x)\n"
        f"    best = {f}(best, cur)\nprint(best)",
        [int_list(c) for c in list_cases(rng, n_tests, lo, hi, max_n)],
        {"largest": largest},
        alternatives=(
            f"{READ_LIST}\nprint({f}(sum(a[i:j]) for i in range(n) for j in range(i + 1, n + 1)))",
        ),
    )


@family("coin_ways", 3, "function", "ways to pay an amount with unlimited coins")
def coin_ways(rng: random.Random, n_tests: int) -> Draft:
    name = pick(rng, ["coin_ways", "count_change", "ways_to_pay"])
    coins = sorted(rng.sample(range(1, 13), rng.randint(2, 4)))
    top = rng.randint(30, 200)
    brute = (
        f"from functools import cache\n\ndef {name}(amount, coins):\n    @cache\n"
        "    def ways(i, left):\n        if left == 0:\n            return 1\n"
        "        if i == len(coins) or left < 0:\n            return 0\n"
        "        return ways(i, left - coins[i]) + ways(i + 1, left)\n    return ways(0, amount)"
    )
    return Draft(
        f"Write a Python function `{name}(amount, coins)` that returns in how many ways `amount` "
        f"(0 <= amount <= {top}) can be paid with any number of coins of the distinct values in `coins`; "
        "the order of the coins does not matter, and paying 0 has exactly one way.",
        f"def {name}(amount, coins):\n    ways = [1] + [0] * amount\n    for c in coins:\n"
        "        for v in range(c, amount + 1):\n            ways[v] += ways[v - c]\n    return ways[amount]",
        [call(x, coins) for x in [0, 1, *[rng.randint(10, top) for _ in range(n_tests)]]],
        {"coins": coins},
        fn_name=name,
        alternatives=(brute,),
    )


@family("min_coins", 3, "stdio", "fewest coins for an amount, or -1")
def min_coins(rng: random.Random, n_tests: int) -> Draft:
    coins = sorted(rng.sample(range(2, 15), rng.randint(2, 3)))
    top = rng.randint(50, 300)
    bfs = (
        "amount = int(input())\nfrontier, seen, steps = {0}, {0}, 0\n"
        "while frontier and amount not in frontier:\n"
        f"    frontier = {{v + c for v in frontier for c in {coins} if v + c <= amount}} - seen\n"
        "    seen |= frontier\n    steps += 1\nprint(steps if amount in frontier else -1)"
    )
    return Draft(
        f"Coins come in the values {', '.join(map(str, coins))} (as many of each as needed). Print the "
        "smallest number of coins that add up exactly to the amount, or -1 if no combination does.\n\n"
        f"Input: one integer, the amount (0 <= amount <= {top}).\nOutput: one integer.",
        f"amount = int(input())\nINF = float('inf')\nbest = [0] + [INF] * amount\n"
        f"for v in range(1, amount + 1):\n    best[v] = min((best[v - c] + 1 for c in {coins} if c <= v), "
        "default=INF)\nprint(best[amount] if best[amount] != INF else -1)",
        [f"{x}\n" for x in [0, 1, *[rng.randint(2, top) for _ in range(n_tests)]]],
        {"coins": coins},
        alternatives=(bfs,),
    )


@family("longest_subsequence", 3, "function", "longest increasing (or non-decreasing) subsequence")
def longest_subsequence(rng: random.Random, n_tests: int) -> Draft:
    strict = rng.random() < 0.5
    name = pick(rng, ["lis_length", "longest_increasing", "longest_chain"])
    max_n = rng.randint(8, 40)
    less, bisect = ("<", "bisect_left") if strict else ("<=", "bisect_right")
    patience = (
        f"from bisect import {bisect}\n\ndef {name}(nums):\n    tails = []\n    for x in nums:\n"
        f"        i = {bisect}(tails, x)\n        tails[i:i + 1] = [x]\n    return len(tails)"
    )
    return Draft(
        f"Write a Python function `{name}(nums)` that returns the length of the longest "
        f"{'strictly increasing' if strict else 'non-decreasing'} subsequence of `nums`, a list of 1 to "
        f"{max_n} integers (elements kept in order, not necessarily adjacent).",
        f"def {name}(nums):\n    best = [1] * len(nums)\n    for i in range(len(nums)):\n"
        f"        for j in range(i):\n            if nums[j] {less} nums[i]:\n"
        "                best[i] = max(best[i], best[j] + 1)\n    return max(best)",
        [call(c) for c in list_cases(rng, n_tests, 0, 20, min(max_n, 12))],
        {"strict": strict},
        fn_name=name,
        alternatives=(patience,),
    )


@family("climb_stairs", 3, "stdio", "ways to climb n stairs with allowed step sizes")
def climb_stairs(rng: random.Random, n_tests: int) -> Draft:
    steps = sorted(rng.sample(range(1, 6), rng.randint(2, 3)))
    mod, top = rng.choice([1_000_000_007, 998_244_353, 1_000_000]), rng.choice([100, 500, 1000])
    memo = (
        "import sys\nfrom functools import cache\nsys.setrecursionlimit(10000)\n@cache\n"
        f"def ways(n):\n    return 1 if n == 0 else sum(ways(n - s) for s in {steps} if s <= n) % {mod}\n"
        "print(ways(int(input())))"
    )
    return Draft(
        f"You climb a staircase of n stairs taking steps of {', '.join(map(str, steps))} stairs at a "
        f"time. Print the number of different sequences of steps that reach exactly the top, modulo "
        f"{mod}.\n\nInput: one integer n (1 <= n <= {top}).\nOutput: one integer.",
        f"n = int(input())\nways = [1] + [0] * n\nfor v in range(1, n + 1):\n"
        f"    ways[v] = sum(ways[v - s] for s in {steps} if s <= v) % {mod}\nprint(ways[n])",
        [f"{x}\n" for x in [1, 2, *[rng.randint(3, top) for _ in range(n_tests)]]],
        {"steps": steps, "mod": mod},
        alternatives=(memo,),
    )


@family("interval_scheduling", 3, "stdio", "most non-overlapping intervals (greedy by end)")
def interval_scheduling(rng: random.Random, n_tests: int) -> Draft:
    what = pick(rng, ["meetings", "talks", "bookings", "lessons", "jobs"])
    top, longest = rng.randint(20, 60), rng.randint(3, 10)
    brute = (
        "from itertools import combinations\nn = int(input())\n"
        "iv = [tuple(map(int, input().split())) for _ in range(n)]\n"
        "def ok(sel):\n    sel = sorted(sel)\n    return all(a[1] <= b[0] for a, b in zip(sel, sel[1:]))\n"
        "print(max(k for k in range(n + 1) for sel in combinations(iv, k) if ok(sel)))"
    )
    cases = []
    for i in range(n_tests):
        n = 1 if i == 0 else rng.randint(2, 8)
        rows = []
        for _ in range(n):
            start = rng.randint(0, top - 1)
            rows.append(f"{start} {min(top, start + rng.randint(1, longest))}")
        cases.append(f"{n}\n" + "\n".join(rows) + "\n")
    return Draft(
        f"Each of n {what} occupies the time from s to e (s < e). Two {what} are compatible when one "
        "ends no later than the other starts. Print the largest number of pairwise compatible "
        f"{what}.\n\nInput: the first line holds n (1 <= n <= 8); each of the next n lines holds s and e "
        f"(0 <= s < e <= {top}).\nOutput: one integer.",
        "n = int(input())\nintervals = sorted((tuple(map(int, input().split())) for _ in range(n)), "
        "key=lambda p: p[1])\ncount, end = 0, -1\nfor s, e in intervals:\n    if s >= end:\n"
        "        count, end = count + 1, e\nprint(count)",
        cases,
        {"top": top},
        alternatives=(brute,),
    )


@family("knapsack", 3, "function", "0/1 knapsack: best value within a weight limit")
def knapsack(rng: random.Random, n_tests: int) -> Draft:
    name = pick(rng, ["knapsack", "best_value", "max_loot", "pack"])
    top, heaviest = rng.choice([100, 1000, 10000]), rng.randint(5, 20)
    brute = (
        f"from itertools import combinations\n\ndef {name}(weights, values, capacity):\n"
        "    n = len(weights)\n    return max(sum(values[i] for i in sel) for k in range(n + 1)\n"
        "               for sel in combinations(range(n), k) if sum(weights[i] for i in sel) <= capacity)"
    )
    cases = []
    for i in range(n_tests):
        n = 1 if i == 0 else rng.randint(2, 8)
        weights = [rng.randint(1, heaviest) for _ in range(n)]
        cases.append(call(weights, [rng.randint(1, 30) for _ in range(n)], rng.randint(0, 3 * heaviest)))
    return Draft(
        f"Write a Python function `{name}(weights, values, capacity)` that returns the largest total "
        "value of a selection of items (each used at most once) whose total weight is at most "
        f"`capacity`. Item i has weight weights[i] and value values[i]; 0 <= capacity <= {top}, and "
        f"every weight is between 1 and {heaviest}.",
        f"def {name}(weights, values, capacity):\n    best = [0] * (capacity + 1)\n"
        "    for w, v in zip(weights, values):\n        for c in range(capacity, w - 1, -1):\n"
        "            best[c] = max(best[c], best[c - w] + v)\n    return best[capacity]",
        cases,
        {"heaviest": heaviest},
        fn_name=name,
        alternatives=(brute,),
    )


@family("edit_distance", 3, "function", "edit distance with a substitution cost")
def edit_distance(rng: random.Random, n_tests: int) -> Draft:
    name = pick(rng, ["edit_distance", "levenshtein", "transform_cost"])
    sub, longest = rng.randint(1, 3), rng.randint(8, 20)
    recursive = (
        f"from functools import cache\n\ndef {name}(a, b):\n    @cache\n    def d(i, j):\n"
        "        if i == 0 or j == 0:\n            return i + j\n"
        f"        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + {sub} * (a[i - 1] != b[j - 1]))\n"
        "    return d(len(a), len(b))"
    )
    cases = [call("", "abc"), call("same", "same")]
    while len(cases) < n_tests:
        cases.append(call(pick(rng, WORDS), pick(rng, WORDS)))
    return Draft(
        f"Write a Python function `{name}(a, b)` that returns the lowest total cost of single-character "
        f"edits that turn the string `a` into the string `b`: an insertion or a deletion costs 1, a "
        f"substitution costs {sub}. Each string has at most {longest} lowercase letters.",
        f"def {name}(a, b):\n    prev = list(range(len(b) + 1))\n    for i, ca in enumerate(a, 1):\n"
        "        cur = [i]\n        for j, cb in enumerate(b, 1):\n"
        f"            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + {sub} * (ca != cb)))\n"
        "        prev = cur\n    return prev[-1]",
        cases,
        {"substitution": sub},
        fn_name=name,
        alternatives=(recursive,),
    )


@family("grid_paths", 3, "stdio", "monotone paths through a grid with blocked cells")
def grid_paths(rng: random.Random, n_tests: int) -> Draft:
    wall, free, size = pick(rng, ["#", "X", "*"]), pick(rng, [".", "o", "_"]), rng.randint(4, 9)
    cases = []
    for i in range(n_tests):
        rows, cols = (1, 1) if i == 0 else (rng.randint(1, size), rng.randint(1, size))
        grid = [
            "".join(wall if rng.random() < 0.2 and (r, c) != (0, 0) else free for c in range(cols))
            for r in range(rows)
        ]
        cases.append(f"{rows} {cols}\n" + "\n".join(grid) + "\n")
    recursive = (
        "from functools import cache\nh, w = map(int, input().split())\ng = [input() for _ in range(h)]\n"
        "@cache\ndef p(r, c):\n"
        f"    if r >= h or c >= w or g[r][c] == {wall!r}:\n        return 0\n"
        "    return 1 if (r, c) == (h - 1, w - 1) else p(r + 1, c) + p(r, c + 1)\nprint(p(0, 0))"
    )
    return Draft(
        f"A grid has h rows and w columns; '{free}' is a free cell and '{wall}' a blocked one. Count the "
        "paths from the top-left cell to the bottom-right cell that move only right or down through "
        "free cells (0 if either corner is blocked).\n\nInput: the first line holds h and w "
        f"(1 <= h, w <= {size}); then h lines of w characters.\nOutput: the number of paths.",
        "h, w = map(int, input().split())\ng = [input() for _ in range(h)]\npaths = [[0] * w for _ in range(h)]\n"
        "for r in range(h):\n    for c in range(w):\n"
        f"        if g[r][c] == {wall!r}:\n            continue\n"
        "        if r == 0 and c == 0:\n            paths[r][c] = 1\n        else:\n"
        "            paths[r][c] = (paths[r - 1][c] if r else 0) + (paths[r][c - 1] if c else 0)\n"
        "print(paths[h - 1][w - 1])",
        cases,
        {"wall": wall, "free": free},
        alternatives=(recursive,),
    )
