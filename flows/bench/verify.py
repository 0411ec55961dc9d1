"""`m1 bench verify`: math-verification throughput of `MathVerifier` against plain math-verify.

The items look like an RL batch: P prompts x G sampled responses, long chains of thought, answers in
every form a model writes (mostly integers, as in MATH or DAPO-Math-17k, then fractions, decimals,
radicals, polynomials, intervals, sets, percentages, units; a tenth in forms only math-verify settles:
radical fractions, multiples of pi, equations), most of a group agreeing on a few answers. The baseline calls math-verify on
each item's extracted answer (`verifiers.math.math_verify_equal`); the verifier must reach the same
verdict on every item, which the bench asserts.
"""

from __future__ import annotations

import os
import random
import resource
import time
from typing import Annotated, Any

import typer

from flows.bench import app

# (weight, gold, [equivalent forms], [wrong forms]) templates; {a}, {b}, ... are filled per prompt.
# Weights follow RL math sets such as MATH and DAPO-Math-17k, where most answers are integers.
_FAMILIES: list[tuple[float, str, list[str], list[str]]] = [
    (0.50, "{a}", ["{a}", "{a}.0", "{a}"], ["{a1}", "{a2}", "-{a}"]),
    (
        0.12,
        "\\frac{{{a}}}{{{q}}}",
        ["\\frac{{{a}}}{{{q}}}", "\\dfrac{{{a}}}{{{q}}}", "{a}/{q}"],
        ["\\frac{{{q}}}{{{a}}}", "\\frac{{{a1}}}{{{q}}}"],
    ),
    (0.06, "{d}", ["{d}", "{d}0", "{d}"], ["{d1}", "{a}"]),
    (
        0.06,
        "{a}\\sqrt{{{s}}}",
        ["{a}\\sqrt{{{s}}}", "\\sqrt{{{sq}}}", "{a} \\sqrt{{{s}}}"],
        ["{a1}\\sqrt{{{s}}}", "{sq}"],
    ),
    (
        0.06,
        "x^2+{b2}x+{bb}",
        ["(x+{b})^2", "x^2+{b2}x+{bb}", "x^2 + {b2}x + {bb}"],
        ["(x-{b})^2", "x^2+{bb}"],
    ),
    (0.05, "[{a}, {a1})", ["[{a},{a1})", "[{a}, {a1})"], ["({a}, {a1})", "[{a}, {a1}]"]),
    (0.05, "\\{{{a}, {b}, {c}\\}}", ["\\{{{c}, {b}, {a}\\}}", "\\{{{a},{b},{c}\\}}"], ["\\{{{a}, {b}\\}}"]),
    (0.05, "{p}\\%", ["{p}\\%", "{p}", "{p}\\%"], ["{p1}\\%", "{p1}"]),
    (
        0.05,
        "{a} \\text{{ cm}}",
        ["{a}", "{a} \\text{{ cm}}", "{a}\\text{{cm}}"],
        ["{a1} \\text{{ cm}}", "{a1}"],
    ),
    # Forms no fast path settles, so the bench also times the cache, the pool and math-verify itself.
    (
        0.04,
        "\\frac{{\\sqrt{{{s}}}}}{{{q}}}",
        ["\\frac{{\\sqrt{{{s}}}}}{{{q}}}", "\\sqrt{{{s}}}/{q}"],
        ["\\frac{{\\sqrt{{{s}}}}}{{{a}}}"],
    ),
    (0.03, "{a}\\pi", ["{a}\\pi", "\\pi {a}", "{a} \\pi"], ["{a1}\\pi", "{a}"]),
    (0.03, "x = {a}", ["x = {a}", "x={a}", "{a}"], ["x = {a1}", "x = -{a}"]),
]
_FILLER = [
    "Let me set up the problem carefully.",
    "We can substitute the expression from the previous step.",
    "Hmm, wait, that does not look right; let me recompute.",
    "Expanding the product gives $(x+1)(x-1) = x^2 - 1$.",
    "By the triangle inequality the sum is bounded.",
    "So the intermediate value is $\\frac{3}{4}$ and we continue.",
    "Checking small cases: $n=1$ gives 2, $n=2$ gives 5.",
    "Therefore the constraint reduces to a linear equation.",
]


def _fill(rng: random.Random) -> dict[str, Any]:
    a, b, c = rng.sample(range(2, 60), 3)
    s = rng.choice([2, 3, 5, 6, 7])
    q = rng.choice([q for q in range(3, 17) if a % q])
    return {
        "a": a,
        "a1": a + 1,
        "a2": 2 * a,
        "b": b,
        "c": c,
        "b2": 2 * b,
        "bb": b * b,
        "q": q,
        "s": s,
        "sq": a * a * s,
        "p": rng.randint(1, 99),
        "p1": rng.randint(100, 199),
        "d": f"{a}.{rng.randint(1, 9)}{rng.randint(1, 9)}",
        "d1": f"{a}.{rng.randint(1, 9)}",
    }


