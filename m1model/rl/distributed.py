"""Data-parallel training with torch.distributed: the process group, the model's training view (DDP or
FSDP2), and the few collectives the trainer and the SFT warm start need to stay in lockstep.

Launch with torchrun (``m1 train stage NAME --nproc N`` does it): every rank runs the same program,
`init_from_env` joins the group (gloo on CPU, nccl on GPUs), and `DataParallel` wraps the model:

- ``ddp``: every rank holds the whole model; gradients are averaged by DDP's bucketed all-reduce,
  overlapped with the backward pass. The choice for models that fit one device.
- ``fsdp``: FSDP2 (`torch.distributed.fsdp.fully_shard`) per decoder layer and at the root: parameters,
  gradients and AdamW moments are sharded over ranks and all-gathered layer by layer for compute.

Both average gradients over ranks, so a rank's loss is scaled by the world size to make the result a
sum over ranks; the caller normalises the loss by *global* counts (see `RLTrainer.update`) so the
update equals the single-process update on the same global batch.

One process is the same code path with ``world_size == 1``: every collective below returns its input.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import functools
import os
import signal
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.distributed as dist

Strategy = Literal["ddp", "fsdp"]
STRATEGIES: tuple[str, ...] = ("ddp", "fsdp")

_COMM = [0.0]  # seconds this process has spent in collectives (see `comm_seconds`)


def comm_seconds() -> float:
    """Seconds this process has spent in collectives so far: the trainer's own (counts, gathers) and
    DDP's gradient all-reduces, each from launch to completion. DDP overlaps its all-reduces with the
    backward pass, so the share of a step spent waiting on communication is at most this."""
    return _COMM[0]


@contextlib.contextmanager
def _timed() -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _COMM[0] += time.perf_counter() - t0


def _timed_allreduce(process_group, bucket):
    """DDP's own all-reduce hook (average over ranks), with its duration added to `comm_seconds`."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    t0 = time.perf_counter()

    def done(fut):
        _COMM[0] += time.perf_counter() - t0
        return fut.value()

    return allreduce_hook(process_group, bucket).then(done)


@dataclass(frozen=True)
class DistContext:
    """This process's place in the group; ``world_size == 1`` means no group at all."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> torch.device:
        if self.enabled and dist.get_backend() == "nccl":
            return torch.device("cuda", self.local_rank)
        return torch.device("cpu")

    # -- collectives (identity in one process) ---------------------------------------------------------

    def sum(self, *values: float) -> list[float]:
        """Element-wise sum over ranks (float64, so integer counts stay exact)."""
        if not self.enabled:
            return [float(v) for v in values]
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        with _timed():
            dist.all_reduce(t)
        return t.tolist()

    def max(self, value: float) -> float:
        if not self.enabled:
            return float(value)
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        with _timed():
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t)

    def all_true(self, flag: bool) -> bool:
        """Whether ``flag`` holds on every rank: one decision for all, so no rank skips alone."""
        return self.max(0.0 if flag else 1.0) == 0.0

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (picklable), in rank order, on every rank."""
        if not self.enabled:
            return [obj]
        out: list[Any] = [None] * self.world_size
        with _timed():
            dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


SINGLE = DistContext()


def current() -> DistContext:
    """The context of the process group this process has joined (SINGLE when there is none)."""
    if not (dist.is_available() and dist.is_initialized()):
        return SINGLE
    return DistContext(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)))


def launched_by_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and "WORLD_SIZE" in os.environ)


