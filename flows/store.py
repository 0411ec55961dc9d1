"""The dataset store: named, versioned Parquet datasets under M1_HOME, each with a manifest.

Layout: ``$M1_HOME/datasets/<name>/v0001/{data.parquet, manifest.json, quarantine.parquet}`` plus a
``LATEST`` file naming the newest complete version. A version folder is built under a temporary
name and renamed into place, then LATEST is replaced atomically, so a write killed midway leaves the
previous version intact and readable.

Same content, same version: a write whose rows, quarantine, parameters, parents and steps are those of
the latest version (a rerun on unchanged input) returns that version instead of adding an identical one,
so what fingerprints a version number (curriculum stages) does not turn stale. The manifest's `content`
is the SHA-256 it is compared by; the code version and the time are not part of it.

What built it: each flow that writes a dataset records the inputs it wrote it from (flows/lineage.py) in
``BUILT_FROM.json`` beside the versions, one entry per writer (the curation flow and the pass-rate filter
both write ``{run}-curated``). A rerun whose inputs are the recorded ones reuses that version without
doing the work again (`reusable`); one whose inputs changed says which (`why_rebuilt`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import polars as pl

from flows.atomic import atomic_dir, atomic_write_text
from flows.errors import InputError
from flows.home import m1_home
from flows.lineage import fingerprint, reason

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@cache
def code_version() -> str:
    """Package version plus the git commit (and a dirty mark) when run from a checkout."""
    try:
        ver = version("m1-pipeline")
    except PackageNotFoundError:
        ver = "0+unknown"
    here = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(here), *args], capture_output=True, text=True, timeout=5, check=True
        )
        return done.stdout.strip()

    try:
        sha = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return f"{ver}+g{sha}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return ver


@dataclass
class StepCount:
    """One filter's effect: how many rows came in, went out, and why the rest left."""

    step: str
    rows_in: int
    rows_out: int
    reason: str = ""

    @property
    def removed(self) -> int:
        return self.rows_in - self.rows_out


@dataclass
class Manifest:
    name: str
    version: int
    rows: int
    params: dict[str, Any] = field(default_factory=dict)
    parents: list[str] = field(default_factory=list)
    steps: list[StepCount] = field(default_factory=list)
    quarantined: int = 0
    code_version: str = ""
    created: float = 0.0
    content: str = ""  # SHA-256 of the data, quarantine, params, parents and steps (`content_hash`)

    def to_json(self) -> str:
        d = self.__dict__ | {"steps": [s.__dict__ | {"removed": s.removed} for s in self.steps]}
        return json.dumps(d, indent=2, sort_keys=True, default=str)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        d = json.loads(text)
        steps = [
            StepCount(s["step"], s["rows_in"], s["rows_out"], s.get("reason", "")) for s in d.pop("steps")
        ]
        return cls(**d, steps=steps)

    @property
    def ref(self) -> str:
        return f"{self.name}@v{self.version}"


class _Unchanged(Exception):
    """A write whose content is the latest version's."""


