"""Training checkpoints: the model in Hugging Face format plus the optimizer, step, RNG and history.

Layout: ``<root>/step-000012/{model/, trainer.pt}``. A checkpoint folder is written under a temporary
name and renamed into place only when complete, so `latest_checkpoint` never returns a half-written one
(a run killed mid-save resumes from the previous checkpoint).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

_STEP = re.compile(r"^step-(\d{6,})$")
MODEL_DIR = "model"
STATE_FILE = "trainer.pt"


def checkpoint_path(root: str | os.PathLike, step: int) -> Path:
    return Path(root) / f"step-{step:06d}"


def list_checkpoints(root: str | os.PathLike) -> list[Path]:
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP.match(p.name)) and p.is_dir()]
    return [p for _, p in sorted(found)]


def latest_checkpoint(root: str | os.PathLike) -> Path | None:
    found = list_checkpoints(root)
    return found[-1] if found else None


def save_checkpoint(
    root: str | os.PathLike,
    step: int,
    model: torch.nn.Module,
    state: dict[str, Any],
    *,
    keep_last: int = 2,
) -> Path:
    """Save ``model`` (``save_pretrained``) and ``state`` (optimizer state dict, step, ...) atomically;
    keep only the newest ``keep_last`` checkpoints."""
    target = checkpoint_path(root, step)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(tmp / MODEL_DIR)
        torch.save(state, tmp / STATE_FILE)
        if target.exists():  # re-saving the same step (a resumed run): replace it
            shutil.rmtree(target)
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for old in list_checkpoints(root)[:-keep_last] if keep_last > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return target


def load_state(path: str | os.PathLike) -> dict[str, Any]:
    return torch.load(Path(path) / STATE_FILE, map_location="cpu", weights_only=True)


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
