"""vLLM behind the Engine interface, for rollouts on GPUs (extra `gpu`: pip install 'm1-pipeline[gpu]').

vLLM runs MiniMax checkpoints natively (architecture "MiniMaxForCausalLM" -> its MiniMaxText01 model with
Triton lightning-attention kernels), so this only loads the exported HF folder and maps parameters and
outputs. Three details keep it equivalent to `m1model.Engine`:
  * logprobs are the *policy* log-probs of the sampled tokens (`logprobs_mode="raw_logprobs"`: before
    temperature/top-p), as CISPO's importance ratio needs;
  * each prompt gets its own seed (`request_seed(seed, index)`, the engine's), so repeated prompts (a
    GRPO group) sample differently;
  * repetition truncation is applied to the finished output (vLLM has no such stop condition): the tokens
    and finish reason are the same as the engine's, only the compute past the cut is not saved.
vLLM's kernels differ from ours in small details (e.g. its lightning-layer norm eps), so its log-probs
differ slightly from the trainer's; `m1 model probe-precision` measures that kind of gap. Use a power-of-two
number of heads: only then does vLLM's ALiBi-style slope formula equal transformers' `get_slope_rate`.
The checkpoint's lightning decay tables (stored for transformers) are stripped into a sibling folder,
because vLLM recomputes them and has no parameters to load them into.

**Following the policy.** During RL the engine starts from the stage's start checkpoint and the trainer
pushes every update into it (`VLLMEngine.load_weights`), in memory: `WeightSync` is mixed into vLLM's
worker (``worker_extension_cls``) and called through `LLM.collective_rpc`; it hands the tensors, under
their checkpoint names, to vLLM's own `model.load_weights`, which maps them onto its fused layout
(q/k/v into ``qkv_proj``, experts into ``w13_weight``/``w2_weight``, the router in FP32). Every vLLM
parameter must receive a tensor, or the push fails instead of leaving part of the policy stale. The
prefix cache is reset after a push: cached KV blocks were computed with the old weights. Under torchrun
each rank runs its own engine in-process (``distributed_executor_backend="external_launcher"``); in one
process the engine core is kept in-process too, so the push passes tensors by reference.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import torch

from m1model.checkpoint import DECAY_TABLES
from m1model.engine import Completion, FinishReason, SamplingParams, request_seed


def vllm_view(checkpoint: Path) -> Path:
    """A copy of the checkpoint folder without the decay-table tensors, beside it.

    Named after the weight files' size and mtime, so a checkpoint rewritten in place (as training does)
    gets a fresh view instead of a stale one.
    """
    from safetensors.torch import load_file, save_file

    files = sorted(checkpoint.glob("*.safetensors"))
    stamp = hashlib.sha1(repr([(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]).encode())
    view = checkpoint.with_name(f".{checkpoint.name}.vllm-{stamp.hexdigest()[:12]}")
    if view.exists():
        return view
    tmp = view.with_name(view.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(
        checkpoint, tmp, ignore=shutil.ignore_patterns("*.safetensors", "*.safetensors.index.json")
    )
    tensors = {}
    for f in files:
        tensors.update(load_file(str(f)))
    kept = {k: v for k, v in tensors.items() if k.rsplit(".", 1)[-1] not in DECAY_TABLES}
    save_file(kept, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    tmp.rename(view)
    for stale in checkpoint.parent.glob(f".{checkpoint.name}.vllm-*"):
        if stale != view:
            shutil.rmtree(stale, ignore_errors=True)
    return view


def truncate_repetition(logprobs: list[float], run: int, prob: float) -> int | None:
    """Length at which `run` consecutive tokens each had probability > prob, or None."""
    threshold = math.log(prob)
    streak = 0
    for i, lp in enumerate(logprobs):
        streak = streak + 1 if lp > threshold else 0
        if streak >= run:
            return i + 1
    return None


_WRAPPERS = {"module", "_orig_mod", "_checkpoint_wrapped_module"}


def policy_weights(named: Iterable[tuple[str, torch.Tensor]]) -> list[tuple[str, torch.Tensor]]:
    """The trainer's parameters as (checkpoint name, tensor) for vLLM's `load_weights`.

    Our modules carry the HF checkpoint names already; what a training wrapper adds is removed here
    (``module.`` from DDP, ``_orig_mod.`` from torch.compile, ``_checkpoint_wrapped_module.`` from
    activation checkpointing) and decay tables, which vLLM recomputes, are left out."""
    out = []
    for name, tensor in named:
        parts = [p for p in name.split(".") if p not in _WRAPPERS]
        if parts[-1] not in DECAY_TABLES:
            out.append((".".join(parts), tensor.detach()))
    return out


class WeightSync:
    """Mixed into vLLM's worker (``LLM(worker_extension_cls=...)``): methods `LLM.collective_rpc` calls
    on each worker. ``self.model_runner.model`` is vLLM's model for the checkpoint."""

    def m1_load_weights(self, weights: list[tuple[str, torch.Tensor]]) -> list[str]:
        """Load the tensors with vLLM's own loader; return the vLLM parameters that received none."""
        model = self.model_runner.model
        loaded = model.load_weights(weights=weights)
        if loaded is None:  # a loader that does not report: nothing to check against
            return []
        return sorted(set(dict(model.named_parameters())) - set(loaded))


class VLLMEngine:
    """`generate(prompts, params) -> list[Completion]` with vllm.LLM; extra kwargs go to vllm.LLM.

    `load_weights(named_tensors)` replaces the running engine's weights with the trainer's."""

    def __init__(self, checkpoint: str | Path, dtype: str = "bfloat16", **llm_kwargs) -> None:
        import torch.distributed as dist
        from vllm import LLM

        checkpoint = Path(checkpoint)
        if not (checkpoint / "config.json").is_file():
            raise FileNotFoundError(f"{checkpoint}: no config.json (not a model checkpoint folder)")
        heads = json.loads((checkpoint / "config.json").read_text()).get("num_attention_heads", 1)
        if heads & (heads - 1):
            raise ValueError(
                f"{checkpoint}: {heads} attention heads; vLLM's lightning decay rates equal this model's only "
                "for a power-of-two head count (set model.num_attention_heads accordingly)"
            )

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            # One engine per torchrun rank, in this process, on this rank's GPU (data-parallel rollouts).
            llm_kwargs.setdefault("distributed_executor_backend", "external_launcher")
        else:  # keep the engine core in this process: the weight push then passes tensors by reference
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self.llm = LLM(
            model=str(vllm_view(checkpoint)),
            dtype=dtype,
            logprobs_mode="raw_logprobs",
            worker_extension_cls=f"{WeightSync.__module__}.{WeightSync.__qualname__}",
            **llm_kwargs,
        )

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Push the policy's weights into the running engine (no reload from disk)."""
        missing = self.llm.collective_rpc("m1_load_weights", args=(policy_weights(weights),))
        stale = sorted({name for per_worker in missing for name in per_worker})
        if stale:
            raise RuntimeError(
                f"vLLM parameters got no weights from the trainer ({', '.join(stale[:6])}): the engine would "
                "sample from a stale policy"
            )
        self.llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        if not prompts:
            return []
        import vllm
        from vllm.inputs import TokensPrompt

        requests = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        sampling = [
            vllm.SamplingParams(
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_tokens,
                stop_token_ids=list(params.stop_token_ids),
                seed=None if params.seed is None else request_seed(params.seed, i),
                logprobs=0,  # just the sampled token's log-prob
                ignore_eos=True,  # stop only on stop_token_ids, as m1model.Engine does
                detokenize=False,
            )
            for i in range(len(prompts))
        ]
        completions = []
        for out in self.llm.generate(requests, sampling, use_tqdm=False):
            seq = out.outputs[0]
            tokens = list(seq.token_ids)
            logprobs = [step[t].logprob for t, step in zip(tokens, seq.logprobs, strict=True)]
            completions.append(finish(tokens, logprobs, seq.finish_reason == "stop", params))
        return completions


def finish(tokens: list[int], logprobs: list[float], stopped: bool, params: SamplingParams) -> Completion:
    """A finished vLLM sequence as the bundled engine would have returned it: cut at the first run of
    ``repetition_run`` tokens above ``repetition_prob`` (the engine stops there; a stop token that
    completes such a run still counts as a stop, as in the engine)."""
    reason: FinishReason = "stop" if stopped else "length"
    cut = truncate_repetition(logprobs, params.repetition_run, params.repetition_prob)
    if cut is not None and not (stopped and cut == len(tokens)):
        tokens, logprobs, reason = tokens[:cut], logprobs[:cut], "repetition"
    return Completion(tokens, logprobs, reason)
