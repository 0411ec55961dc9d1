"""`m1 bench genrm`: judged items per second through `m1 serve model`, against un-batched engine calls.

The workload is the five-grade judge's real prompts (held-out labelled responses to math, logic and
general items) sent as chat requests by 1, 8 and 32 concurrent clients to `m1 serve model` running in
its own process (one torch thread), with two sets of output lengths: the judge's own (``max_tokens`` 8
for every item: 'Grade: N' + EOS) and heavy-tailed ones (each item its own ``max_tokens``, log-normal
with median 16, clipped to 2..256: what continuous batching is for; 256 items, eight per client at 32
clients). The baseline, measured in the same run, is what a user would write without a server: the
same model in this process (one torch thread), the same chat-template tokenisation, greedy settings and
per-item ``max_tokens``, one `Engine.generate` call per item, in sequence. Both sides generate exactly
the same tokens, so the ratio measures batching and serving, not different amounts of work. Reported:
items/s and its ratio to the baseline and p50/p99 latency per item, with plain requests (what the
judge's clients send); then the same requests streamed: items/s and p50/p99 time to first token (the
first event with content; the baseline streams nothing, its first token comes with its answer); and the
server's mean batch per engine step (from /health). `m1 bench engine` compares continuous with static
batching on one engine.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Annotated

import httpx
import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from flows.bench import app
from flows.bench.engine import heavy_tailed_lengths
from flows.bench.load import LoadMeter, print_start


async def _drive(
    url: str, bodies: list[dict], clients: int, stream: bool
) -> tuple[float, list[float], list[float], int]:
    """(seconds, per-request time to first token, per-request latencies, failures) for the bodies sent by
    ``clients`` concurrent clients; streamed, the first token is the first event with content, else it
    comes with the answer. The clients (one keep-alive connection each) are made and connected before the
    clock starts: building an httpx client loads certificates, tens of milliseconds that are the
    benchmark's, not the server's."""
    queue = iter(bodies)
    ttft: list[float] = []
    latencies: list[float] = []
    failures = 0
    pool = [httpx.AsyncClient(base_url=url, timeout=600) for _ in range(clients)]
    await asyncio.gather(*(c.get("/models") for c in pool))  # connect before the clock starts

    async def one(client: httpx.AsyncClient, body: dict) -> float | None:
        """Send one request; the time its first token arrived (None: failed)."""
        if not stream:
            r = await client.post("/chat/completions", json=body)
            return time.perf_counter() if r.status_code == 200 else None
        first = None
        async with client.stream("POST", "/chat/completions", json=body | {"stream": True}) as r:
            async for line in r.aiter_lines():
                if first is None and line.startswith("data: {"):
                    event = json.loads(line[6:])
                    if "error" in event:
                        return None
                    choice = event["choices"][0]
                    if choice["delta"].get("content") or choice["finish_reason"]:
                        first = time.perf_counter()
        return first if r.status_code == 200 else None

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal failures
        for body in queue:
            t0 = time.perf_counter()
            first = await one(client, body)
            failures += first is None
            latencies.append(time.perf_counter() - t0)
            ttft.append((first or time.perf_counter()) - t0)

    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in pool))
        return time.perf_counter() - t0, ttft, latencies, failures
    finally:
        await asyncio.gather(*(c.aclose() for c in pool))


def _judge_checkpoint(folder: Path) -> Path:
    """A fresh judge-sized model with a tokenizer trained on judge prompts (throughput does not depend on
    what the weights learned, only on their shapes and the tokens generated)."""
    # heavy: torch, transformers, polars; not at m1 start-up
    from flows.config import GenRMConfig
    from flows.genrm.labels import labelled_set
    from flows.genrm.train_judge import grade_examples
    from flows.model_settings import fresh_model
    from m1model.policy import save_policy
    from m1model.tokenizer import train_tokenizer

    g = GenRMConfig()
    texts = [e.message for e in grade_examples(labelled_set(40, 20, 40, seed=99))]
    tokenizer = train_tokenizer(texts, vocab_size=g.judge_model.vocab_size)
    return save_policy(fresh_model(g.judge_model, tokenizer), tokenizer, folder)


@app.command("genrm")
def bench_genrm(
    checkpoint: Annotated[
        Path | None, typer.Option(help="Judge checkpoint (default: a fresh judge-sized model).")
    ] = None,
    items: Annotated[int, typer.Option(min=8, help="Judged items per concurrency level.")] = 64,
    heavy_items: Annotated[
        int,
        typer.Option(
            min=8,
            help="Items per level of the heavy-tailed workload: several per client, or the longest one's "
            "lone tail dominates a closed workload.",
        ),
    ] = 256,
    concurrency: Annotated[str, typer.Option(help="Concurrent clients, comma-separated.")] = "1,8,32",
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens per judgment ('Grade: N' + EOS).")] = 8,
    workloads: Annotated[
        str, typer.Option(help="Comma-separated: judge, heavy-tailed.")
    ] = "judge,heavy-tailed",
) -> None:
    """Judge throughput through `m1 serve model` at 1/8/32 clients vs sequential engine calls, with the
    judge's output lengths and with heavy-tailed ones; time to first token and latency percentiles."""
    # heavy: torch, transformers, scipy; not at m1 start-up
    import torch

    from flows.genrm.labels import labelled_set
    from flows.genrm.serve import MODEL_NAME, served_judge
    from flows.genrm.train_judge import chat_ids, grade_examples
    from m1model import Engine, SamplingParams
    from m1model.policy import load_policy

    levels = [int(c) for c in concurrency.split(",") if c.strip()]
    kinds = [w.strip() for w in workloads.split(",") if w.strip()]
    console = Console()
    print_start(console)
    meter = LoadMeter()
    torch.set_num_threads(1)
    tables = []
    with tempfile.TemporaryDirectory(prefix="m1-bench-genrm-") as tmp:
        folder = checkpoint or _judge_checkpoint(Path(tmp) / "judge")
        n = max(items, heavy_items)
        every = [e.message for e in grade_examples(labelled_set(n, n // 2, n, seed=7))]
        model, tokenizer = load_policy(folder)
        engine = Engine(model)
        with served_judge(folder, export_env=False) as url:
            warm = [{"model": MODEL_NAME, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}]
            asyncio.run(_drive(url, warm * 4, 2, stream=True))  # warm-up
            for kind in kinds:
                messages = every[: items if kind == "judge" else heavy_items]
                lengths = (
                    [max_tokens] * len(messages)
                    if kind == "judge"
                    else heavy_tailed_lengths(len(messages), np.random.default_rng(3))
                )
                baseline = f"{kind}: engine, sequential (baseline)"
                base_lat = []
                with meter.side(baseline):  # one engine call per item, same tokens and settings as the server
                    t0 = time.perf_counter()
                    for m, n in zip(messages, lengths, strict=True):
                        params = SamplingParams(
                            temperature=0.0, max_tokens=n, stop_token_ids=(tokenizer.eos_token_id,)
                        )
                        t = time.perf_counter()
                        engine.generate([chat_ids(tokenizer, m)], params)
                        base_lat.append(time.perf_counter() - t)
                    base_s = time.perf_counter() - t0
                base_rate = len(messages) / base_s
                bodies = [
                    {
                        "model": MODEL_NAME,
                        "messages": [{"role": "user", "content": m}],
                        "max_tokens": n,
                        "temperature": 0,
                    }
                    for m, n in zip(messages, lengths, strict=True)
                ]
                # per row: mode, failed, items/s, ratio, latencies, streamed items/s, TTFT, mean batch
                rows = [(baseline, "-", base_rate, 1.0, base_lat, None, base_lat, "1.0")]
                for c in levels:
                    before = httpx.get(url.removesuffix("/v1") + "/health").json()["batching"]
                    side = f"{kind}: m1 serve model, {c} clients"
                    with meter.side(side):  # the server is a child: its CPU is ours
                        seconds, _, lat, failures = asyncio.run(_drive(url, bodies, c, stream=False))
                    after = httpx.get(url.removesuffix("/v1") + "/health").json()["batching"]
                    with meter.side(f"{side}, streamed"):
                        streamed_s, ttft, _, streamed_failures = asyncio.run(
                            _drive(url, bodies, c, stream=True)
                        )
                    steps = after["steps"] - before["steps"]
                    batch = (after["step_sequences"] - before["step_sequences"]) / max(steps, 1)
                    rate = (len(bodies) - failures) / seconds
                    streamed = (len(bodies) - streamed_failures) / streamed_s
                    rows.append(
                        (
                            side,
                            str(failures + streamed_failures),
                            rate,
                            rate / base_rate,
                            lat,
                            streamed,
                            ttft,
                            f"{batch:.1f}",
                        )
                    )
                title = f"judged items/s, {kind}: {len(messages)} judge prompts, max_tokens " + (
                    f"{max_tokens} each"
                    if kind == "judge"
                    else f"median {int(np.median(lengths))}, max {max(lengths)}"
                )
                tables.append((title, baseline, rows))

    for title, baseline, rows in tables:
        table = Table(title=title)
        cols = ("mode", "failed", "items/s", "vs baseline", "p50 ms", "p99 ms", "streamed items/s")
        for col in (*cols, "TTFT p50 ms", "TTFT p99 ms", "mean batch per step"):
            table.add_column(col, justify="left" if col == "mode" else "right", no_wrap=col == "mode")
        for mode, failed, rate, ratio, lat, streamed, ttft, batch in rows:
            ms, ttft_ms = np.asarray(lat) * 1000, np.asarray(ttft) * 1000
            table.add_row(
                mode,
                failed,
                f"{rate:.1f}",
                meter.ratio(baseline, mode, ratio),
                f"{np.percentile(ms, 50):.0f}",
                f"{np.percentile(ms, 99):.0f}",
                "-" if streamed is None else f"{streamed:.1f}",
                f"{np.percentile(ttft_ms, 50):.0f}",
                f"{np.percentile(ttft_ms, 99):.0f}",
                batch,
            )
        console.print(table)
    console.print(meter.summary(), highlight=False)