def content_hash(folder: Path, manifest: Manifest) -> str:
    """SHA-256 of a version's files (data, quarantine) and of what its manifest says it was made from."""
    digest = hashlib.sha256()
    for name in ("data.parquet", "quarantine.parquet"):
        file = folder / name
        digest.update(f"{name}:{file.stat().st_size if file.exists() else -1}\n".encode())
        if file.exists():
            with open(file, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    made_from = {
        "params": manifest.params,
        "parents": manifest.parents,
        "steps": [s.__dict__ for s in manifest.steps],
    }
    digest.update(json.dumps(made_from, sort_keys=True, default=str).encode())
    return digest.hexdigest()


class DatasetStore:
    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else m1_home()
        self.datasets = self.root / "datasets"

    def _dir(self, name: str) -> Path:
        if not _NAME.match(name):
            raise InputError(f"invalid dataset name {name!r}: use letters, digits, '_', '-', '.'")
        return self.datasets / name

    def versions(self, name: str) -> list[int]:
        d = self._dir(name)
        if not d.exists():
            return []
        return sorted(int(p.name[1:]) for p in d.iterdir() if re.fullmatch(r"v\d{4,}", p.name))

    def latest(self, name: str) -> int | None:
        pointer = self._dir(name) / "LATEST"
        if not pointer.exists():
            return None
        return int(pointer.read_text().strip())

    def path(self, name: str, version: int | None = None) -> Path:
        latest = self.latest(name)
        if latest is None:
            raise InputError(f"dataset {name!r} does not exist in {self.datasets}")
        if version is None:
            version = latest
        elif not (self._dir(name) / f"v{version:04d}" / "manifest.json").exists():
            have = ", ".join(f"v{v}" for v in self.versions(name))
            raise InputError(f"dataset {name!r} has no version {version} (versions: {have})")
        return self._dir(name) / f"v{version:04d}"

    def write(
        self,
        name: str,
        df: pl.DataFrame,
        *,
        params: dict[str, Any] | None = None,
        parents: list[str] | None = None,
        steps: list[StepCount] | None = None,
        quarantine: pl.DataFrame | None = None,
    ) -> Manifest:
        """Write a new version atomically and return its manifest; when the content is the latest
        version's (see the module docstring), return that version's manifest and write nothing."""
        versions = self.versions(name)
        version = (versions[-1] + 1) if versions else 1
        manifest = Manifest(
            name=name,
            version=version,
            rows=df.height,
            params=params or {},
            parents=parents or [],
            steps=steps or [],
            quarantined=0 if quarantine is None else quarantine.height,
            code_version=code_version(),
            created=time.time(),
        )
        latest = self.latest(name)
        latest_file = self._dir(name) / f"v{latest or 0:04d}" / "manifest.json"
        previous = Manifest.from_json(latest_file.read_text()) if latest_file.exists() else None
        try:
            with atomic_dir(self._dir(name) / f"v{version:04d}") as tmp:
                # one chunk: the same rows give the same bytes however the frame was assembled
                df.rechunk().write_parquet(tmp / "data.parquet")
                if quarantine is not None and quarantine.height:
                    quarantine.rechunk().write_parquet(tmp / "quarantine.parquet")
                manifest.content = content_hash(tmp, manifest)
                if previous is not None and previous.content == manifest.content:
                    raise _Unchanged
                (tmp / "manifest.json").write_text(manifest.to_json())
        except _Unchanged:
            return previous  # the temporary folder is gone with the exception
        atomic_write_text(self._dir(name) / "LATEST", f"{version}\n")
        return manifest

    def read(self, name: str, version: int | None = None) -> pl.DataFrame:
        return pl.read_parquet(self.path(name, version) / "data.parquet")

    def quarantine(self, name: str, version: int | None = None) -> pl.DataFrame | None:
        q = self.path(name, version) / "quarantine.parquet"
        return pl.read_parquet(q) if q.exists() else None

    def manifest(self, name: str, version: int | None = None) -> Manifest:
        return Manifest.from_json((self.path(name, version) / "manifest.json").read_text())

    # -- what built each version (flows/lineage.py) -------------------------------------------------------

    def built_from(self, name: str, writer: str) -> dict[str, Any] | None:
        """What `writer` last wrote `name` from: version, inputs, fingerprint, reason, result."""
        path = self._dir(name) / "BUILT_FROM.json"
        if not path.is_file():
            return None
        return json.loads(path.read_text()).get(writer)

    def reusable(self, name: str, writer: str, inputs: dict[str, Any]) -> dict[str, Any] | None:
        """The record of `writer`'s last write of `name` when it was made from exactly ``inputs`` and its
        version still exists; None when the work must be done (again)."""
        record = self.built_from(name, writer)
        if record is None or record.get("fingerprint") != fingerprint(inputs):
            return None
        folder = self._dir(name) / f"v{record['version']:04d}"
        return record if (folder / "manifest.json").is_file() else None

    def make_latest(self, name: str, version: int) -> None:
        """Point LATEST at an existing version (a writer reused it: it is the current one again)."""
        if self.latest(name) != version:
            self.path(name, version)  # exists, or an InputError naming the versions
            atomic_write_text(self._dir(name) / "LATEST", f"{version}\n")

    def why_rebuilt(self, name: str, writer: str, inputs: dict[str, Any]) -> str:
        """Why `writer` must write `name` (again): what changed since its last write; '' when nothing."""
        record = self.built_from(name, writer)
        if record is None:
            return "not built yet"
        if not (self._dir(name) / f"v{record['version']:04d}" / "manifest.json").is_file():
            return f"its version v{record['version']} is gone"
        return reason(record["inputs"], inputs)

    def record_built(
        self, name: str, writer: str, version: int, inputs: dict[str, Any], result: dict[str, Any]
    ) -> dict[str, Any]:
        """Record that `writer` wrote `version` of `name` from ``inputs`` (with the flow's result, which a
        rerun on the same inputs returns instead of redoing the work)."""
        path = self._dir(name) / "BUILT_FROM.json"
        records = json.loads(path.read_text()) if path.is_file() else {}
        previous = records.get(writer)
        why = reason(previous["inputs"], inputs) if previous else "first build"
        record = {
            "version": version,
            "fingerprint": fingerprint(inputs),
            "inputs": inputs,
            "reason": why or previous.get("reason", ""),
            "result": result,
        }
        atomic_write_text(path, json.dumps(records | {writer: record}, indent=2, sort_keys=True, default=str))
        return record

    def names(self) -> list[str]:
        if not self.datasets.exists():
            return []
        return sorted(p.name for p in self.datasets.iterdir() if (p / "LATEST").exists())
