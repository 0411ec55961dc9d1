"""M1Config: transformers' `MiniMaxConfig` with small-scale defaults and the FP32 LM-head switch.

Subclassing (rather than copying) keeps every field name, type check and the config.json format identical,
so a checkpoint's config round-trips through `transformers.MiniMaxConfig` and vLLM unchanged. The only
additions: defaults sized for a CPU-trainable model, the MiniMax-Text-01 layer pattern (one softmax layer
after every seven lightning layers; transformers' own default alternates them), and `fp32_lm_head`.
"""

from __future__ import annotations

from huggingface_hub.dataclasses import strict
from transformers import MiniMaxConfig

LIGHTNING = "linear_attention"
SOFTMAX = "full_attention"


def hybrid_layer_types(num_layers: int, softmax_every: int = 8) -> list[str]:
    """MiniMax-Text-01's pattern: layers softmax_every-1, 2*softmax_every-1, ... use softmax attention."""
    return [SOFTMAX if (i + 1) % softmax_every == 0 else LIGHTNING for i in range(num_layers)]


@strict
class M1Config(MiniMaxConfig):
    """Configuration of the bundled hybrid lightning-attention MoE model (model_type "minimax").

    fp32_lm_head: compute the LM head and its softmax in FP32 even when the model runs in bf16 -- the
    M1 paper's fix for the training/inference probability mismatch (section 3.2). Not read by transformers,
    which ignores the extra key.
    """

    vocab_size: int = 8192
    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 8
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    head_dim: int | None = 32
    num_local_experts: int = 8
    num_experts_per_tok: int = 2
    block_size: int = 256
    fp32_lm_head: bool = True

    def __post_init__(self, **kwargs):
        if self.layer_types is None:
            self.layer_types = hybrid_layer_types(self.num_hidden_layers)
        super().__post_init__(**kwargs)
        self.validate_m1()

    def validate_m1(self) -> None:
        """Reject shapes the model cannot build, with the offending field named."""
        if len(self.layer_types) != self.num_hidden_layers:
            raise ValueError(
                f"layer_types has {len(self.layer_types)} entries but num_hidden_layers={self.num_hidden_layers}"
            )
        unknown = set(self.layer_types) - {LIGHTNING, SOFTMAX}
        if unknown:
            raise ValueError(
                f"layer_types: unknown kinds {sorted(unknown)} (use {LIGHTNING!r} or {SOFTMAX!r})"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads (GQA)")
        if self.tie_word_embeddings:
            raise ValueError("tie_word_embeddings is not supported (MiniMax keeps a separate LM head)")
        if not 1 <= self.num_experts_per_tok <= self.num_local_experts:
            raise ValueError("num_experts_per_tok must be between 1 and num_local_experts")

    @property
    def attn_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads
