"""`m1 bench engine`: continuous batching against static batching and sequential calls, on one engine.

Every side runs the same requests on the same engine (m1model.engine, one torch thread), so the
ratios measure scheduling alone:

- **sequential**: one request at a time, as a caller without a server would (`Engine.generate([p])`),
  on the first ``--sequential`` requests of each round (its rate is per generated token, so a subset
  measures it at a fraction of the time);
- **static**: what `m1 serve model` did before continuous batching: the requests waiting when a batch
  starts (up to ``--clients``) run as one `Engine.generate` call, every answer is returned when the
  longest ends (the old server sent finished completions only, so its time to first token is its
  latency), and a request sent meanwhile waits for the next batch;
- **continuous**: ``--clients`` closed-loop clients; a request joins the running batch at the next step
  and its client sends the next request as soon as it ends.

Workloads (sampled at temperature 1 with fixed seeds and no stop token, so every side generates exactly
the same tokens): *heavy-tailed* output lengths (log-normal, median 16, clipped to 2..256), *uniform*
lengths (every request the same), and the *issue example* (32 greedy requests at once, 4 asking for
160 tokens and 28 for 8: the short ones' latency against the long ones'). Reported per side: generated
tokens/s and its ratio to sequential and to static, p50/p99 time to first token (from when the client
sent the request) and latency. The closed workload ends with a drain (the last requests run with few
neighbours, the longest alone), so each round holds many requests per client. The sides alternate in rounds so all see the same machine load.

**RL rollouts**: one step's sampling, P prompts x G responses of mixed length (each response its own
length, heavy-tailed within the window): `Engine.generate` in static batches of 64 (the old engine's
``max_batch_size``: each batch runs to its longest) against all of them submitted at once to the
trainer's engine (its default 256 slots, continuous), seconds per step and tokens/s.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.load import LoadMeter, print_start
from flows.errors import InputError

SIDES = ("sequential", "static", "continuous")


def _model(which: str):
    """A fresh model of the pipeline's policy or judge shape (throughput depends on shapes only)."""
    # heavy: torch, transformers; not at m1 start-up
    from flows.config import GenRMConfig, ModelConfig
    from m1model.policy import build_model

    cfg = {"policy": ModelConfig(), "judge": GenRMConfig().judge_model}[which]
    fields = cfg.model_dump(exclude={"softmax_every", "vocab_size", "seed"})
    return build_model(
        seed=cfg.seed, softmax_every=cfg.softmax_every, vocab_size=cfg.vocab_size, **fields
    ).eval()


def heavy_tailed_lengths(n: int, rng: np.random.Generator) -> list[int]:
    """Output lengths with a heavy tail: log-normal, median 16, clipped to 2..256 (a few requests want
    ten times what most do, as reasoning traces and judges' answers do)."""
    return np.clip(np.round(rng.lognormal(np.log(16), 1.0, n)), 2, 256).astype(int).tolist()


def workload(kind: str, n: int, vocab: int, seed: int, uniform_len: int = 32):
    """(prompt, SamplingParams) per request: prompts of 16..96 random tokens; outputs as ``kind`` says."""
    # heavy: torch (m1model); not at m1 start-up
    from m1model import SamplingParams

    rng = np.random.default_rng(seed)
    lengths = heavy_tailed_lengths(n, rng) if kind == "heavy-tailed" else [uniform_len] * n
    out = []
    for i, length in enumerate(lengths):
        prompt = rng.integers(3, vocab, int(rng.integers(16, 97))).tolist()
        params = SamplingParams(
            temperature=1.0, max_tokens=length, seed=seed * 100_000 + i, repetition_run=10**6
        )
        out.append((prompt, params))
    return out


def _record(reqs, sent: dict[int, float]) -> list[tuple[float, float, int]]:
    """(time to first token, latency, tokens) per finished request, from when its client sent it."""
    return [(r.first_token_at - sent[r.id], r.finished_at - sent[r.id], len(r.output)) for r in reqs]


def run_sequential(engine, work):
    rows = []
    for prompt, params in work:
        (r,) = engine.submit([prompt], params)
        sent = {r.id: r.arrived}
        while not r.finished:
            engine.step()
        rows += _record([r], sent)
    return rows


