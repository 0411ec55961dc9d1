"""Caches: a constant-size recurrent state per lightning layer, keys and values per softmax layer.

The lightning state is [H, Dk, Dv] in float32 per sequence whatever the context length; only the softmax
layers (one in eight in MiniMax-Text-01) keep keys and values, which is where the hybrid's decode savings
come from. Two caches implement the same two calls the attention layers make, ``lightning`` (fold new
tokens into the state, return their outputs) and ``attend`` (store new keys/values, attend over the past):

* `M1Cache`, dense [B, ...] tensors over a padded batch: teacher-forced passes that continue a prefix
  (`M1ForCausalLM.group_logprobs` runs each group's prompt once and repeats its state to the responses),
  and transformers-style ``model(ids, cache=..., use_cache=True)`` calls.
* `StepBatch` over an `EnginePool`, the generation engine's memory (vLLM's layout): a fixed pool of
  request *slots*, each holding every lightning layer's state, and the softmax layers' keys and values in
  fixed-size *blocks* allocated as a request grows (a block table per request). One engine step runs the
  tokens of many requests as one flat row [1, N]: first one token per decoding request, then chunks of
  prompts being prefilled; `StepBatch` routes each token's attention to its own request's slot and blocks,
  so a request's results never depend on what shares the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

import kernels


@dataclass
class KVBuffer:
    """Keys/values [B, Hkv, capacity, D] of one softmax layer, filled up to `length` (grows by doubling)."""

    keys: torch.Tensor
    values: torch.Tensor
    length: int

    @classmethod
    def start(cls, k: torch.Tensor, v: torch.Tensor, reserve: int = 0) -> KVBuffer:
        capacity = k.shape[2] + reserve
        keys = k.new_empty(*k.shape[:2], capacity, k.shape[3])
        values = v.new_empty(*v.shape[:2], capacity, v.shape[3])
        keys[:, :, : k.shape[2]] = k
        values[:, :, : v.shape[2]] = v
        return cls(keys, values, k.shape[2])

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add new positions; return views of all keys and values so far."""
        new_len = self.length + k.shape[2]
        if new_len > self.keys.shape[2]:
            grow = max(new_len, 2 * self.keys.shape[2])
            self.keys = torch.cat(
                [self.keys[:, :, : self.length], k.new_empty(*k.shape[:2], grow - self.length, k.shape[3])], 2
            )
            self.values = torch.cat(
                [self.values[:, :, : self.length], v.new_empty(*v.shape[:2], grow - self.length, v.shape[3])],
                2,
            )
        self.keys[:, :, self.length : new_len] = k
        self.values[:, :, self.length : new_len] = v
        self.length = new_len
        return self.keys[:, :, :new_len], self.values[:, :, :new_len]

    def select(self, rows: torch.Tensor) -> None:
        self.keys = self.keys[rows]
        self.values = self.values[rows]


@dataclass
class M1Cache:
    """Per-layer state of a dense batch plus the padding mask and next RoPE position of every row.

    `mask` [B, seen] marks real (non-pad) positions so softmax layers never attend to left padding;
    `positions` [B] is each row's next position id, counted over real tokens only, so a left-padded
    prompt gets the same RoPE phases as the unpadded one.
    """

    states: dict[int, torch.Tensor] = field(default_factory=dict)
    kv: dict[int, KVBuffer] = field(default_factory=dict)
    mask: torch.Tensor | None = None
    positions: torch.Tensor | None = None
    reserve: int = 0  # extra KV slots to allocate at prefill (the expected number of new tokens)

    @property
    def seen(self) -> int:
        return 0 if self.mask is None else self.mask.shape[1]

    def select(self, rows: torch.Tensor) -> None:
        """Keep only the given batch rows (e.g. the responses that continue each prompt)."""
        for i, s in self.states.items():
            self.states[i] = s[rows]
        for buf in self.kv.values():
            buf.select(rows)
        if self.mask is not None:
            self.mask = self.mask[rows]
            self.positions = self.positions[rows]

    def lightning(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slope: torch.Tensor
    ) -> torch.Tensor:
        """Outputs of q, k, v [B, H, T, D] continuing the layer's state, which moves past them."""
        state = self.states.get(layer)
        if state is not None and q.shape[2] == 1:
            o, state = kernels.lightning_attn_decode(q, k, v, slope, state)
        else:
            o, state = kernels.lightning_attention(q, k, v, slope, initial_state=state)
        self.states[layer] = state
        return o

    def attend(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """Append k, v [B, Hkv, T, D] to the layer's buffer; q's attention over everything seen."""
        buf = self.kv.get(layer)
        if buf is None:
            self.kv[layer] = KVBuffer.start(k, v, reserve=self.reserve)
        else:
            k, v = buf.append(k, v)
        causal = attn_mask is None and q.shape[2] > 1
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal, enable_gqa=True)


