"""vLLM behind the Engine interface, for rollouts on GPUs (extra `gpu`: pip install 'm1-pipeline[gpu]').

vLLM runs MiniMax checkpoints natively (architecture "MiniMaxForCausalLM" -> its MiniMaxText01 model with
Triton lightning-attention kernels), so this only loads the exported HF folder and maps parameters and
outputs. Three details keep it equivalent to `m1model.Engine`:
  * logprobs are the *policy* log-probs of the sampled tokens (`logprobs_mode="raw_logprobs"`: before
    temperature/top-p), as CISPO's importance ratio needs;
  * each prompt gets its own seed (seed + index), so repeated prompts (a GRPO group) sample differently;
  * repetition truncation is applied to the finished output (vLLM has no such stop condition): the tokens
    and finish reason are the same as the engine's, only the compute past the cut is not saved.
vLLM's kernels differ from ours in small details (e.g. its lightning-layer norm eps), so its log-probs
differ slightly from the trainer's; `m1 model probe-precision` measures that kind of gap. Use a power-of-two
number of heads: only then does vLLM's ALiBi-style slope formula equal transformers' `get_slope_rate`.
The checkpoint's lightning decay tables (stored for transformers) are stripped into a sibling folder,
because vLLM recomputes them and has no parameters to load them into.
"""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path

from m1model.checkpoint import DECAY_TABLES
from m1model.engine import Completion, FinishReason, SamplingParams


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


class VLLMEngine:
    """`generate(prompts, params) -> list[Completion]` with vllm.LLM; extra kwargs go to vllm.LLM."""

    def __init__(self, checkpoint: str | Path, dtype: str = "bfloat16", **llm_kwargs) -> None:
        from vllm import LLM

        checkpoint = Path(checkpoint)
        if not (checkpoint / "config.json").is_file():
            raise FileNotFoundError(f"{checkpoint}: no config.json (not a model checkpoint folder)")
        self.llm = LLM(
            model=str(vllm_view(checkpoint)),
            dtype=dtype,
            logprobs_mode="raw_logprobs",
            **llm_kwargs,
        )

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        import vllm
        from vllm.inputs import TokensPrompt

        requests = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        sampling = [
            vllm.SamplingParams(
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_tokens,
                stop_token_ids=list(params.stop_token_ids),
                seed=None if params.seed is None else params.seed + i,
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
            reason: FinishReason = "stop" if seq.finish_reason == "stop" else "length"
            cut = truncate_repetition(logprobs, params.repetition_run, params.repetition_prob)
            if cut is not None:
                tokens, logprobs, reason = tokens[:cut], logprobs[:cut], "repetition"
            completions.append(Completion(tokens, logprobs, reason))
        return completions
