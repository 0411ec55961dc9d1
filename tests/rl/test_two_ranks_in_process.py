"""Two ranks (gloo, CPU) where the pytest process itself is rank 0 and a child process
(rank1_in_process_peer.py) is rank 1: the multi-rank paths of `m1model.rl.distributed` and of
`RLTrainer` (collectives, DDP and FSDP2, update, gather, save and resume) against the single-process
update on the same global batch, as tests/rl/dist_worker.py does under torchrun.

Why it exists: mutation testing (mutmut) counts a test only against the functions the pytest process
itself executed, so the torchrun tests (test_distributed.py, slow; they remain the end-to-end check)
kill no mutant of these paths. Here rank 0's calls run in the pytest process, and rank 1 inherits the
environment, so the mutant that mutmut selects (MUTANT_UNDER_TEST) runs on both ranks.

It is one test on purpose: mutmut credits what a module fixture runs to the first test alone (and
what a fixture's teardown runs to none), so the calls, `shutdown` included, and every assertion about
them are in the same test; the fixture only starts rank 1 and cleans up.
"""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist

import m1model
from m1model import Engine
from m1model.rl import distributed
from m1model.rl.distributed import DistContext
from m1model.rl.losses import LossConfig
from m1model.rl.rollout import PromptPool, RolloutBatch
from m1model.rl.trainer import RLConfig, RLTrainer

PEER = Path(__file__).with_name("rank1_in_process_peer.py")
GROUPS, UPDATES = 6, 2
TIMEOUT_S = 60  # gloo's limit on every collective: a rank left waiting by a bug fails instead of hanging

# -- what both ranks run (rank 1 and dist_worker.py import these; the model is conftest's make_tiny_model) --


def config(algorithm: str = "cispo") -> RLConfig:
    """Both two-rank tests' (dist_worker.py imports it): one group per micro-batch, so the ranks run
    different numbers of them; the second update is off-policy, so the clipping differs by algorithm."""
    return RLConfig(
        algorithm=algorithm,
        group_size=4,
        prompts_per_step=GROUPS,
        lr=2e-2,
        updates_per_batch=UPDATES,
        max_new_tokens=6,
        loss=LossConfig(eps_is_high=0.5, eps_high=0.1, eps_low=0.1),
        dynamic_sampling=False,
        micro_batch_size=4,
        seed=5,
    )


def pool() -> PromptPool:
    prompts = [[1 + (i % 5), 10 + (i % 7), 2, 3 + i % 4] for i in range(12)]
    return PromptPool(prompts=prompts, items=[{"i": i} for i in range(12)])


def distinct_tokens(items, responses):
    """A reward that varies within a group: the share of distinct tokens in the response."""
    return [len(set(r)) / max(len(r), 1) for r in responses]


def tiny(make_model, seed: int = 0):
    return make_model(seed, num_experts_per_tok=2)  # top-2: the router gets a real gradient


def sgd(trainer: RLTrainer) -> None:
    """SGD shows a wrongly scaled loss (AdamW's first steps do not); momentum gives it a state to save."""
    trainer.optimizer = torch.optim.SGD(trainer.model.parameters(), lr=0.5, momentum=0.9)


def single_trainer(make_model) -> RLTrainer:
    policy = tiny(make_model)
    return RLTrainer(policy, Engine(policy), distinct_tokens, pool(), config())


def share(groups: list, rank: int, world: int) -> list:
    """Rank's part of each single-process minibatch, so minibatch u is the same set of groups."""
    out = []
    for chunk in np.array_split(np.arange(len(groups)), UPDATES):
        out += [groups[i] for i in np.array_split(chunk, world)[rank]]
    return out


def run_rank(ctx: DistContext, root: Path, batch: RolloutBatch, make_model) -> dict:
    """Every call whose result the test checks, in the same order on both ranks."""
    out = {"ctx": ctx, "current": distributed.current(), "device": ctx.device}
    # 0.1 and 2**25 + 1 are not float32 numbers: the sums are float64 ones.
    out["sum"] = ctx.sum(1 + ctx.rank, 10 * (1 + ctx.rank), 0.1, 2**25 + ctx.rank)
    # 0.1 + 2r: max 2.1, sum 2.2, min 0.1 and rank 0's own 0.1 all differ; -1 - r: the max is rank 0's.
    out["max"] = [ctx.max(0.1 + 2 * ctx.rank), ctx.max(-1.0 - ctx.rank)]
    out["all_true"] = [ctx.all_true(v) for v in (True, ctx.rank == 0, ctx.rank == 1, False)]
    out["gather"] = ctx.gather(f"rank {ctx.rank}")
    ctx.barrier()
    for strategy in distributed.STRATEGIES:
        out[strategy] = ranked_case(ctx, root / strategy, batch, make_model, strategy)
    return out


