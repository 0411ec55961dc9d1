"""The model and training sections: the bundled model's size (`model`), RL and SFT settings with the
length-bias monitor (`train`, `train.length_bias`), and held-out evaluation (`eval`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from flows.config.base import Section


class ModelConfig(Section):
    """The bundled hybrid lightning-attention MoE model (MiniMax-Text-01/M1 architecture, tiny)."""

    hidden_size: int = 64
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 16
    intermediate_size: int = 96
    num_local_experts: int = 4
    num_experts_per_tok: int = 2
    # M1 puts one softmax layer after every seven lightning layers (8); the 4-layer default uses 4 so that
    # the tiny model is still hybrid: three lightning layers, then one softmax layer.
    softmax_every: int = Field(
        4, ge=1, description="one softmax-attention layer after every N-1 lightning layers"
    )
    vocab_size: int = Field(
        512, ge=259, description="BPE vocabulary: 256 byte symbols + 3 special tokens at least"
    )
    fp32_lm_head: bool = Field(True, description="the paper's precision fix: LM head in FP32")
    seed: int = 0


class LengthBiasConfig(Section):
    """Length-bias monitoring and mitigation for judge-scored domains (m1model/rl/length_bias.py)."""

    enabled: bool = Field(True, description="monitor reward-length correlation and length vs success trends")
    domains: list[str] = Field(default_factory=lambda: ["general"], description="domains scored by a judge")
    window: int = Field(4, ge=2, description="steps over which the trends are fitted")
    length_growth: float = Field(
        0.03, description="alarm: mean length grows faster than this per step (relative)"
    )
    success_growth: float = Field(0.01, description="... while success grows slower than this per step")
    min_corr: float = Field(0.1, description="... and reward-length Spearman exceeds this")
    alarm_ratio: float = Field(
        1.5, ge=0, description="... and responses average more than this multiple of their reference's length"
    )
    on_alarm: Literal["log", "lower_weight", "stop"] = "log"
    weight_factor: float = Field(0.5, gt=0, le=1, description="lower_weight: factor on the domain's weight")
    shaping: bool = Field(False, description="penalise judged responses longer than slack x the reference")
    shaping_coef: float = Field(0.5, ge=0, description="largest penalty (reward units)")
    shaping_slack: float = Field(1.5, ge=1, description="lengths up to slack x the reference's are free")
    group_normalize: bool = Field(False, description="normalise judged rewards within each prompt's group")
    clip_min: float | None = Field(None, description="clip judged rewards below (after shaping)")
    clip_max: float | None = Field(None, description="clip judged rewards above (after shaping)")


class TrainConfig(Section):
    algorithm: Literal["cispo", "grpo", "dapo", "rft"] = Field(
        "cispo", description="RL loss: cispo (the paper), grpo, dapo, or rft (rejection-sampling fine-tuning)"
    )
    # The bundled model learns to copy a stated number only after ~1000 steps of 16 (flows/experiments/
    # README.md); 500 stopped before any skill beyond the answer format, and RL had nothing to sharpen.
    sft_steps: int = Field(1200, ge=0)
    sft_lr: float = 3e-3
    # Measured on the bundled model (flows/experiments/README.md): 2e-3 collapses the format within 5
    # steps, 5e-4 leaves CISPO (no trust region) unstable under off-policy updates, 1e-4 learns steadily.
    rl_lr: float = 1e-4
    prompts_per_step: int = Field(16, ge=1)
    group_size: int = Field(8, ge=2, description="responses sampled per prompt (G)")
    max_new_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, gt=0)
    eps_is_low: float = Field(
        1e6, description="CISPO lower IS-weight bound: effectively none, as in the paper"
    )
    eps_is_high: float = Field(2.0, description="CISPO upper IS-weight bound")
    eps_low: float = Field(0.2, description="GRPO/DAPO clip range")
    eps_high: float = Field(0.28, description="DAPO clip-higher")
    updates_per_batch: int = Field(
        4, ge=1, description="off-policy updates per generated batch (each on prompts_per_step / N groups)"
    )
    dynamic_sampling: bool = True
    max_sampling_rounds: int = Field(
        3, ge=1, description="dynamic sampling: generation rounds to refill a batch"
    )
    unified_mask: bool = Field(
        False, description="CISPO with the PPO trust-region token mask (paper Eq. 6-7)"
    )
    sample_level: float = Field(
        0.0,
        ge=0,
        le=1,
        description="section 5: share of the sample-level mean mixed into token-level weights",
    )
    normalize_std: bool = Field(
        True, description="divide group-relative advantages by the group's reward std"
    )
    negative_weight: float = Field(
        1.0,
        ge=0,
        description="scale on negative advantages (1: as published; 0: positive reinforcement only)",
    )
    overlong_cache: int = Field(
        0, ge=0, description="DAPO soft overlong penalty over the window's last N tokens"
    )
    grad_clip: float = 1.0
    batch_size: int = 16
    micro_batch_size: int = Field(
        0,
        ge=0,
        description="sequences per forward pass of an RL update (gradients accumulate beyond); "
        "0: max(batch_size, group_size)",
    )
    seed: int = 0
    curriculum: str = Field(
        "tiny", description="bundled curriculum name (tiny, m1) or path to a curriculum TOML"
    )
    init_from: str | None = Field(
        None,
        description="HF checkpoint folder for the first stage; default: a fresh model with an SFT warm start",
    )
    torch_threads: int = Field(
        1,
        ge=0,
        description="intra-op CPU threads for training; 1 is fastest for tiny models, 0: torch's default",
    )
    checkpoint_every: int = Field(
        1, ge=0, description="save a resumable checkpoint every N RL steps (0: stage end)"
    )
    keep_checkpoints: int = Field(
        2,
        ge=1,
        description="step checkpoints a stage keeps as it goes, the newest (older ones are deleted once a "
        "newer one is complete)",
    )
    # M1 section 3.2 stops a response after 3000 tokens in a row each above p 0.99: a degenerate loop deep
    # in a 40K-80K window. Scaled down to the tiny windows (6 tokens) it stopped every confident answer
    # ("<answer>2</answer>" is 8 tokens above 0.99 once learnt): RL then scored sharpening as failure and
    # trained the model away from its right answers. A run must be far longer than any answer.
    repetition_run: int = Field(
        3000, ge=1, description="early truncation: stop after N consecutive tokens each above repetition_prob"
    )
    repetition_prob: float = Field(0.99, gt=0, lt=1)
    window_ppl_steps: int = Field(
        2, ge=1, description="steps over which generated perplexity must be stable before widening"
    )
    window_ppl_tol: float = Field(0.1, gt=0, description="relative perplexity change counted as stable")
    samples_per_step: int = Field(
        4, ge=0, description="responses with their rewards logged per step (samples.jsonl, artifact)"
    )
    tensorboard: bool = Field(False, description="also log step metrics for TensorBoard (extra `tb`)")
    length_bias: LengthBiasConfig = Field(
        LengthBiasConfig(), description="length-bias monitor and mitigations for judge-scored domains"
    )
    nproc: int = Field(
        1,
        ge=1,
        description="training processes: >1 launches torchrun (data parallel; gloo on CPU, nccl on GPUs)",
    )
    parallel: Literal["ddp", "fsdp"] = Field(
        "ddp", description="with nproc > 1: DDP (whole model per rank) or FSDP2 (parameters sharded)"
    )
    rollout: Literal["engine", "vllm"] = Field(
        "engine",
        description="rollout sampler: the bundled engine, or vLLM (extra gpu) with weights pushed per update",
    )
    vllm_gpu_memory: float = Field(
        0.3, gt=0, le=1, description="with rollout = vllm: share of each GPU vLLM takes (weights + KV cache)"
    )


class EvalConfig(Section):
    """Held-out evaluation: a fixed fraction of every dataset that training never sees."""

    fraction: float = Field(0.1, gt=0, lt=1, description="share of each dataset held out (by id hash)")
    fractions: dict[str, float] = Field(
        default_factory=lambda: {"general": 0.3},
        description="share held out per domain, where it differs from `fraction` (general 0.3: about 300 "
        "items, enough to tell a 3-4 point gain from 0 in one run, where 92 were not: flows/genrm/README.md)",
    )
    n_items: int = Field(1000, ge=1, description="held-out items evaluated per domain (at most)")
    max_new_tokens: int = Field(
        40, ge=1, description="greedy tokens per answer: at least every stage's window"
    )
    every: int = Field(0, ge=0, description="validate every N RL steps inside a stage (0: start and end)")
    overfit_tolerance: float = Field(
        0.02, ge=0, description="warn when training reward rises and validation falls by more than this"
    )

    @field_validator("fractions")
    @classmethod
    def _shares(cls, value: dict[str, float]) -> dict[str, float]:
        if bad := {d: f for d, f in value.items() if not 0 < f < 1}:
            raise ValueError(f"held-out shares must lie strictly between 0 and 1: {bad}")
        return value
