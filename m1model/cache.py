"""Generation cache: a constant-size recurrent state per lightning layer, a KV cache per softmax layer.

The lightning state is [B, H, Dk, Dv] in float32 whatever the context length; only the softmax layers
(one in eight in MiniMax-Text-01) keep keys and values, which is where the hybrid's decode savings
come from. Rows can be dropped (`select`) when a sequence finishes so a batch shrinks as it decodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


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
    """Per-layer decode state plus the padding mask and next RoPE position of every row.

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
        """Keep only the given batch rows (e.g. the sequences still generating)."""
        for i, s in self.states.items():
            self.states[i] = s[rows]
        for buf in self.kv.values():
            buf.select(rows)
        if self.mask is not None:
            self.mask = self.mask[rows]
            self.positions = self.positions[rows]
