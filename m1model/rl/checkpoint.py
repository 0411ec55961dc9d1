"""Training checkpoints: the model in Hugging Face format plus the optimizer, step, RNG and history.

Layout: ``<root>/step-000012/{model/, trainer.pt}``. A checkpoint folder is written under a temporary
name and renamed into place only when complete, so `latest_checkpoint` never returns a half-written one
(a run killed mid-save resumes from the previous checkpoint). Folders leave the same way they came: renamed
to a hidden name first, then deleted, so a kill during a deletion leaves nothing under a ``step-`` name
either.
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


def complete(path: Path) -> bool:
    """Both parts present (a folder only ever gets its step name once complete; this guards the rest)."""
    return (path / STATE_FILE).is_file() and (path / MODEL_DIR / "config.json").is_file()


def list_checkpoints(root: str | os.PathLike) -> list[Path]:
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP.match(p.name)) and complete(p)]
    return [p for _, p in sorted(found)]


def _remove(path: Path) -> None:
    """Rename out of sight (atomic), then delete."""
    gone = path.with_name(f".{path.name}.removing")
    shutil.rmtree(gone, ignore_errors=True)
    try:
        os.rename(path, gone)
    except FileNotFoundError:
        return
    shutil.rmtree(gone, ignore_errors=True)


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
    state_dict: dict[str, torch.Tensor] | None = None,
) -> Path:
    """Save ``model`` (``save_pretrained``, with ``state_dict`` as its weights when given) and ``state``
    (optimizer state dict, step, ...) atomically; keep only the newest ``keep_last`` checkpoints."""
    target = checkpoint_path(root, step)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        if state_dict is None:
            model.save_pretrained(tmp / MODEL_DIR)
        else:
            model.save_pretrained(tmp / MODEL_DIR, state_dict=state_dict)
        torch.save(state, tmp / STATE_FILE)
        _remove(target)  # re-saving the same step (a resumed run): replace it
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for old in list_checkpoints(root)[:-keep_last] if keep_last > 0 else []:
        _remove(old)
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