def init_from_env(timeout_s: float = 1800) -> DistContext:
    """Join the group torchrun set up (RANK, WORLD_SIZE, MASTER_ADDR, ... in the environment): nccl when
    this node has GPUs, gloo otherwise. Returns SINGLE when not launched by torchrun."""
    if not launched_by_torchrun():
        return SINGLE
    if not dist.is_initialized():
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group("nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=timeout_s))
    return current()


def shutdown() -> None:
    """Leave the group together: every rank waits for the others before tearing it down. Rank 0 writes
    the outputs after the others are done, and a rank that closes its connections while a peer still
    holds the group open can die in gloo's teardown (SIGABRT) instead of exiting cleanly."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (PR_SET_PDEATHSIG), so a launcher killed
    with -9 leaves no orphaned workers writing into the checkpoints of the next run."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # not Linux: torchrun's own shutdown is all there is
        return
    parent = os.getppid()
    libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGKILL)


# -- the model's training view ---------------------------------------------------------------------------


class _TokenLogprobs(torch.nn.Module):
    """The model's log-prob methods as `forward`: DDP only runs its gradient bookkeeping through `forward`."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.policy = model

    def forward(self, *args, method: str = "token_logprobs", **kwargs):
        return getattr(self.policy, method)(*args, **kwargs)


def _layers(model: torch.nn.Module) -> Iterable[torch.nn.Module]:
    return model.model.layers


class DataParallel:
    """The training view of ``model`` on this rank.

    ``logprobs(ids, mask, return_entropy=False)`` and ``group_logprobs(...)`` (the model's methods) are
    the differentiable forwards (through DDP/FSDP when distributed); ``accumulate(last)`` is the
    context for one micro-batch's backward, which synchronises gradients only on the last micro-batch
    of an optimizer step. ``model`` itself stays the object callers hold: with DDP it keeps its whole
    weights (generation, validation and checkpoints use it as before); with FSDP its parameters become
    DTensor shards, so read them with `full_state_dict`.
    """

    def __init__(self, model: torch.nn.Module, ctx: DistContext = SINGLE, strategy: Strategy = "ddp"):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown data-parallel strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
        self.model, self.ctx, self.strategy = model, ctx, strategy
        self._ddp: torch.nn.parallel.DistributedDataParallel | None = None
        if not ctx.enabled:
            self.logprobs, self.group_logprobs = model.token_logprobs, model.group_logprobs
        elif strategy == "ddp":
            # Every parameter gets a gradient in every forward (MoE experts without tokens too, see
            # SparseMoE), so DDP needs no search for unused ones. Buffers (RoPE, decay slopes) are
            # constants: no need to broadcast them every forward.
            self._ddp = torch.nn.parallel.DistributedDataParallel(
                _TokenLogprobs(model),
                device_ids=[ctx.local_rank] if ctx.device.type == "cuda" else None,
                forward_sync_buffers=False,
            )
            self._ddp.register_comm_hook(None, _timed_allreduce)
            self.logprobs = self._ddp
            self.group_logprobs = functools.partial(self._ddp, method="group_logprobs")
        else:
            from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method

            for layer in _layers(model):
                fully_shard(layer)
            fully_shard(model)  # the root: embeddings, final norm, LM head
            register_fsdp_forward_method(model, "token_logprobs")
            register_fsdp_forward_method(model, "group_logprobs")
            self.logprobs, self.group_logprobs = model.token_logprobs, model.group_logprobs

    @property
    def sharded(self) -> bool:
        return self.ctx.enabled and self.strategy == "fsdp"

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    @contextlib.contextmanager
    def accumulate(self, last: bool) -> Iterator[None]:
        """Gradient accumulation: communicate only on the step's last micro-batch."""
        if self._ddp is not None and not last:
            with self._ddp.no_sync():
                yield
        elif self.sharded:
            self.model.set_requires_gradient_sync(last)
            yield
        else:
            yield

    def clip_grad_norm_(self, max_norm: float) -> float:
        """The global gradient norm (over every rank's shard), clipped in place."""
        norm = torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm)
        return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)

    # -- whole weights and optimizer state for checkpoints and rollout engines ---------------------------

    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """The whole model's state dict on CPU, on rank 0 (a collective under FSDP; other ranks get {})."""
        if not self.sharded:
            return self.model.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(
            self.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )

    def full_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """(checkpoint name, whole tensor) of every parameter, on every rank: what a rollout engine with
        its own copy of the policy loads after each update. The names are the HF checkpoint's (our
        modules use them), which is what vLLM's `load_weights` reads. A collective under FSDP."""
        for name, p in self.model.named_parameters():
            t = p.detach()
            yield name, (t.full_tensor() if hasattr(t, "full_tensor") else t)

    def load_full_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Load whole weights (every rank passes the same dict); FSDP keeps only this rank's shard."""
        if not self.sharded:
            self.model.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        set_model_state_dict(self.model, state, options=StateDictOptions(full_state_dict=True))

    def optimizer_state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """torch's own optimizer state dict; under FSDP the whole (gathered) one, keyed by parameter name."""
        if not self.sharded:
            return optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        return get_optimizer_state_dict(
            self.model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )

    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        if not self.sharded:
            optimizer.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        set_optimizer_state_dict(self.model, optimizer, state, options=StateDictOptions(full_state_dict=True))

    def dummy_backward(self, grouped: bool = False) -> None:
        """A zero-weighted forward and backward on one short row, for a rank that has no micro-batch left
        while others do: DDP and FSDP communicate inside forward/backward, so every rank must run the
        same number of them, through the same method (``grouped``: `group_logprobs`, which runs the
        layers twice, for FSDP's per-layer all-gathers). Its gradient is exactly zero."""
        device = next(iter(self.model.buffers()), torch.empty(0)).device
        ids = torch.zeros(1, 2, dtype=torch.long, device=device)
        ones = torch.ones_like(ids)
        if grouped:
            logp = self.group_logprobs(
                ids, ones, ids, ones.float(), torch.zeros(1, dtype=torch.long, device=device)
            )
        else:
            logp = self.logprobs(ids, ones)
        (logp.sum() * 0.0).backward()


def replica_engine(model: torch.nn.Module, **engine_settings):
    """An `Engine` over a whole copy of ``model`` (made before FSDP shards it), refreshed by the trainer
    after every update through its ``load_weights``: FSDP's shards cannot generate token by token without
    a collective per token, and ranks generate different lengths."""
    import copy

    from m1model.engine import Engine

    class ReplicaEngine(Engine):
        def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
            self.model.load_state_dict(dict(weights))

    return ReplicaEngine(copy.deepcopy(model), **engine_settings)