def run_static(engine, work, clients: int):
    """The old batcher: a batch takes the requests waiting (at most ``clients``) and runs until its
    longest ends; only then do its clients get their answers (the old server sent finished completions
    only, so the first token reaches the client with the last) and send their next requests, which wait
    for the next batch."""
    todo = list(work)
    waiting = [time.monotonic()] * min(clients, len(todo))  # when each waiting request was sent
    rows = []
    while waiting:
        take, waiting = waiting[:clients], waiting[clients:]
        batch, todo = todo[: len(take)], todo[len(take) :]
        out = engine.generate([p for p, _ in batch], [sp for _, sp in batch])
        end = time.monotonic()
        rows += [(end - t, end - t, len(c.token_ids)) for c, t in zip(out, take, strict=True)]
        waiting += [end] * min(len(batch), len(todo) - len(waiting))
    return rows


def run_continuous(engine, work, clients: int):
    todo = iter(work)
    sent: dict[int, float] = {}
    done = []

    def send():
        item = next(todo, None)
        if item is not None:
            (r,) = engine.submit([item[0]], item[1])
            sent[r.id] = r.arrived

    for _ in range(clients):
        send()
    while engine.has_unfinished():
        for r in engine.step():
            if r.finished:
                done.append(r)
                send()
    return _record(done, sent)


def _ms(xs: list[float], q: float) -> str:
    return f"{np.percentile(np.asarray(xs) * 1000, q):.0f}" if xs else "-"


def _table(console, meter: LoadMeter, title: str, rows: dict[str, list], seconds: dict[str, float]):
    table = Table(title=title)
    cols = ("side", "tokens/s", "vs sequential", "vs static", "TTFT p50 ms", "TTFT p99 ms", "latency p50 ms")
    for col in (*cols, "latency p99 ms"):
        table.add_column(col, justify="left" if col == "side" else "right", no_wrap=col == "side")
    rate = {s: sum(t for *_, t in rows[s]) / seconds[s] for s in rows}
    for s in rows:
        ttft, lat = [a for a, _, _ in rows[s]], [b for _, b, _ in rows[s]]
        table.add_row(
            s,
            f"{rate[s]:.0f}",
            meter.ratio(f"{title}: sequential", f"{title}: {s}", rate[s] / rate["sequential"]),
            meter.ratio(f"{title}: static", f"{title}: {s}", rate[s] / rate["static"]),
            _ms(ttft, 50),
            _ms(ttft, 99),
            _ms(lat, 50),
            _ms(lat, 99),
        )
    console.print(table)
    return rate