class EnginePool:
    """The generation engine's fixed memory: ``slots`` request slots, each with every lightning layer's
    float32 state [H, Dk, Dv], and ``blocks`` KV blocks of ``block_size`` positions per softmax layer.

    Allocation is a free list of each (nano-vllm's BlockManager without prefix sharing). Everything is
    allocated up front and zero-filled (a masked key must hold a finite number: a NaN left in freshly
    allocated memory would survive the mask as 0 * NaN), so the engine's memory is bounded and known
    (`nbytes`) before its first request."""

    def __init__(self, model, slots: int, blocks: int, block_size: int) -> None:
        cfg = model.config
        self.device, self.dtype = device, dtype = model.device, model.dtype
        self.slots, self.blocks, self.block_size = slots, blocks, block_size
        heads, kv_heads, dim = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.attn_head_dim
        self.lightning_layers = [i for i, t in enumerate(cfg.layer_types) if t == "linear_attention"]
        self.softmax_layers = [i for i, t in enumerate(cfg.layer_types) if t != "linear_attention"]
        state = torch.promote_types(dtype, torch.float32)
        self.states = {
            i: torch.zeros(slots, heads, dim, dim, dtype=state, device=device) for i in self.lightning_layers
        }
        if not self.softmax_layers:
            self.blocks = blocks = 0  # nothing grows: a request needs its slot only
        shape = (blocks, block_size, kv_heads, dim)
        self.keys = {i: torch.zeros(shape, dtype=dtype, device=device) for i in self.softmax_layers}
        self.values = {i: torch.zeros(shape, dtype=dtype, device=device) for i in self.softmax_layers}
        self.free_slots = list(range(slots - 1, -1, -1))  # pop() hands out the lowest first
        self.free_blocks = list(range(blocks - 1, -1, -1))

    @property
    def needs_blocks(self) -> bool:
        return bool(self.softmax_layers)

    @property
    def capacity_tokens(self) -> int:
        """The most positions one request can hold (all the blocks); unbounded without softmax layers."""
        return self.blocks * self.block_size if self.needs_blocks else 2**62

    def nbytes(self) -> dict[str, int]:
        return {
            "lightning_states": sum(t.nbytes for t in self.states.values()),
            "kv_blocks": sum(t.nbytes for t in (*self.keys.values(), *self.values.values())),
        }

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size) if self.needs_blocks else 0

    def take_slot(self) -> int:
        """A free slot with every lightning state zeroed (a request starts from an empty state)."""
        slot = self.free_slots.pop()
        for s in self.states.values():
            s[slot].zero_()
        return slot

    def release(self, slot: int, blocks: list[int]) -> None:
        if slot >= 0:
            self.free_slots.append(slot)
        self.free_blocks.extend(reversed(blocks))

    def grow(self, blocks: list[int], tokens: int) -> bool:
        """Extend a block table to hold ``tokens`` positions; False (and no change) if too few are free."""
        need = self.blocks_for(tokens) - len(blocks)
        if need > len(self.free_blocks):
            return False
        for _ in range(max(need, 0)):
            blocks.append(self.free_blocks.pop())
        return True


