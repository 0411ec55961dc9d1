"""The MiniMax-Text-01 / M1 hybrid model: lightning-attention and softmax-attention layers, sparse MoE.

The math follows transformers' `models/minimax/modeling_minimax.py` line for line (tests check logits
and greedy generations against it); what differs is how it is computed:
  * lightning layers call `kernels.lightning_attention` (chunked with a hand-written backward on CPU,
    Triton on CUDA) for prefill/training and `kernels.lightning_attn_decode` for generation, with a
    float32 [Dk, Dv] state per head;
  * softmax layers use torch SDPA with GQA; a cache (m1model/cache.py) keeps their keys and values: a
    dense buffer that grows by doubling, or the engine's blocks, and the lightning layers' states;
  * experts are run on tokens sorted by expert, one gather and one scatter per layer;
  * the LM head can run in FP32 (`config.fp32_lm_head`), and `token_logprobs` never materialises the
    [tokens x vocab] FP32 matrix (`kernels.selective_log_softmax`).
Left padding is supported everywhere: pads are zeroed before they enter a lightning state, masked out of
softmax attention, and RoPE positions count real tokens only, so a padded row gives the same result as the
unpadded sequence. Right padding without a cache needs none of that (no real token sees a later pad).
Module and parameter names equal the on-disk names of MiniMax checkpoints (see m1model/checkpoint.py).

Why one file over 400 lines: Hugging Face keeps a model in one `modeling_*.py`, and this one mirrors
transformers' modeling_minimax.py layer for layer (RMSNorm, the two attentions, the MoE, the decoder
layer, the model, the LM head), so the two read side by side and a change to one is checked against the
other in one place. What is not the model's math lives beside it: the config (config.py), the caches
(cache.py), checkpoint files (checkpoint.py), the kernels (kernels/).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

import kernels
from m1model.cache import M1Cache, StepBatch
from m1model.checkpoint import load_checkpoint, save_checkpoint
from m1model.config import LIGHTNING, M1Config


class RMSNorm(nn.Module):
    """Normalise in float32, scale in the input dtype (as MiniMaxRMSNorm)."""

    def __init__(self, size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(x, self.weight, self.eps)


def slope_rate(num_heads: int, layer_idx: int, num_layers: int) -> torch.Tensor:
    """Per-head decay rate s_h of one lightning layer (state decays by exp(-s_h) per token).

    ALiBi-style geometric rates base^(h+1) with base = 2^(-8/H), scaled by a factor that falls linearly
    from 1 at the first layer to ~0 at the last (deeper layers remember longer). MiniMax's get_slope_rate.
    """
    base = 1 / (2 ** (8 / num_heads))
    rate = base ** (torch.arange(num_heads) + 1)
    factor = 1 - layer_idx / (num_layers - 1 + 1e-5) + 1e-5
    return (rate * factor).float()


class LightningAttention(nn.Module):
    """Linear attention with per-head exponential decay, RMSNorm and a sigmoid output gate."""

    def __init__(self, config: M1Config, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_dim = config.attn_head_dim
        inner = self.num_heads * self.head_dim
        # MiniMax builds this norm with the class default eps (1e-6), not config.rms_norm_eps.
        self.norm = RMSNorm(inner)
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * inner, bias=False)
        self.out_proj = nn.Linear(inner, config.hidden_size, bias=False)
        self.output_gate = nn.Linear(config.hidden_size, inner, bias=False)
        self.register_buffer(
            "slope", slope_rate(self.num_heads, layer_idx, config.num_hidden_layers), persistent=False
        )

    def _apply(self, fn, recurse=True):
        # Keep the decay rates in float32 when the model is cast to bf16: exp(-s)^t over a long context
        # amplifies any rounding of s. (transformers casts them; vLLM keeps them in float32, as here.)
        slope = self.slope
        super()._apply(fn, recurse)
        self.slope = slope.to(self.slope.device)
        return self

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None, cache: M1Cache | None) -> torch.Tensor:
        B, T, _ = x.shape
        qkv = F.silu(self.qkv_proj(x))
        if pad_mask is not None:  # zero q, k, v at pads so they never enter the recurrent state
            qkv = qkv * pad_mask[..., None].to(qkv.dtype)
        q, k, v = (
            qkv.view(B, T, self.num_heads, 3 * self.head_dim).transpose(1, 2).split(self.head_dim, dim=-1)
        )
        if cache is None:
            o, _ = kernels.lightning_attention(q, k, v, self.slope)
        else:  # the cache folds the tokens into its state (a dense batch's, or each request's slot)
            o = cache.lightning(self.layer_idx, q, k, v, self.slope)
        o = self.norm(o.transpose(1, 2).reshape(B, T, -1))
        return self.out_proj(torch.sigmoid(self.output_gate(x)) * o)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class SoftmaxAttention(nn.Module):
    """Causal multi-head attention with RoPE and grouped-query KV heads."""

    def __init__(self, config: M1Config, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.attn_head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        attn_mask: torch.Tensor | None,
        cache: M1Cache | None,
    ) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rope
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is None:
            o = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, is_causal=attn_mask is None and T > 1, enable_gqa=True
            )
        else:  # the cache stores k, v (a dense buffer, or the request's blocks) and attends over the past
            o = cache.attend(self.layer_idx, q, k, v, attn_mask)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, -1))


class SparseMoE(nn.Module):
    """Top-k routed SwiGLU experts (Mixtral-style; MiniMax has no shared expert)."""

    def __init__(self, config: M1Config) -> None:
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.gate = nn.Linear(config.hidden_size, config.num_local_experts, bias=False)
        self.experts = nn.ModuleList(
            Expert(config.hidden_size, config.intermediate_size) for _ in range(config.num_local_experts)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = torch.softmax(self.gate(x).float(), dim=-1)
        top_w, top_i = probs.topk(self.top_k, dim=-1)
        top_w = top_w / top_w.sum(dim=-1, keepdim=True)
        # Sort the (token, slot) pairs by expert so each expert gets one contiguous slice.
        flat = top_i.flatten()
        order = flat.argsort(stable=True)
        token = order // self.top_k
        counts = torch.bincount(flat, minlength=len(self.experts)).tolist()
        routed = x[token].split(counts)
        # In training every expert joins the graph, with no tokens too, and gets a (zero) gradient: data-
        # parallel ranks then reduce the same set of gradients (FSDP2 needs it; DDP needs no search for
        # unused parameters), and AdamW steps every expert alike on one process and on many.
        train = torch.is_grad_enabled()
        outs = [expert(h) for expert, h in zip(self.experts, routed, strict=True) if h.shape[0] or train]
        # Weights are float32 (as in transformers): weight in float32, accumulate in the model dtype.
        y = torch.cat(outs) * top_w.flatten()[order, None]
        return x.new_zeros(x.shape).index_add(0, token, y.to(x.dtype)).view(shape)


class Expert(nn.Module):
    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(hidden, intermediate, bias=False)  # gate
        self.w3 = nn.Linear(hidden, intermediate, bias=False)  # up
        self.w2 = nn.Linear(intermediate, hidden, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    """MiniMax's block. Note the residual is taken *after* the norm and scaled by alpha, the branch by beta."""

    def __init__(self, config: M1Config, layer_idx: int) -> None:
        super().__init__()
        self.is_lightning = config.layer_types[layer_idx] == LIGHTNING
        if self.is_lightning:
            self.self_attn: nn.Module = LightningAttention(config, layer_idx)
            self.attn_alpha, self.attn_beta = config.linear_attn_alpha_factor, config.linear_attn_beta_factor
        else:
            self.self_attn = SoftmaxAttention(config, layer_idx)
            self.attn_alpha, self.attn_beta = config.full_attn_alpha_factor, config.full_attn_beta_factor
        self.mlp_alpha, self.mlp_beta = config.mlp_alpha_factor, config.mlp_beta_factor
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.block_sparse_moe = SparseMoE(config)

    def forward(self, x, *, pad_mask, rope, attn_mask, cache):
        h = self.input_layernorm(x)
        if self.is_lightning:
            a = self.self_attn(h, pad_mask, cache)
        else:
            a = self.self_attn(h, rope, attn_mask, cache)
        h = self.post_attention_layernorm(_scaled_sum(h, self.attn_alpha, a, self.attn_beta))
        return _scaled_sum(h, self.mlp_alpha, self.block_sparse_moe(h), self.mlp_beta)