def ranked_case(ctx: DistContext, root: Path, batch: RolloutBatch, make_model, strategy: str) -> dict:
    def trainer(seed: int) -> RLTrainer:
        model = tiny(make_model, seed)
        engine = distributed.replica_engine(model) if strategy == "fsdp" else Engine(model)
        t = RLTrainer(model, engine, distinct_tokens, pool(), config(), dist=ctx, strategy=strategy)
        sgd(t)
        return t

    ranked = trainer(0)
    res = {"rollout": [g.index for g in ranked.gather(ranked.rollout()).groups]}
    mine = share(batch.groups, ctx.rank, ctx.world_size)
    local = RolloutBatch(groups=mine, sampled_groups=mine[::-1], rounds=1 + ctx.rank)
    gathered = ranked.gather(local)
    res["gathered"] = ([g.index for g in gathered.groups], [g.index for g in gathered.sampled_groups])
    res["rounds"] = gathered.rounds

    comm0 = distributed.comm_seconds()
    res["metrics"] = ranked.update(RolloutBatch(groups=mine))
    res["comm"] = distributed.comm_seconds() - comm0
    ranked.push_weights()
    # Copies: with DDP these are the live tensors, which the last updates below change.
    res["weights"] = copy.deepcopy(dict(ranked.parallel.full_weights()))
    res["state"] = copy.deepcopy(ranked.parallel.full_state_dict())
    res["pushed"] = copy.deepcopy(ranked.engine.model.state_dict())
    res["optimizer"] = copy.deepcopy(ranked.parallel.optimizer_state_dict(ranked.optimizer))
    comm0 = distributed.comm_seconds()
    with ranked.parallel.accumulate(last=True):  # a lone backward: DDP's all-reduce hook times itself
        ranked.parallel.dummy_backward()
    res["hook_comm"] = distributed.comm_seconds() - comm0

    torch.manual_seed(100 + ctx.rank)  # each rank's own RNG state, to see that each resumes its own
    path = ranked.save(root)
    ctx.barrier()  # rank 0 has written the checkpoint: every rank may read it
    res["draws"] = torch.rand(3)
    resumed = trainer(1)
    res["resumed"] = resumed.resume(path)
    res["resumed_draws"] = torch.rand(3)
    res["resumed_weights"] = copy.deepcopy(dict(resumed.parallel.full_weights()))
    res["resumed_pushed"] = copy.deepcopy(resumed.engine.model.state_dict())
    res["resumed_optimizer"] = copy.deepcopy(resumed.parallel.optimizer_state_dict(resumed.optimizer))
    for t in (ranked, resumed):  # one more update each: the resumed trainer takes the same step
        t.update(RolloutBatch(groups=mine))
    res["next"], res["resumed_next"] = (dict(t.parallel.full_weights()) for t in (ranked, resumed))
    return res


# -- rank 0: this process -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank: int, port: int) -> dict[str, str]:
    return {
        "RANK": str(rank),
        "WORLD_SIZE": "2",
        "LOCAL_RANK": str(rank),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    """Rank 1, started (it imports while this process computes the reference) and killed at the end
    whatever happens; this process's environment, threads, RNG and process group are restored."""
    root = tmp_path_factory.mktemp("two-ranks")
    port = free_port()
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    log = (root / "rank1.log").open("w")
    env = os.environ | rank_env(1, port)
    # The same m1model as this process (a mutated copy, under mutmut).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(m1model.__file__).parents[1]), env.get("PYTHONPATH")) if p
    )
    proc = subprocess.Popen(
        [sys.executable, str(PEER), str(root), str(TIMEOUT_S)], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        with pytest.MonkeyPatch.context() as mp:
            for key, value in rank_env(0, port).items():
                mp.setenv(key, value)
            mp.delenv("LOCAL_RANK")  # rank 0 checks the default (0), rank 1 reads its own (1)
            torch.set_num_threads(1)
            yield proc, root
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.close()
        if dist.is_initialized():  # the test failed before `shutdown`
            dist.destroy_process_group()
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)


