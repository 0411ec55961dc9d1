"""Building, loading and saving a policy, each in one place.

`build_model` is the one factory of a fresh model: the base of `m1 run`, the warm start of the
experiments and the benches' models all come from it, so a change to how a model is laid out or seeded
holds for all of them. Every caller (training stages, pass-rate sampling, logic calibration,
`m1 serve model`, probes) loads through `load_policy`, the way nanochat's `build_model(dir)` is its only
loader. `save_policy` replaces a folder atomically, so a reader (the next stage, a server) never sees
half a checkpoint; what it was trained from is its record (`recorded`), and `checkpoint_id` names it in
cache keys and fingerprints.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

from m1model.config import M1Config, hybrid_layer_types
from m1model.modeling import M1ForCausalLM
from m1model.tokenizer import load_tokenizer

RECORD = "training.json"  # `save_policy(extra=...)`: what the checkpoint was trained from, and how


class CheckpointError(ValueError):
    """A folder that is not a loadable policy checkpoint; the message names the folder and why."""


def build_model(
    *, tokenizer: Any = None, seed: int = 0, softmax_every: int = 8, **fields: Any
) -> M1ForCausalLM:
    """A freshly initialised model, the same weights for the same arguments.

    ``fields`` are M1Config fields (hidden_size, num_hidden_layers, vocab_size, ...). The layers follow
    MiniMax's pattern, one softmax-attention layer after every ``softmax_every - 1`` lightning layers,
    unless ``layer_types`` is given. With a ``tokenizer``, the vocabulary and the pad/bos/eos ids are
    its own. Raises ValueError for a shape the model cannot build, naming the field."""
    if tokenizer is not None:
        fields = {
            "vocab_size": len(tokenizer),
            "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            **{k: v for k, v in fields.items() if k != "vocab_size"},
        }
    layers = fields.get("num_hidden_layers", M1Config.num_hidden_layers)
    fields.setdefault("layer_types", hybrid_layer_types(layers, softmax_every))
    config = M1Config(**fields)
    torch.manual_seed(seed)
    return M1ForCausalLM(config)


def model_folder(folder: str | Path) -> Path:
    """``folder`` as a Path when it holds a model (a config.json), else CheckpointError: a check a command
    can make before minutes of other work, without loading the weights."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise CheckpointError(f"{folder}: not a model folder (no config.json)")
    return folder


def load_policy(
    folder: str | Path, *, dtype: torch.dtype | None = None, device: str | torch.device = "cpu"
) -> tuple[M1ForCausalLM, Any]:
    """(model in eval mode, tokenizer) from a folder written by `save_policy` or `m1 model init`."""
    folder = model_folder(folder)
    try:
        model = M1ForCausalLM.from_pretrained(folder, dtype=dtype, device=device)
        tokenizer = load_tokenizer(folder)
    except (OSError, ValueError, SafetensorError) as exc:  # damaged or foreign: say which folder and why
        raise CheckpointError(f"{folder}: cannot load the model: {exc}") from None
    return model, tokenizer


def save_policy(
    model: M1ForCausalLM,
    tokenizer: Any,
    folder: str | Path,
    extra: Mapping[str, Any] | None = None,
    state_dict: Mapping[str, torch.Tensor] | None = None,
) -> Path:
    """Write model + tokenizer (+ ``extra`` as training.json) to ``folder``, replacing any previous
    version in two renames: staged beside it, then swapped in. ``state_dict``: the weights to write
    when the model's own are sharded (FSDP)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staged, old = folder.with_name(f".{folder.name}.new"), folder.with_name(f".{folder.name}.old")
    shutil.rmtree(staged, ignore_errors=True)
    model.save_pretrained(staged, tokenizer=tokenizer, state_dict=state_dict)
    if extra is not None:
        (staged / RECORD).write_text(json.dumps(extra, indent=2, default=str))
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.rename(folder, old)
    os.rename(staged, folder)
    shutil.rmtree(old, ignore_errors=True)
    return folder


def recorded(folder: str | Path) -> dict[str, Any]:
    """The training record `save_policy` wrote beside a checkpoint ({} when there is none)."""
    path = Path(folder) / RECORD
    return json.loads(path.read_text()) if path.is_file() else {}


def checkpoint_id(folder: str | Path) -> str:
    """The fingerprint a checkpoint records, or (a user's own checkpoint) a hash of its files."""
    folder = Path(folder)
    if fp := recorded(folder).get("fingerprint"):
        return fp
    h = hashlib.sha256()
    for name in ("config.json", "model.safetensors", "model.safetensors.index.json"):
        f = folder / name
        if f.is_file():
            h.update(name.encode())
            h.update(f.read_bytes() if f.stat().st_size < 1 << 28 else repr(f.stat()).encode())
    return h.hexdigest()[:16]
