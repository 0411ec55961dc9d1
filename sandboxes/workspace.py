"""A run's working directory and its unprivileged user.

Every run gets a fresh temporary directory (the program sees it as /work) and, when the supervisor is
root, a uid of its own leased from a dedicated range. A uid per run matters for two reasons:
RLIMIT_NPROC counts all processes of a uid, so a fork bomb in one run cannot starve a concurrent run;
and after a kill, "no process of this uid is left" is an exact test that the run is fully gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

UID_BASE = 880_000  # far above regular and system users; needs no /etc/passwd entry
UID_SLOTS = 4096
WORK_MOUNT = "/work"
META_MOUNT = "/run/m1"


@dataclass(frozen=True)
class Workspace:
    path: Path  # host directory, mounted read-write at /work inside the sandbox
    meta: Path  # host directory for the sandbox's own reports (usage), mounted at /run/m1
    uid: int  # host uid the program runs as
    gid: int

    def report_file(self) -> tuple[Path, str]:
        """A fresh report file name: (host path, path inside the sandbox)."""
        name = f"usage-{uuid.uuid4().hex}"
        return self.meta / name, f"{META_MOUNT}/{name}"


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "m1-sandbox-uids"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


@contextlib.contextmanager
def lease_uid() -> Iterator[int]:
    """A uid no other live run holds (an flock per uid works across threads and processes)."""
    if os.geteuid() != 0:
        # Without root we cannot switch users: runs share our uid, isolation rests on the namespaces.
        yield os.getuid()
        return
    locks = _lock_dir()
    start = random.randrange(UID_SLOTS)
    for i in range(UID_SLOTS):
        uid = UID_BASE + (start + i) % UID_SLOTS
        fd = os.open(locks / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise RuntimeError(f"all {UID_SLOTS} sandbox uids are in use")


def _safe_relative(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts or rel == PurePosixPath("."):
        raise ValueError(f"sandbox file name must be a relative path inside the work dir: {name!r}")
    return rel


def write_files(ws: Workspace, files: Mapping[str, bytes | str]) -> None:
    """Write files into the work dir, owned by the run's uid so the program may change them."""
    for name, content in files.items():
        target = ws.path / _safe_relative(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        if os.geteuid() == 0:
            for p in [target, *target.relative_to(ws.path).parents]:
                os.chown(ws.path / p, ws.uid, ws.gid)


def seal(ws: Workspace) -> None:
    """Make the work dir read-only for the program (owned by us, not by its uid).

    After a build, each test of the program then starts from the same files: a run cannot delete the
    binary or leave state for the next one. Scratch files go to /tmp, which is fresh per run.
    """
    if os.geteuid() != 0:
        return
    for root, dirs, names in os.walk(ws.path):
        for name in [*dirs, *names]:
            p = os.path.join(root, name)
            os.lchown(p, 0, 0)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode & ~0o022 | 0o444)
    os.chown(ws.path, 0, 0)
    os.chmod(ws.path, 0o755)


@contextlib.contextmanager
def workspace(files: Mapping[str, bytes | str] | None = None) -> Iterator[Workspace]:
    """A fresh, private work dir with `files` in it and a leased uid; both are gone afterwards."""
    with lease_uid() as uid:
        gid = uid if os.geteuid() == 0 else os.getgid()
        root = Path(tempfile.mkdtemp(prefix="m1-sbx-"))  # mode 0700: other users cannot look in
        try:
            ws = Workspace(root / "work", root / "meta", uid, gid)
            for d in (root, ws.path, ws.meta):
                d.mkdir(exist_ok=True)
                if os.geteuid() == 0:
                    os.chown(d, uid, gid)
            write_files(ws, files or {})
            yield ws
        finally:
            shutil.rmtree(root, ignore_errors=True)
