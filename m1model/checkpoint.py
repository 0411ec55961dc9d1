"""Hugging Face checkpoint folders: config.json + model.safetensors (+ generation config, tokenizer files).

The on-disk layout is the one transformers' `MiniMaxForCausalLM.save_pretrained` writes (and MiniMax's
released checkpoints and vLLM read): experts as `block_sparse_moe.experts.{e}.w1/w2/w3.weight`, plus the
lightning layers' decay tables (`slope_rate`, `query_decay`, `key_decay`, `diagonal_decay`), which
transformers stores as persistent buffers and would report as missing otherwise. Our modules already use
the on-disk names, so the only translation is adding those tables on save and reading `slope_rate` back
on load; checkpoints in transformers' fused in-memory expert layout (`mlp.experts.gate_up_proj`) are
accepted too.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from m1model.config import M1Config

DECAY_TABLES = ("slope_rate", "query_decay", "key_decay", "diagonal_decay")
HF_ARCHITECTURE = "MiniMaxForCausalLM"


@contextmanager
def _atomic_file(target: Path) -> Iterator[Path]:
    """A temp path beside target that replaces it in one rename on success (readers never see half a file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def decay_tables(slope: torch.Tensor, block_size: int) -> dict[str, torch.Tensor]:
    """The buffers transformers' MiniMaxLightningAttention derives from its slope (same formulas, same shapes)."""
    s = slope.float()[:, None, None]
    r = torch.arange(block_size) + 1
    diag = (r[:, None] - r[None, :])[None, None] * s
    return {
        "slope_rate": s,
        "query_decay": torch.exp(-s * r[:, None]),
        "key_decay": torch.exp(-s * (block_size - r[:, None])),
        "diagonal_decay": torch.exp(torch.where(diag >= 0, -diag, float("-inf"))),
    }


def _lightning_layers(model) -> Iterator[tuple[str, torch.nn.Module]]:
    """Lightning-attention modules: the ones carrying a per-head decay ``slope`` (this module stays below
    modeling.py, which imports it, so it recognises them by that buffer rather than by class)."""
    for name, module in model.named_modules():
        if isinstance(getattr(module, "slope", None), torch.Tensor):
            yield name, module


def save_checkpoint(model, path, tokenizer=None, state_dict=None) -> None:
    """``state_dict``: the weights to write instead of ``model.state_dict()`` (e.g. the whole weights
    gathered from an FSDP-sharded model)."""
    from transformers import GenerationConfig

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    weights = model.state_dict() if state_dict is None else state_dict
    tensors = {k: v.detach().contiguous().cpu() for k, v in weights.items()}
    for name, module in _lightning_layers(model):
        for key, table in decay_tables(module.slope.cpu(), model.config.block_size).items():
            tensors[f"{name}.{key}"] = table  # float32 even in a bf16 checkpoint
    config = copy.deepcopy(model.config)
    config.architectures = [HF_ARCHITECTURE]
    config.dtype = str(model.dtype).removeprefix("torch.")
    if tokenizer is not None:
        for attr in ("bos_token_id", "eos_token_id", "pad_token_id"):
            if getattr(tokenizer, attr) is not None:
                setattr(config, attr, getattr(tokenizer, attr))
    with _atomic_file(out / "model.safetensors") as tmp:
        save_file(tensors, str(tmp), metadata={"format": "pt"})
    with _atomic_file(out / "config.json") as tmp:
        tmp.write_text(config.to_json_string(use_diff=False), encoding="utf-8")
    with _atomic_file(out / "generation_config.json") as tmp:
        tmp.write_text(GenerationConfig.from_model_config(config).to_json_string(), encoding="utf-8")
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))


def _read_tensors(folder: Path) -> dict[str, torch.Tensor]:
    index = folder / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (folder / "model.safetensors").exists():
        files = ["model.safetensors"]
    else:
        raise FileNotFoundError(f"{folder}: no model.safetensors or model.safetensors.index.json")
    tensors: dict[str, torch.Tensor] = {}
    for name in files:
        with safe_open(str(folder / name), framework="pt") as f:
            for key in f.keys():
                tensors[key] = f.get_tensor(key)
    return tensors


_FUSED_GATE_UP = re.compile(r"^(.*)\.mlp\.experts\.gate_up_proj$")


def _to_disk_layout(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Translate transformers' fused in-memory MoE names (`mlp.experts.gate_up_proj` [E, 2I, D],
    `mlp.experts.down_proj` [E, D, I], `mlp.gate.weight`) into the per-expert on-disk names."""
    out = {}
    for key, t in tensors.items():
        if m := _FUSED_GATE_UP.match(key):
            gate, up = t.chunk(2, dim=1)
            for e in range(t.shape[0]):
                out[f"{m[1]}.block_sparse_moe.experts.{e}.w1.weight"] = gate[e]
                out[f"{m[1]}.block_sparse_moe.experts.{e}.w3.weight"] = up[e]
        elif key.endswith(".mlp.experts.down_proj"):
            prefix = key.removesuffix(".mlp.experts.down_proj")
            for e in range(t.shape[0]):
                out[f"{prefix}.block_sparse_moe.experts.{e}.w2.weight"] = t[e]
        else:
            out[key.replace(".mlp.gate.", ".block_sparse_moe.gate.")] = t
    return out


def load_checkpoint(cls, path, dtype: torch.dtype | None = None, device="cpu"):
    folder = Path(path)
    if not (folder / "config.json").exists():
        raise FileNotFoundError(f"{folder}: no config.json (not a model checkpoint folder)")
    raw = json.loads((folder / "config.json").read_text())
    if raw.get("model_type") != "minimax":
        raise ValueError(f"{folder}/config.json: model_type is {raw.get('model_type')!r}, expected 'minimax'")
    config = M1Config.from_pretrained(str(folder))
    tensors = _to_disk_layout(_read_tensors(folder))
    model = cls(config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(k for k in set(tensors) - set(expected) if k.rsplit(".", 1)[-1] not in DECAY_TABLES)
    if missing or unexpected:
        raise ValueError(
            f"{folder}: checkpoint does not match the config: missing {missing[:8]}, unexpected {unexpected[:8]}"
        )
    for key, target in expected.items():
        if tensors[key].shape != target.shape:
            raise ValueError(
                f"{folder}: {key} has shape {tuple(tensors[key].shape)}, config implies {tuple(target.shape)}"
            )
    model.load_state_dict({k: tensors[k] for k in expected}, strict=True)
    for name, module in _lightning_layers(model):
        stored = tensors.get(f"{name}.slope_rate")
        if stored is not None:
            module.slope = stored.float().flatten()  # a checkpoint's own decay rates win over the formula
    saved_dtype = raw.get("dtype") or raw.get("torch_dtype") or "float32"  # "torch_dtype": transformers 4.x
    return model.to(device=device, dtype=dtype or getattr(torch, saved_dtype, torch.float32)).eval()