def bench_items(prompts: int, group: int, seed: int = 0) -> list[dict[str, Any]]:
    """P x G items with `response` and `reference`, deterministic in `seed`."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for p in range(prompts):
        _, gold_t, right_t, wrong_t = rng.choices(_FAMILIES, weights=[f[0] for f in _FAMILIES])[0]
        values = _fill(rng)
        gold = gold_t.format(**values)
        # a group's answers concentrate on a few forms, as sampled responses do
        forms = [f.format(**values) for f in rng.sample(right_t, min(2, len(right_t)))]
        forms += [w.format(**values) for w in rng.sample(wrong_t, 1)]
        for g in range(group):
            cot = " ".join(rng.choice(_FILLER) for _ in range(rng.randint(20, 60)))
            answer = forms[min(int(rng.expovariate(1.2)), len(forms) - 1)]
            ending = rng.random()
            if ending < 0.8:
                tail = f"Putting it together, the final answer is $\\boxed{{{answer}}}$."
            elif ending < 0.95:
                tail = f"The answer is ${answer}$."
            else:
                tail = "I could not finish this."  # no answer at all
            decoy = f"maybe \\boxed{{{values['a2']}}}? no."
            items.append(
                {
                    "id": f"p{p}-g{g}",
                    "reference": gold,
                    "response": f"<think>{cot} {decoy} {cot[: len(cot) // 2]}</think>\n{tail}",
                }
            )
    return items


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the pool's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@app.command("verify")
def bench_verify(
    prompts: Annotated[int, typer.Option(min=1, help="Distinct problems (P).")] = 150,
    group: Annotated[int, typer.Option(min=1, help="Responses per problem (G).")] = 8,
    workers: Annotated[int, typer.Option(min=0, help="Process-pool size for the verifier.")] = 2,
    batch: Annotated[int, typer.Option(min=1, help="Items per verify() call, like an RL batch.")] = 512,
    seed: int = 0,
    sandbox_runs: Annotated[
        int, typer.Option(min=0, help="Runs per sandbox backend for the overhead table (0: skip it).")
    ] = 10,
) -> None:
    """Throughput of MathVerifier (fast paths + cache + pool) vs math-verify called directly per item,
    and the per-run overhead of the sandboxes the code verifier runs programs in."""
    from rich.console import Console
    from rich.table import Table

    from flows.errors import M1Error
    from verifiers.format import extract_answer
    from verifiers.math import MathVerifier, math_verify_equal, reference_answer

    console = Console()
    items = bench_items(prompts, group, seed)
    console.print(f"{len(items)} items ({prompts} prompts x {group} responses), {workers} workers")

    # Warm up first on other problems: math-verify's ANTLR parser builds its DFA cache over the first few
    # hundred parses, and a reward service or trainer runs warm. The pool forks after this, so both
    # sides start from the same warm state; then the verifier runs before the baseline, so any
    # caching effect inside this process helps the baseline, not us.
    for item in bench_items(min(len(_FAMILIES) * 4, prompts), 2, seed + 1):
        extraction = extract_answer(item["response"])
        if extraction:
            math_verify_equal(reference_answer(item["reference"]), extraction.text)

    load_before = os.getloadavg()[0]
    t0, cpu0 = time.perf_counter(), _cpu_s()
    with MathVerifier(format_weight=0.0, workers=workers) as verifier:
        ours: list[bool] = []
        for i in range(0, len(items), batch):
            ours += [bool(r.details.get("correct")) for r in verifier.verify(items[i : i + batch])]
    t_ours, cpu_ours = time.perf_counter() - t0, _cpu_s() - cpu0  # workers are reaped: their CPU counts

    t0, cpu0 = time.perf_counter(), _cpu_s()
    base: list[bool] = []
    for item in items:
        extraction = extract_answer(item["response"])
        base.append(
            bool(extraction) and math_verify_equal(reference_answer(item["reference"]), extraction.text)
        )
    t_base, cpu_base = time.perf_counter() - t0, _cpu_s() - cpu0

    disagree = [items[i]["id"] for i, (a, b) in enumerate(zip(ours, base, strict=True)) if a != b]
    table = Table(title="math verification throughput")
    for col in ("method", "items/s", "wall s", "ratio", "CPU s", "CPU ratio", "correct"):
        table.add_column(col, justify="right")
    table.add_row(
        "math-verify per item (baseline)",
        f"{len(items) / t_base:.0f}",
        f"{t_base:.2f}",
        "1.00x",
        f"{cpu_base:.2f}",
        "1.00x",
        str(sum(base)),
    )
    table.add_row(
        f"MathVerifier ({workers} workers)",
        f"{len(items) / t_ours:.0f}",
        f"{t_ours:.2f}",
        f"{t_base / t_ours:.2f}x",
        f"{cpu_ours:.2f}",
        f"{cpu_base / cpu_ours:.2f}x",
        str(sum(ours)),
    )
    console.print(table)
    # The wall ratio needs the workers' cores to be free; on a shared machine the CPU ratio is the
    # steadier measure of the work saved.
    console.print(f"load average {load_before:.1f} on {os.cpu_count()} CPUs when the run started")
    console.print(f"verdict agreement: {len(items) - len(disagree)}/{len(items)} items")
    if disagree:
        raise M1Error(f"verdicts differ from math-verify on {len(disagree)} items, e.g. {disagree[:5]}")
    if sandbox_runs:
        from flows.bench.sandbox import print_overhead

        print_overhead(console, ["process", "docker"], sandbox_runs)