def _scaled_sum(x: torch.Tensor, alpha: float, y: torch.Tensor, beta: float) -> torch.Tensor:
    """alpha x + beta y, skipping the multiplications by 1 (MiniMax's defaults): a full-size tensor
    pass each, forward and backward, for a result that is bitwise the same without them."""
    return (x if alpha == 1 else x * alpha) + (y if beta == 1 else y * beta)


class M1Model(nn.Module):
    def __init__(self, config: M1Config) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        rope = config.rope_parameters or {}
        if rope.get("rope_type", "default") != "default":
            raise ValueError(
                f"rope_parameters: only rope_type 'default' is supported, got {rope['rope_type']!r}"
            )
        dim = config.attn_head_dim
        theta = rope.get("rope_theta", config.default_theta)
        self.register_buffer(
            "inv_freq", 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), persistent=False
        )

    def _apply(self, fn, recurse=True):
        inv_freq = self.inv_freq  # stays float32: bf16-rounded frequencies drift the phases at long positions
        super()._apply(fn, recurse)
        self.inv_freq = inv_freq.to(self.inv_freq.device)
        return self

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: M1Cache | StepBatch | None = None,
    ) -> torch.Tensor:
        if isinstance(cache, StepBatch):  # an engine step: one flat row, each token's position given
            return self._layers(
                input_ids, pad_mask=None, rope=self._rope(cache.positions), attn_mask=None, cache=cache
            )
        B, T = input_ids.shape
        device = input_ids.device
        if attention_mask is not None and attention_mask.shape[1] != T:
            seen = cache.seen if cache is not None else 0
            if attention_mask.shape[1] != seen + T:
                raise ValueError(
                    f"attention_mask has {attention_mask.shape[1]} columns; expected {T} or {seen + T}"
                )
            attention_mask = attention_mask[:, -T:]
        mask = (
            torch.ones(B, T, dtype=torch.bool, device=device)
            if attention_mask is None
            else attention_mask.bool()
        )
        padded = attention_mask is not None and not bool(mask.all())
        if padded and cache is None and _right_padded(mask):
            # Right padding only (a training batch): causally no real token sees a pad, and RoPE positions
            # are the same, so the unpadded path gives the real positions' results without any masking.
            padded = False
        past = cache.mask if cache is not None and cache.mask is not None else mask.new_empty(B, 0)
        start = (
            cache.positions
            if cache is not None and cache.positions is not None
            else mask.new_zeros(B, dtype=torch.long)
        )
        # RoPE positions count real tokens only, so left padding does not shift the phases.
        positions = start[:, None] + mask.long().cumsum(1) - 1
        positions = positions.clamp(min=0)
        full_mask = torch.cat([past, mask], dim=1)
        attn_mask = None
        if padded or past.shape[1]:
            attn_mask = _softmax_mask(full_mask, T)
        rope = self._rope(positions)
        if cache is not None:
            cache.mask = full_mask
            cache.positions = start + mask.long().sum(1)

        return self._layers(
            input_ids, pad_mask=mask if padded else None, rope=rope, attn_mask=attn_mask, cache=cache
        )

    def _layers(self, input_ids, *, pad_mask, rope, attn_mask, cache) -> torch.Tensor:
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h, pad_mask=pad_mask, rope=rope, attn_mask=attn_mask, cache=cache)
        return self.norm(h)

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        dtype = self.embed_tokens.weight.dtype
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


