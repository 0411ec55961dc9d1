"""`m1 bench verify`: math-verification throughput of `MathVerifier` against plain math-verify.

The items look like an RL batch: P prompts x G sampled responses, long chains of thought, answers in
every form a model writes (mostly integers, as in MATH or DAPO-Math-17k, then fractions, decimals,
radicals, polynomials, intervals, sets, percentages, units; a tenth in forms only math-verify settles:
radical fractions, multiples of pi, equations), most of a group agreeing on a few answers. The baseline calls math-verify on
each item's extracted answer (`verifiers.math.math_verify_equal`); the verifier must reach the same
verdict on every item, which the bench asserts.
"""

from __future__ import annotations

import random
import time
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_start, tree_cpu_s
from flows.bench.sandbox import print_overhead
from flows.errors import M1Error
from verifiers.format import extract_answer

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


def duplication(items: list[dict[str, Any]], batch: int) -> tuple[float, float]:
    """Share of items whose (reference, extracted answer) pair repeats an earlier item: over the whole
    workload (what a verdict cache across batches can save) and within each batch (what deduplicating a
    batch can save)."""
    # heavy: math_verify; not at m1 start-up
    from verifiers.math import reference_answer

    def key(item: dict[str, Any]) -> tuple[str, str]:
        extraction = extract_answer(item["response"])
        return reference_answer(item["reference"]), extraction.text if extraction else ""

    keys = [key(item) for item in items]
    in_batch = sum(len(set(keys[i : i + batch])) for i in range(0, len(keys), batch))
    return 1 - len(set(keys)) / len(keys), 1 - in_batch / len(keys)


def math_verify_cached(workers: int):
    """math-verify behind MathVerifier's own verdict cache, batch deduplication and worker pool, with its
    fast paths switched off: the row that separates what caching gives from what the fast paths give."""
    # heavy: math_verify; not at m1 start-up
    from verifiers.math import MathVerifier

    class CachedMathVerify(MathVerifier):
        def _resolve(self, pairs):
            verdicts = dict(zip(pairs, self._slow(pairs), strict=True))
            self._cache.update(verdicts)
            return verdicts

    return CachedMathVerify(format_weight=0.0, workers=workers)


@app.command("verify")
def bench_verify(
    prompts: Annotated[int, typer.Option(min=1, help="Distinct problems (P).")] = 150,
    group: Annotated[int, typer.Option(min=1, help="Responses per problem (G).")] = 8,
    workers: Annotated[int, typer.Option(min=0, help="Process-pool size for the verifiers.")] = 2,
    batch: Annotated[int, typer.Option(min=1, help="Items per verify() call, like an RL batch.")] = 512,
    seed: int = 0,
    sandbox_runs: Annotated[
        int, typer.Option(min=0, help="Runs per sandbox backend for the overhead table (0: skip it).")
    ] = 10,
) -> None:
    """Throughput of MathVerifier (fast paths + cache + pool) vs math-verify called directly per item
    (the headline baseline) and vs math-verify behind the same cache and pool, and the per-run overhead of
    the sandboxes the code verifier runs programs in."""
    # heavy: math_verify; not at m1 start-up
    from verifiers.math import MathVerifier, math_verify_equal, reference_answer

    console = Console()
    print_start(console)
    items = bench_items(prompts, group, seed)
    dup_all, dup_batch = duplication(items, batch)
    console.print(
        f"{len(items)} items ({prompts} prompts x {group} responses), batches of {batch}, {workers} workers; "
        f"duplication: {dup_all:.0%} of items repeat a (reference, answer) pair seen earlier in the run, "
        f"{dup_batch:.0%} one seen earlier in their batch",
        highlight=False,
    )

    # Warm up first on other problems: math-verify's ANTLR parser builds its DFA cache over the first few
    # hundred parses, and a reward service or trainer runs warm. The pools fork after this, so every
    # side starts from the same warm state.
    for item in bench_items(min(len(_FAMILIES) * 4, prompts), 2, seed + 1):
        extraction = extract_answer(item["response"])
        if extraction:
            math_verify_equal(reference_answer(item["reference"]), extraction.text)

    def per_item(chunk: list[dict[str, Any]]) -> list[bool]:
        out = []
        for item in chunk:
            extraction = extract_answer(item["response"])
            out.append(
                bool(extraction) and math_verify_equal(reference_answer(item["reference"]), extraction.text)
            )
        return out

    base_name, cached_name, ours_name = (
        "math-verify per item (baseline)",
        f"math-verify + verdict cache + pool ({workers} workers)",
        f"MathVerifier: + fast paths ({workers} workers)",
    )
    meter = LoadMeter()
    seconds = dict.fromkeys((base_name, cached_name, ours_name), 0.0)
    cpu = dict(seconds)
    verdicts: dict[str, list[bool]] = {name: [] for name in seconds}
    # The three sides are interleaved batch by batch, so they run under the same load; within a batch
    # the verifiers go first, so any caching inside this process helps the baseline, not them.
    with MathVerifier(format_weight=0.0, workers=workers) as ours, math_verify_cached(workers) as cached:
        sides = {
            ours_name: lambda chunk: [bool(r.details.get("correct")) for r in ours.verify(chunk)],
            cached_name: lambda chunk: [bool(r.details.get("correct")) for r in cached.verify(chunk)],
            base_name: per_item,
        }
        for i in range(0, len(items), batch):
            chunk = items[i : i + batch]
            for name, run in sides.items():
                with meter.side(name):
                    t0, c0 = time.perf_counter(), tree_cpu_s()
                    verdicts[name] += run(chunk)
                    seconds[name] += time.perf_counter() - t0
                    cpu[name] += tree_cpu_s() - c0

    base = verdicts[base_name]
    table = Table(title="math verification throughput (sides interleaved batch by batch)")
    for col in (
        "method",
        "items/s",
        "wall s",
        "x baseline",
        "x cache+pool",
        "CPU s",
        "CPU x baseline",
        "correct",
    ):
        table.add_column(col, justify="left" if col == "method" else "right")
    for name in (base_name, cached_name, ours_name):
        table.add_row(
            name,
            f"{len(items) / seconds[name]:.0f}",
            f"{seconds[name]:.2f}",
            meter.ratio(base_name, name, seconds[base_name] / seconds[name]),
            meter.ratio(cached_name, name, seconds[cached_name] / seconds[name]) if name == ours_name else "",
            f"{cpu[name]:.2f}",
            f"{cpu[base_name] / max(cpu[name], 1e-9):.2f}x",
            str(sum(verdicts[name])),
        )
    console.print(table)
    console.print(
        f"caching + pool alone: {seconds[base_name] / seconds[cached_name]:.2f}x over plain math-verify; the fast "
        f"paths on top: {seconds[cached_name] / seconds[ours_name]:.2f}x; on a workload whose items repeat a "
        f"(reference, answer) pair {dup_all:.0%} of the time",
        highlight=False,
    )
    meter.report(console, base_name, ours_name)
    disagree = {
        name: [items[i]["id"] for i, (a, b) in enumerate(zip(v, base, strict=True)) if a != b]
        for name, v in verdicts.items()
    }
    console.print(
        "verdict agreement with math-verify: "
        + ", ".join(
            f"{name}: {len(items) - len(disagree[name])}/{len(items)} items"
            for name in (cached_name, ours_name)
        ),
        highlight=False,
    )
    bad = {name: d for name, d in disagree.items() if d}
    if bad:
        raise M1Error(
            "verdicts differ from math-verify: "
            + "; ".join(f"{n}: {len(d)} items, e.g. {d[:5]}" for n, d in bad.items())
        )
    if sandbox_runs:
        print_overhead(console, ["process", "docker"], sandbox_runs)