class StepBatch:
    """One engine step's tokens as one flat row, and where each token's state and keys live.

    Built by the engine from the scheduled (request, first position, token count) triples, ``decodes``
    first (one token each), then ``prefills`` (chunks of any length). `M1Model.forward` takes it as its
    cache: RoPE phases come from ``positions``, and the attention layers call `lightning` and `attend`.
    """

    def __init__(
        self,
        pool: EnginePool,
        decodes: list[tuple[int, int, list[int]]],
        prefills: list[tuple[int, int, int, list[int]]],
        device: torch.device,
    ) -> None:
        """decodes: (slot, position, block table) per decoding request; prefills: (slot, first position,
        token count, block table) per prefill chunk."""
        self.pool = pool
        bs = pool.block_size
        self.n_dec, self.n_pre = len(decodes), len(prefills)
        positions: list[int] = [p for _, p, _ in decodes]
        slot_mapping: list[int] = (
            [t[p // bs] * bs + p % bs for _, p, t in decodes] if pool.needs_blocks else []
        )
        for _, start, n, table in prefills:
            positions.extend(range(start, start + n))
            if pool.needs_blocks:
                slot_mapping.extend(table[p // bs] * bs + p % bs for p in range(start, start + n))
        self.n_tokens = len(positions)

        def tensor(x, dtype=torch.long):
            return torch.tensor(x, dtype=dtype, device=device)

        self.positions = tensor(positions)[None]  # [1, N]
        self.slot_mapping = tensor(slot_mapping)
        if decodes:
            slots = [s for s, _, _ in decodes]
            self.dec_slots = tensor(slots)
            # consecutive slots (usual: slots are handed out lowest first) are a view, not a gather
            first = slots[0]
            self.dec_range = (
                slice(first, first + len(slots)) if slots == [*range(first, first + len(slots))] else None
            )
            if pool.needs_blocks:
                width = max(len(t) for _, _, t in decodes)
                self.dec_tables = tensor([t + [0] * (width - len(t)) for _, _, t in decodes])
                # a decoding token sees every position up to and including its own
                self.dec_mask = (
                    torch.arange(width * bs, device=device)[None]
                    <= tensor([p for _, p, _ in decodes])[:, None]
                )[:, None, None]  # [D, 1, 1, L]
        if prefills:
            lengths = [n for _, _, n, _ in prefills]
            width = max(lengths)
            self.pre_slots = tensor([s for s, _, _, _ in prefills])
            self.pre_lengths = tensor(lengths)
            offsets, first = [], self.n_dec
            for n in lengths:  # each chunk's flat token indices, padded by repeating its last one
                offsets.append([first + min(i, n - 1) for i in range(width)])
                first += n
            self.pre_index = tensor(offsets)  # [P, Tmax]
            self.pre_valid = torch.arange(width, device=device)[None] < self.pre_lengths[:, None]
            self.pre_dense = width * len(prefills) == sum(lengths)  # no padding at all
            if pool.needs_blocks:
                tw = max(len(t) for _, _, _, t in prefills)
                self.pre_tables = tensor([t + [0] * (tw - len(t)) for _, _, _, t in prefills])
                starts = tensor([s for _, s, _, _ in prefills])
                q_pos = starts[:, None] + torch.arange(width, device=device)[None]  # [P, Tmax]
                k_pos = torch.arange(tw * bs, device=device)
                allowed = k_pos[None, None] <= q_pos[:, :, None]
                # a pad query (beyond its chunk) sees position 0 only, so its row is never empty (NaN)
                allowed |= (~self.pre_valid[:, :, None]) & (k_pos == 0)[None, None]
                self.pre_mask = allowed[:, None]  # [P, 1, Tmax, L]

    # -- the two calls of the attention layers ------------------------------------------------------

    def _prefill_rows(self, x: torch.Tensor) -> torch.Tensor:
        """[1, H, N, D] -> the prefill chunks as right-padded rows [P, H, Tmax, D]."""
        if self.n_pre == 1 and self.pre_dense:
            return x[:, :, self.n_dec :]
        return x[0][:, self.pre_index].transpose(0, 1)

    def _put_prefill_rows(self, out: torch.Tensor, rows: torch.Tensor) -> None:
        """Write the real positions of [P, H, Tmax, D] rows back into the flat [1, H, N, D] output."""
        if self.n_pre == 1 and self.pre_dense:
            out[:, :, self.n_dec :] = rows
        else:
            out[0, :, self.n_dec :] = rows.transpose(0, 1)[:, self.pre_valid]

    def lightning(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slope: torch.Tensor
    ) -> torch.Tensor:
        states = self.pool.states[layer]
        D = self.n_dec
        if D:
            # [1, H, D, d] -> [D, H, 1, d]: one row per decoding request, its slot's state
            qd, kd, vd = (x[0, :, :D].transpose(0, 1)[:, :, None] for x in (q, k, v))
            if self.dec_range is not None:
                o, states[self.dec_range] = kernels.lightning_attn_decode(
                    qd, kd, vd, slope, states[self.dec_range]
                )
            else:
                o, new = kernels.lightning_attn_decode(
                    qd, kd, vd, slope, states.index_select(0, self.dec_slots)
                )
                states.index_copy_(0, self.dec_slots, new)
            o = o[:, :, 0].transpose(0, 1)[None]  # [1, H, D, d]
            if not self.n_pre:
                return o
        out = q.new_empty(*q.shape[:3], v.shape[-1])
        if D:
            out[:, :, :D] = o
        qp, kp, vp = (self._prefill_rows(x) for x in (q, k, v))
        o, new = kernels.lightning_attn_varlen(
            qp, kp, vp, slope, self.pre_lengths, initial_state=states.index_select(0, self.pre_slots)
        )
        states.index_copy_(0, self.pre_slots, new)
        self._put_prefill_rows(out, o)
        return out

    def attend(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None
    ) -> torch.Tensor:
        keys, values = self.pool.keys[layer], self.pool.values[layer]  # [blocks, bs, Hkv, d]
        keys.view(-1, *keys.shape[2:]).index_copy_(0, self.slot_mapping, k[0].transpose(0, 1))
        values.view(-1, *values.shape[2:]).index_copy_(0, self.slot_mapping, v[0].transpose(0, 1))
        D = self.n_dec
        if D:
            kd, vd = (_gather_blocks(x, self.dec_tables) for x in (keys, values))  # [D, Hkv, L, d]
            qd = q[0, :, :D].transpose(0, 1)[:, :, None]  # [D, H, 1, d]
            o = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=self.dec_mask, enable_gqa=True)
            o = o[:, :, 0].transpose(0, 1)[None]  # [1, H, D, d]
            if not self.n_pre:
                return o
        out = torch.empty_like(q)
        if D:
            out[:, :, :D] = o
        kp, vp = (_gather_blocks(x, self.pre_tables) for x in (keys, values))  # [P, Hkv, L, d]
        o = F.scaled_dot_product_attention(
            self._prefill_rows(q), kp, vp, attn_mask=self.pre_mask, enable_gqa=True
        )
        self._put_prefill_rows(out, o)
        return out


def _gather_blocks(pool: torch.Tensor, tables: torch.Tensor) -> torch.Tensor:
    """The blocks [R, nb] of a [blocks, bs, Hkv, d] pool as each row's positions [R, Hkv, nb * bs, d].
    (index_select: on CPU several times faster than advanced indexing for whole-block copies.)"""
    R, nb = tables.shape
    rows = pool.index_select(0, tables.flatten()).view(R, nb * pool.shape[1], *pool.shape[2:])
    return rows.transpose(1, 2)
