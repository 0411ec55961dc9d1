"""Atomic outputs: write beside the target, fsync, then rename, so a reader never sees half a file.

Not a flow: how the store, the flows and the commands write a run's files, which only flows/ writes
(a library returns its results or writes where its caller says).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success it replaces the target in one rename.

    If the body raises (or the process dies), the target is untouched and the temp file is removed
    (or left as an ignorable dot-file when killed).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, target)
        _fsync_dir(target.parent)
    finally:
        tmp_path.unlink(missing_ok=True)


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Build a folder under a temporary name and rename it into place when complete."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb+") as fh:
                    os.fsync(fh.fileno())
        os.rename(tmp, target)  # fails if target exists: versions are never overwritten
        _fsync_dir(target.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