@app.command("engine")
def bench_engine(
    clients: Annotated[int, typer.Option(min=1, help="Concurrent clients (and the static batch size).")] = 32,
    requests: Annotated[int, typer.Option(min=1, help="Requests per workload and round.")] = 256,
    sequential: Annotated[
        int, typer.Option(min=1, help="Of those, how many the sequential side runs (its rate is per token).")
    ] = 32,
    rounds: Annotated[int, typer.Option(min=1, help="Alternations of the three sides.")] = 2,
    uniform_len: Annotated[
        int, typer.Option(min=1, help="Output tokens per request, uniform workload.")
    ] = 32,
    model: Annotated[str, typer.Option(help="Model shape: the pipeline's 'policy' or 'judge'.")] = "policy",
    prompts: Annotated[int, typer.Option(min=1, help="RL rollouts: prompts per step (P).")] = 8,
    group_size: Annotated[int, typer.Option(min=2, help="RL rollouts: responses per prompt (G).")] = 16,
    window: Annotated[int, typer.Option(min=2, help="RL rollouts: generation window (max tokens).")] = 64,
    max_num_batched_tokens: Annotated[
        int, typer.Option(min=1, help="The engine's token budget per step.")
    ] = 1024,
) -> None:
    """Continuous vs static batching vs sequential calls on one engine: heavy-tailed and uniform output
    lengths at --clients concurrent clients, the issue's 4 long + 28 short example, and RL rollouts."""
    # heavy: torch; not at m1 start-up
    import torch

    from m1model import Engine, SamplingParams

    if model not in ("policy", "judge"):
        raise InputError(f"--model must be 'policy' or 'judge', got {model!r}")
    torch.set_num_threads(1)
    console = Console()
    print_start(console)
    meter = LoadMeter()
    net = _model(model)
    vocab = net.config.vocab_size
    engine = Engine(net, max(clients, 64), max_num_batched_tokens=max_num_batched_tokens)
    engine.generate([[5, 6, 7]] * 4, SamplingParams(max_tokens=4))  # warm-up

    for kind in ("heavy-tailed", "uniform"):
        rows: dict[str, list] = defaultdict(list)
        seconds: dict[str, float] = defaultdict(float)
        for r in range(rounds):
            work = workload(kind, requests, vocab, seed=r, uniform_len=uniform_len)
            for side in SIDES:
                with console.status(f"{kind}, round {r + 1}/{rounds}: {side}"), meter.side(f"{kind}: {side}"):
                    t0 = time.perf_counter()
                    if side == "sequential":
                        rows[side] += run_sequential(engine, work[:sequential])
                    elif side == "static":
                        rows[side] += run_static(engine, work, clients)
                    else:
                        rows[side] += run_continuous(engine, work, clients)
                    seconds[side] += time.perf_counter() - t0
        lengths = [t for *_, t in rows["continuous"]]
        _table(
            console,
            meter,
            kind,
            rows,
            seconds,
        )
        console.print(
            f"  {kind}: {rounds} x {requests} requests, output tokens median {statistics.median(lengths):.0f}, "
            f"max {max(lengths)}, {clients} clients",
            highlight=False,
        )

    # The example: 32 greedy requests at once, 4 asking for 160 tokens and 28 for 8.
    rng = np.random.default_rng(7)
    example = [
        (rng.integers(3, vocab, 40).tolist(), SamplingParams(temperature=0.0, max_tokens=160 if i < 4 else 8))
        for i in range(32)
    ]
    table = Table(title="issue example: 32 greedy requests sent together, 4 x 160 tokens and 28 x 8")
    for col in ("side", "short p50 ms", "long p50 ms", "short / long"):
        table.add_column(col, justify="left" if col == "side" else "right")
    for side in ("static", "continuous"):
        with meter.side(f"example: {side}"):
            got = run_static(engine, example, 32) if side == "static" else run_continuous(engine, example, 32)
        short = [lat for _, lat, n in got if n == 8]
        long = [lat for _, lat, n in got if n == 160]
        ratio = statistics.median(short) / statistics.median(long)
        table.add_row(
            side,
            f"{statistics.median(short) * 1000:.0f}",
            f"{statistics.median(long) * 1000:.0f}",
            f"{ratio:.2f}",
        )
    console.print(table)

    # RL rollouts: one step's sampling, P x G responses of mixed length; the trainer's engine (its
    # default slots) against the old Engine.generate (static batches of 64).
    engine = Engine(net, max_num_batched_tokens=max_num_batched_tokens)
    rng = np.random.default_rng(11)
    rl_rows: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for r in range(rounds):
        group_prompts = [rng.integers(3, vocab, int(rng.integers(40, 120))).tolist() for _ in range(prompts)]
        lengths = np.clip(np.round(rng.lognormal(np.log(window / 4), 0.8, prompts * group_size)), 1, window)
        work = [
            (p, SamplingParams(temperature=1.0, max_tokens=int(n), seed=r * 1000 + i, repetition_run=10**6))
            for i, (p, n) in enumerate(
                zip([p for p in group_prompts for _ in range(group_size)], lengths, strict=True)
            )
        ]
        for side in ("static", "continuous"):
            with meter.side(f"rollouts: {side}"):
                t0 = time.perf_counter()
                if side == "static":  # the old Engine.generate: batches of 64, each to its longest
                    out = []
                    for k in range(0, len(work), 64):
                        chunk = work[k : k + 64]
                        out += engine.generate([p for p, _ in chunk], [sp for _, sp in chunk])
                else:
                    out = engine.generate([p for p, _ in work], [sp for _, sp in work])
                rl_rows[side].append((time.perf_counter() - t0, sum(len(c.token_ids) for c in out)))
    table = Table(
        title=f"RL rollouts: P={prompts} x G={group_size}, mixed lengths within a window of {window}"
    )
    for col in ("side", "seconds per step", "tokens/s", "speed-up"):
        table.add_column(col, justify="left" if col == "side" else "right")
    per_step = {s: statistics.median(t for t, _ in v) for s, v in rl_rows.items()}
    for side, v in rl_rows.items():
        rate = sum(n for _, n in v) / sum(t for t, _ in v)
        speed = meter.ratio("rollouts: static", f"rollouts: {side}", per_step["static"] / per_step[side])
        table.add_row(side, f"{per_step[side]:.2f}", f"{rate:.0f}", speed)
    console.print(table)
    stats = engine.stats()
    console.print(
        f"the trainer's engine: {engine.max_num_seqs} slots, {stats['kv_blocks_total']} KV blocks of {stats['block_size']}, "
        f"{max_num_batched_tokens} tokens per step; memory: lightning states "
        f"{stats['lightning_states_bytes'] / 2**20:.1f} MiB, KV blocks {stats['kv_blocks_bytes'] / 2**20:.1f} MiB; "
        f"{stats['preemptions_total']} preemptions; model: the pipeline's {model} shape",
        highlight=False,
    )
    console.print(meter.summary(), highlight=False)