def momenta(state: dict, names: list[str]) -> dict[str, torch.Tensor]:
    """SGD's momentum buffers by parameter name (torch's own state dict numbers the parameters)."""
    return {names[k] if isinstance(k, int) else k: s["momentum_buffer"] for k, s in state["state"].items()}


def assert_close(a: dict, b: dict, atol: float) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=atol, rtol=1e-5 if atol else 0, msg=key)


def test_two_ranks_equal_one_process_and_share_collectives(peer, new_tiny_model):
    proc, root = peer
    reference = single_trainer(new_tiny_model)
    batch = reference.rollout()  # the global batch; rank 1 generates the same one
    sgd(reference)
    single = reference.update(batch)
    names = [name for name, _ in reference.model.named_parameters()]
    single_weights = {name: p.detach() for name, p in reference.model.named_parameters()}
    single_momenta = momenta(reference.optimizer.state_dict(), names)

    try:
        ctx = distributed.init_from_env(timeout_s=TIMEOUT_S)
    except Exception as exc:  # rank 1 never joined: its log says why (an import error, a crash)
        pytest.fail(f"rank 1 did not join ({exc}); its log: {(root / 'rank1.log').read_text()[-4000:]}")
    rank0 = run_rank(ctx, root, batch, new_tiny_model)
    distributed.shutdown()
    assert not dist.is_initialized() and distributed.current() == distributed.SINGLE
    distributed.shutdown()  # again: nothing left to leave
    assert proc.wait(timeout=TIMEOUT_S) == 0, (root / "rank1.log").read_text()[-4000:]
    ranks = [rank0, torch.load(root / "rank1.pt", weights_only=False)]

    order = [g.index for g in batch.groups]
    shares = [[g.index for g in share(batch.groups, r, 2)] for r in range(2)]
    for r, res in enumerate(ranks):
        assert res["ctx"] == res["current"] == DistContext(rank=r, world_size=2, local_rank=r)
        assert res["ctx"].enabled and res["ctx"].is_main == (r == 0) and res["device"] == torch.device("cpu")
        assert res["sum"] == [3.0, 30.0, 0.2, 2**26 + 1]
        assert res["max"] == [2.1, -1.0]
        assert res["all_true"] == [True, False, False, False]
        assert res["gather"] == ["rank 0", "rank 1"]
        for strategy in ("ddp", "fsdp"):
            s = res[strategy]
            where = f"rank {r}, {strategy}"
            # Rank r samples every second prompt of the single-process draw; gathered in rank order.
            assert s["rollout"] == order[0::2] + order[1::2], where
            assert s["gathered"] == (shares[0] + shares[1], shares[0][::-1] + shares[1][::-1]), where
            assert s["rounds"] == 1, where  # rank 0's
            # The update equals the single-process one on the global batch: same loss, same global
            # gradient norm (a wrongly scaled loss or a rank-local norm shows), same weights and momenta.
            assert s["metrics"]["skipped_updates"] == 0, where
            assert s["metrics"].keys() == single.keys(), where
            for key, value in single.items():
                assert s["metrics"][key] == pytest.approx(value, rel=1e-5, abs=1e-7), f"{where}: {key}"
            assert_close(s["weights"], single_weights, atol=1e-6)
            assert s["comm"] > 0, where
            assert (s["hook_comm"] > 0) == (strategy == "ddp"), where
            # Whole weights and optimizer state: on every rank with DDP, on rank 0 alone with FSDP.
            whole = r == 0 or strategy == "ddp"
            if whole:
                assert_close(s["state"], reference.model.state_dict(), atol=1e-6)
                assert_close(momenta(s["optimizer"], names), single_momenta, atol=1e-6)
            else:
                assert s["state"] == {} and s["optimizer"] == {}, where
            assert_close(s["pushed"], s["state"] if whole else ranks[0][strategy]["state"], atol=0)
            # Saved and resumed: the same weights, momenta, and this rank's own RNG stream.
            assert s["resumed"], where
            assert torch.equal(s["resumed_draws"], s["draws"]), where
            assert_close(s["resumed_weights"], s["weights"], atol=0)
            assert_close(s["resumed_pushed"], s["pushed"], atol=0)
            if whole:
                assert_close(momenta(s["resumed_optimizer"], names), momenta(s["optimizer"], names), atol=0)
            else:
                assert s["resumed_optimizer"] == {}, where
            assert_close(s["resumed_next"], s["next"], atol=0)
    # The ranks' RNG streams differ, so resuming each rank's own one is a real check.
    assert not torch.equal(ranks[0]["ddp"]["draws"], ranks[1]["ddp"]["draws"])
