"""Run under torchrun with 2 ranks (gloo) by test_distributed.py: data-parallel steps against the
single-process step on the same global batch. Rank 0 writes both results to OUT/<case>.pt."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest import make_tiny_model  # noqa: E402
from test_two_ranks_in_process import config, distinct_tokens, pool, share  # noqa: E402

from m1model import Engine  # noqa: E402
from m1model.rl import distributed  # noqa: E402
from m1model.rl.rollout import RolloutBatch  # noqa: E402
from m1model.rl.sft import SFTConfig, sft_warm_start  # noqa: E402
from m1model.rl.trainer import RLTrainer  # noqa: E402


def model() -> torch.nn.Module:
    """Top-2 routing, so the router's weights get a real gradient (top-1 of renormalised weights has none)."""
    return make_tiny_model(0, num_experts_per_tok=2)


def sgd(trainer: RLTrainer) -> None:
    """Plain SGD: AdamW's first steps are ~sign(gradient), blind to a wrongly scaled loss."""
    trainer.optimizer = torch.optim.SGD(trainer.model.parameters(), lr=0.5)


def rl_case(ctx, algorithm: str, strategy: str) -> dict:
    policy = model()
    single = RLTrainer(policy, Engine(policy), distinct_tokens, pool(), config(algorithm))
    batch = single.rollout()  # the global batch, generated identically on both ranks
    ranked_model = copy.deepcopy(policy)
    engine = distributed.replica_engine(ranked_model) if strategy == "fsdp" else Engine(ranked_model)
    ranked = RLTrainer(
        ranked_model, engine, distinct_tokens, pool(), config(algorithm), dist=ctx, strategy=strategy
    )
    sgd(single), sgd(ranked)
    local = RolloutBatch(groups=share(batch.groups, ctx.rank, ctx.world_size))
    ranked_metrics = ranked.update(local)
    ranked.push_weights()
    ranked_weights = ranked.parallel.full_state_dict()
    single_metrics = single.update(batch)
    pushed = engine.model.state_dict() if strategy == "fsdp" else ranked_weights
    return {
        "single": policy.state_dict(),
        "ranked": ranked_weights,
        "pushed": pushed,
        "metrics": (single_metrics, ranked_metrics),
    }


def sft_case(ctx) -> dict:
    examples = [([1, 5 + i % 4, 6], [9 + i % 3, 10, 2][: 1 + i % 3]) for i in range(10)]
    # The single process pads each batch whole; the ranks cut theirs into micro-batches of like length
    # (overhead 0), so they run different numbers of them and the rank with fewer runs dummy backwards.
    whole = SFTConfig(steps=3, lr=1e-2, batch_size=6, seed=1, micro_batch_overhead_tokens=10**9)
    cut = SFTConfig(steps=3, lr=1e-2, batch_size=6, seed=1, micro_batch_overhead_tokens=0)
    policy = model()
    ranked_model = copy.deepcopy(policy)
    single = sft_warm_start(policy, examples, whole)
    ranked = sft_warm_start(ranked_model, examples, cut, parallel=distributed.DataParallel(ranked_model, ctx))
    return {"single": policy.state_dict(), "ranked": ranked_model.state_dict(), "metrics": (single, ranked)}


def main() -> None:
    torch.set_num_threads(1)
    out = Path(sys.argv[1])
    ctx = distributed.init_from_env()
    assert ctx.world_size == 2, ctx
    cases = {
        "cispo": lambda: rl_case(ctx, "cispo", "ddp"),
        "dapo": lambda: rl_case(ctx, "dapo", "ddp"),
        "cispo-fsdp": lambda: rl_case(ctx, "cispo", "fsdp"),
        "sft": lambda: sft_case(ctx),
    }
    for name, run in cases.items():
        result = run()
        if ctx.is_main:
            torch.save(result, out / f"{name}.pt")
    distributed.shutdown()


if __name__ == "__main__":
    main()