def _right_padded(mask: torch.Tensor) -> bool:
    """Whether every row of a [B, T] real-token mask has its pads only after its real tokens."""
    return not bool((mask[:, 1:] > mask[:, :-1]).any())


def _softmax_mask(full_mask: torch.Tensor, T: int) -> torch.Tensor:
    """[B, 1, T, S] boolean: causal over the S = past + T positions, never a pad key.

    A query may always see itself, so a pad query's row is never empty (an all-masked row makes SDPA
    return NaN); pad rows' outputs are ignored downstream.
    """
    S = full_mask.shape[1]
    q_pos = torch.arange(S - T, S, device=full_mask.device)[:, None]
    k_pos = torch.arange(S, device=full_mask.device)[None, :]
    allowed = (k_pos <= q_pos)[None] & full_mask[:, None, :]
    allowed |= (k_pos == q_pos)[None]
    return allowed[:, None]


class M1Output(NamedTuple):
    logits: torch.Tensor
    cache: M1Cache | None


class M1ForCausalLM(nn.Module):
    """The causal LM. `forward` gives logits (and the cache); `token_logprobs` gives the log-probs RL needs."""

    def __init__(self, config: M1Config) -> None:
        super().__init__()
        self.config = config
        self.model = M1Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            nn.init.zeros_(module.weight[module.padding_idx])

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: M1Cache | None = None,
        use_cache: bool = False,
        last_only: bool = False,
    ) -> M1Output:
        """Logits [B, T, V] (FP32 if config.fp32_lm_head), and the updated cache when use_cache.

        attention_mask: [B, T], 1 for real tokens, 0 for padding (left or right). With a cache it may
            cover only the new tokens or, as in transformers, everything seen so far plus them.
        last_only: compute logits for the final position only (what decoding needs).
        """
        if use_cache and cache is None:
            cache = M1Cache()
        h = self.model(input_ids, attention_mask, cache)
        if last_only:
            h = h[:, -1:]
        return M1Output(self.logits(h), cache)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        if self.config.fp32_lm_head:
            return F.linear(h.float(), self.lm_head.weight.float())
        return self.lm_head(h)

    def token_logprobs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        return_entropy: bool = False,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """[B, T-1] float32 log pi(input_ids[:, t+1] | input_ids[:, :t+1]); differentiable.

        With fp32_lm_head the head and softmax run in FP32, chunk by chunk, without ever holding the
        [tokens x vocab] FP32 matrix; without it the logits are rounded to the model dtype first (the
        unfixed head, kept for the precision probe). Positions whose target token is padding are 0.
        return_entropy: also the [B, T-1] entropy of each next-token distribution (same pass, no extra
        forward), for watching entropy collapse in RL.
        positions: a [B, T-1] bool mask of the positions to score, the rest are 0: the LM head then runs
        only there (SFT scores a judge's six answer tokens after a prompt of hundreds).
        """
        h = self.model(input_ids, attention_mask)[:, :-1]
        labels = input_ids[:, 1:]
        if attention_mask is not None:
            labels = labels.masked_fill(~attention_mask[:, 1:].bool(), kernels.IGNORE_INDEX)
        if positions is None:
            return self._head_logprobs(h, labels, return_entropy)
        return self._scored_logprobs(h, labels, positions, return_entropy)

    def group_logprobs(
        self,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        response_ids: torch.Tensor,
        response_mask: torch.Tensor,
        prompt_index: torch.Tensor,
        return_entropy: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """[N, R] float32 log pi(response_ids[n, t] | prompt prompt_index[n], response_ids[n, :t]); 0 at pads.

        For responses that share prompts (RL groups): the prompts [P, Lp] (left-padded) run once, their
        per-layer states are repeated to the N response rows that continue them (the repeat sums their
        gradients back), and the responses [N, R] (right-padded) run on top. The values and gradients of
        `token_logprobs` on the concatenated rows, up to rounding, with a prompt's tokens run once per
        group instead of once per response. return_entropy as in `token_logprobs`.
        """
        real = response_mask.bool()
        if not bool(prompt_mask[:, -1].all()) or not _right_padded(real):
            raise ValueError("group_logprobs needs left-padded prompts and right-padded responses")
        cache = M1Cache()
        h_prompt = self.model(prompt_ids, prompt_mask, cache)[:, -1:]
        cache.select(prompt_index)
        h = self.model(
            response_ids, torch.cat([prompt_mask[prompt_index], real.to(prompt_mask.dtype)], dim=1), cache
        )
        # Response token t is predicted at the position before it, the prompt's last one for t = 0.
        h = torch.cat([h_prompt[prompt_index], h[:, :-1]], dim=1)
        return self._scored_logprobs(h, response_ids, real, return_entropy)

    def _scored_logprobs(
        self, h: torch.Tensor, labels: torch.Tensor, positions: torch.Tensor, return_entropy: bool
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The head's log-probs of ``labels`` at the ``positions`` of ``h`` only, 0 elsewhere."""
        scored = self._head_logprobs(h[positions], labels[positions], return_entropy)
        if not return_entropy:
            return scored.new_zeros(positions.shape).masked_scatter(positions, scored)
        return tuple(s.new_zeros(positions.shape).masked_scatter(positions, s) for s in scored)

    def _head_logprobs(
        self, h: torch.Tensor, labels: torch.Tensor, return_entropy: bool
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The LM head's log-probabilities of ``labels`` (IGNORE_INDEX: 0) at hidden states ``h``."""
        if self.config.fp32_lm_head:
            return kernels.selective_log_softmax(
                h, self.lm_head.weight, labels, return_entropy=return_entropy
            )
        logits = self.lm_head(h)
        logp = kernels.selective_log_softmax_from_logits(logits, labels)
        if not return_entropy:
            return logp
        dist = torch.log_softmax(logits.float(), dim=-1)
        entropy = -(dist.exp() * dist).sum(-1)
        return logp, entropy * (labels != kernels.IGNORE_INDEX)

    @classmethod
    def from_pretrained(
        cls, path, dtype: torch.dtype | None = None, device: str | torch.device = "cpu"
    ) -> M1ForCausalLM:
        """Load a Hugging Face MiniMax checkpoint folder (ours or one written by transformers)."""
        return load_checkpoint(cls, path, dtype=dtype, device=device)

    def save_pretrained(self, path, tokenizer=None, state_dict=None) -> None:
        """Write config.json, generation_config.json, model.safetensors (+ tokenizer files); the weights
        are ``state_dict`` when given (whole weights gathered from a sharded model)."""
        save_checkpoint(self, path, tokenizer=tokenizer, state_dict=state_dict)
