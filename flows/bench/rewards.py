"""`m1 bench rewards`: load test of the reward service on loopback.

Starts `m1 serve rewards` in a subprocess, then N requests from C concurrent clients (httpx, async),
about 5% of them malformed in different ways (broken JSON, unknown verifier, oversized body, wrong
types, too many items). Checks: zero 5xx, every malformed request a 4xx, zero lost items (each valid
request gets exactly one reward per item). Prints p50/p99 latency and throughput, and the ratio to
scoring the same items by calling the verifiers directly in one process (the baseline).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_start, tree_cpu_s
from flows.bench.verify import bench_items
from flows.errors import M1Error
from flows.progress import bars
from flows.servers import m1_server
from verifiers.constraints import ConstraintVerifier

MAX_BODY_MB = 0.25
MAX_ITEMS = 64
ROUNDS = 4  # alternations of the baseline and the load test


@dataclass
class Outcome:
    valid: bool
    status: int  # 0: no response (connection error, timeout)
    latency_s: float
    sent_items: int
    got_items: int


@dataclass
class Spec:
    body: bytes
    valid: bool
    items: int
    kind: str = "valid"


@dataclass
class Pools:
    math: list[dict[str, Any]] = field(default_factory=list)
    constraints: list[dict[str, Any]] = field(default_factory=list)


def _constraint_items(rng: random.Random, n: int) -> list[dict[str, Any]]:
    words = "the quick brown fox jumps over a lazy dog while reward models score every answer".split()
    items = []
    for _ in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 80))) + "."
        items.append(
            {
                "response": text if rng.random() < 0.5 else text.upper(),
                "constraints": [
                    {"type": "word_count", "max": 50},
                    {"type": "keywords", "words": ["fox"]},
                    {"type": "case", "mode": "lower"},
                    {"type": "forbidden_words", "words": ["dog"]},
                ],
            }
        )
    return items


def make_specs(n: int, malformed: float, rng: random.Random, pools: Pools) -> list[Spec]:
    bad_kinds = [
        "broken_json",
        "unknown_verifier",
        "oversized",
        "items_not_list",
        "too_many_items",
        "not_utf8",
    ]
    specs = []
    for i in range(n):
        if rng.random() < malformed:
            kind = bad_kinds[i % len(bad_kinds)]
            body = {
                "broken_json": b'{"verifier": "math", "items": [{"response": ',
                "unknown_verifier": json.dumps({"verifier": "no-such-verifier", "items": [{}]}).encode(),
                "oversized": json.dumps(
                    {"verifier": "math", "items": [{"response": "x" * int(MAX_BODY_MB * 2**20)}]}
                ).encode(),
                "items_not_list": json.dumps({"verifier": "math", "items": {"response": "1"}}).encode(),
                "too_many_items": json.dumps({"verifier": "math", "items": [{}] * (MAX_ITEMS + 1)}).encode(),
                "not_utf8": b"\xff\xfe\x00garbage",
            }[kind]
            specs.append(Spec(body, False, 0, kind))
            continue
        verifier, pool = ("math", pools.math) if rng.random() < 0.7 else ("constraints", pools.constraints)
        items = rng.sample(pool, rng.randint(1, 8))
        specs.append(Spec(json.dumps({"verifier": verifier, "items": items}).encode(), True, len(items)))
    return specs


async def _drive(base_url: str, specs: list[Spec], clients: int, progress) -> list[Outcome]:
    # aiohttp: the load generator shares the 2 cores with the service it measures, and spends about a
    # third of httpx's CPU per request (measured here), so less of the machine goes to the client.
    # lazy: optional extra [bench] (aiohttp)
    import aiohttp

    outcomes: list[Outcome] = []
    queue = iter(specs)
    headers = {"content-type": "application/json"}

    async def worker() -> None:
        # One session with one keep-alive connection per simulated client, as a trainer process holds.
        connector = aiohttp.TCPConnector(limit=1)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as session:
            for spec in queue:
                t0 = time.perf_counter()
                try:
                    async with session.post("/score", data=spec.body, headers=headers) as r:
                        status = r.status
                        got = len((await r.json()).get("rewards", [])) if status == 200 else 0
                except (aiohttp.ClientError, TimeoutError):
                    status, got = 0, 0
                outcomes.append(Outcome(spec.valid, status, time.perf_counter() - t0, spec.items, got))
                progress()

    await asyncio.gather(*(worker() for _ in range(clients)))
    return outcomes


def _service(workers: int):
    """`m1 serve rewards` in a child process (flows/servers.py), ready once its workers are."""
    flags = f"--workers {workers} --max-body-mb {MAX_BODY_MB} --max-items {MAX_ITEMS} --log-level warning"
    return m1_server(["serve", "rewards", *flags.split()], name="reward service", timeout_s=120)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def direct_scorer():
    """The baseline: the same valid requests scored by calling the verifiers in this process."""
    # heavy: math_verify; not at m1 start-up
    from verifiers.math import MathVerifier

    verifiers = {"math": MathVerifier(), "constraints": ConstraintVerifier()}

    def score(specs: list[Spec]) -> tuple[int, float]:
        t0 = time.perf_counter()
        for spec in specs:
            body = json.loads(spec.body)
            verifiers[body["verifier"]].verify(body["items"])
        return sum(s.items for s in specs), time.perf_counter() - t0

    return score


@app.command("rewards")
def bench_rewards(
    requests: Annotated[int, typer.Option(min=1, help="Total requests.")] = 20_000,
    clients: Annotated[int, typer.Option(min=1, help="Concurrent clients.")] = 50,
    malformed: Annotated[float, typer.Option(min=0, max=1, help="Share of malformed requests.")] = 0.05,
    workers: Annotated[int, typer.Option(min=1, help="Scoring processes of the service.")] = 2,
    baseline_requests: Annotated[
        int, typer.Option(min=1, help="Requests scored directly for the baseline.")
    ] = 500,
    seed: int = 0,
) -> None:
    """Load-test `m1 serve rewards`: zero 5xx, zero lost items, latency and throughput."""
    rng = random.Random(seed)
    pools = Pools(math=bench_items(60, 8, seed), constraints=_constraint_items(rng, 200))
    specs = make_specs(requests, malformed, rng, pools)
    console = Console()
    print_start(console)
    direct = direct_scorer()
    direct_items, direct_s = 0, 0.0
    meter = LoadMeter()
    # The two sides alternate in rounds (direct scoring of a share of the baseline requests, then a share
    # of the load test), so both see the same load on a shared machine.
    rounds = max(1, min(ROUNDS, len(specs)))
    per_round = -(-len(specs) // rounds)
    base_specs = [s for s in specs if s.valid][:baseline_requests]
    base_per_round = -(-len(base_specs) // rounds)

    outcomes: list[Outcome] = []
    elapsed = direct_cpu = service_cpu = 0.0
    with _service(workers) as service:
        with bars(console, transient=True) as bar:
            task = bar.add_task("load test", total=len(specs))
            for r in range(rounds):
                with meter.side("direct"):
                    c0 = tree_cpu_s()
                    n, secs = direct(base_specs[r * base_per_round : (r + 1) * base_per_round])
                    direct_cpu += tree_cpu_s() - c0
                direct_items, direct_s = direct_items + n, direct_s + secs
                with meter.side("service"):
                    t0, c0 = time.perf_counter(), tree_cpu_s()
                    outcomes += asyncio.run(
                        _drive(
                            service,
                            specs[r * per_round : (r + 1) * per_round],
                            clients,
                            lambda: bar.advance(task),
                        )
                    )
                    elapsed += time.perf_counter() - t0
                    service_cpu += tree_cpu_s() - c0  # client (this process), server and its workers
    direct_rate = direct_items / max(direct_s, 1e-9)

    valid = [o for o in outcomes if o.valid]
    bad = [o for o in outcomes if not o.valid]
    five_xx = sum(o.status >= 500 for o in outcomes)
    no_answer = sum(o.status == 0 for o in outcomes)
    lost = sum(o.sent_items - o.got_items for o in valid)
    bad_not_4xx = sum(not 400 <= o.status < 500 for o in bad)
    latencies = [o.latency_s * 1000 for o in valid]
    items = sum(o.got_items for o in valid)

    table = Table(title=f"reward service: {len(outcomes)} requests, {clients} clients, {workers} workers")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in [
        ("valid / malformed requests", f"{len(valid)} / {len(bad)}"),
        ("5xx responses", str(five_xx)),
        ("requests without a response", str(no_answer)),
        ("malformed requests not answered 4xx", str(bad_not_4xx)),
        ("lost items", str(lost)),
        (
            "latency p50 / p99 (ms, valid requests)",
            f"{_percentile(latencies, 0.5):.1f} / {_percentile(latencies, 0.99):.1f}",
        ),
        ("throughput (requests/s)", f"{len(outcomes) / elapsed:.0f}"),
        ("items/s through the service", f"{items / elapsed:.0f}"),
        ("items/s calling verifiers directly (baseline)", f"{direct_rate:.0f}"),
        ("ratio service / direct", meter.ratio("direct", "service", items / elapsed / direct_rate)),
        (
            "items per CPU-second: service (client + server + workers) / direct",
            f"{items / max(service_cpu, 1e-9):.0f} / {direct_items / max(direct_cpu, 1e-9):.0f}",
        ),
    ]:
        table.add_row(name, value)
    console.print(table)
    meter.report(console, "direct", "service")
    checks = {
        "zero 5xx": five_xx == 0,
        "zero lost items": lost == 0 and no_answer == 0,
        "malformed -> 4xx": bad_not_4xx == 0,
    }
    console.print("checks: " + ", ".join(f"{k} {'PASS' if ok else 'FAIL'}" for k, ok in checks.items()))
    if not all(checks.values()):
        raise M1Error(
            "reward service load test failed: " + ", ".join(k for k, ok in checks.items() if not ok)
        )
