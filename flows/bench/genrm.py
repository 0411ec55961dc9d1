"""`m1 bench genrm`: judged items per second through `m1 serve model`, against un-batched engine calls.

The workload is the five-grade judge's real prompts (held-out labelled responses to math, logic and
general items) sent as chat requests by 1, 8 and 32 concurrent clients to `m1 serve model` running in its
own process (one torch thread). The baseline, measured in the same run, is what a user would write
without a server: the same model in this process (one torch thread), the same chat-template tokenisation
and greedy settings, one `Engine.generate` call per item, in sequence. Both sides generate exactly
``max_tokens`` tokens per item unless the judge stops earlier, so the ratio measures batching and serving,
not different amounts of work. Reported: items/s and its ratio to the baseline, p50/p99 latency per item,
and the server's mean engine batch (from /health).
"""

from __future__ import annotations

import asyncio
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
from flows.bench.load import LoadMeter, print_start


async def _drive(url: str, bodies: list[dict], clients: int) -> tuple[float, list[float], int]:
    """(seconds, per-request latencies, failures) for the bodies sent by ``clients`` concurrent clients.
    The clients (one keep-alive connection each) are made and connected before the clock starts: building
    an httpx client loads certificates, tens of milliseconds that are the benchmark's, not the server's."""
    queue = iter(bodies)
    latencies: list[float] = []
    failures = 0
    pool = [httpx.AsyncClient(base_url=url, timeout=600) for _ in range(clients)]
    await asyncio.gather(*(c.get("/models") for c in pool))  # connect before the clock starts

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal failures
        for body in queue:
            t0 = time.perf_counter()
            r = await client.post("/chat/completions", json=body)
            latencies.append(time.perf_counter() - t0)
            failures += r.status_code != 200

    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in pool))
        return time.perf_counter() - t0, latencies, failures
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
    concurrency: Annotated[str, typer.Option(help="Concurrent clients, comma-separated.")] = "1,8,32",
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens per judgment ('Grade: N' + EOS).")] = 8,
) -> None:
    """Judge throughput through `m1 serve model` at 1/8/32 clients vs sequential engine calls."""
    # heavy: torch, transformers, scipy; not at m1 start-up
    import torch

    from flows.genrm.labels import labelled_set
    from flows.genrm.serve import MODEL_NAME, served_judge
    from flows.genrm.train_judge import chat_ids, grade_examples
    from m1model import Engine, SamplingParams
    from m1model.policy import load_policy

    levels = [int(c) for c in concurrency.split(",") if c.strip()]
    console = Console()
    print_start(console)
    meter = LoadMeter()
    baseline = "engine, sequential (baseline)"
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="m1-bench-genrm-") as tmp:
        folder = checkpoint or _judge_checkpoint(Path(tmp) / "judge")
        messages = [e.message for e in grade_examples(labelled_set(items, items // 2, items, seed=7))][:items]
        model, tokenizer = load_policy(folder)

        # baseline: one engine call per item, in sequence, same tokens and settings as the server
        engine = Engine(model)
        params = SamplingParams(
            temperature=0.0, max_tokens=max_tokens, stop_token_ids=(tokenizer.eos_token_id,)
        )
        base_lat = []
        with meter.side(baseline):
            t0 = time.perf_counter()
            for m in messages:
                t = time.perf_counter()
                engine.generate([chat_ids(tokenizer, m)], params)
                base_lat.append(time.perf_counter() - t)
            base_s = time.perf_counter() - t0
        base_rate = len(messages) / base_s

        bodies = [
            {
                "model": MODEL_NAME,
                "messages": [{"role": "user", "content": m}],
                "max_tokens": max_tokens,
                "temperature": 0,
            }
            for m in messages
        ]
        rows = [(baseline, "-", base_rate, 1.0, base_lat, "1.0")]
        with served_judge(folder, export_env=False) as url:
            asyncio.run(_drive(url, bodies[:4], 2))  # warm-up
            for c in levels:
                before = httpx.get(url.removesuffix("/v1") + "/health").json()["batching"]
                with meter.side(f"m1 serve model, {c} clients"):  # the server is a child: its CPU is ours
                    seconds, lat, failures = asyncio.run(_drive(url, bodies, c))
                after = httpx.get(url.removesuffix("/v1") + "/health").json()["batching"]
                calls = after["engine_calls"] - before["engine_calls"]
                batch = (after["sequences"] - before["sequences"]) / max(calls, 1)
                rate = (len(bodies) - failures) / seconds
                rows.append(
                    (
                        f"m1 serve model, {c} clients",
                        str(failures),
                        rate,
                        rate / base_rate,
                        lat,
                        f"{batch:.1f}",
                    )
                )

    table = Table(title=f"judged items/s: {len(messages)} judge prompts, {max_tokens} tokens each")
    for col in ("mode", "failed", "items/s", "vs baseline", "p50 ms", "p99 ms", "mean engine batch"):
        table.add_column(col, justify="left" if col == "mode" else "right", no_wrap=col == "mode")
    for mode, failed, rate, ratio, lat, batch in rows:
        ms = np.asarray(lat) * 1000
        table.add_row(
            mode,
            failed,
            f"{rate:.1f}",
            meter.ratio(baseline, mode, ratio),
            f"{np.percentile(ms, 50):.0f}",
            f"{np.percentile(ms, 99):.0f}",
            batch,
        )
    console.print(table)
    console.print(meter.summary(), highlight=False)
