"""The dataset store: named, versioned Parquet datasets under M1_HOME, each with a manifest.

Layout: ``$M1_HOME/datasets/<name>/v0001/{data.parquet, manifest.json, quarantine.parquet}`` plus a
``LATEST`` file naming the newest complete version. A version folder is built under a temporary
name and renamed into place, then LATEST is replaced atomically, so a write killed midway leaves the
previous version intact and readable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from flows.atomic import atomic_dir, atomic_write_text
from flows.errors import InputError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def m1_home() -> Path:
    return Path(os.environ.get("M1_HOME", "./.m1")).resolve()


@cache
def code_version() -> str:
    """Package version plus the git commit (and a dirty mark) when run from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("m1-pipeline")
    except PackageNotFoundError:
        ver = "0+unknown"
    here = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
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
        version = self.latest(name) if version is None else version
        if version is None:
            raise InputError(f"dataset {name!r} does not exist in {self.datasets}")
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
        """Write a new version atomically and return its manifest."""
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
        with atomic_dir(self._dir(name) / f"v{version:04d}") as tmp:
            df.write_parquet(tmp / "data.parquet")
            if quarantine is not None and quarantine.height:
                quarantine.write_parquet(tmp / "quarantine.parquet")
            (tmp / "manifest.json").write_text(manifest.to_json())
        atomic_write_text(self._dir(name) / "LATEST", f"{version}\n")
        return manifest

    def read(self, name: str, version: int | None = None) -> pl.DataFrame:
        return pl.read_parquet(self.path(name, version) / "data.parquet")

    def quarantine(self, name: str, version: int | None = None) -> pl.DataFrame | None:
        q = self.path(name, version) / "quarantine.parquet"
        return pl.read_parquet(q) if q.exists() else None

    def manifest(self, name: str, version: int | None = None) -> Manifest:
        return Manifest.from_json((self.path(name, version) / "manifest.json").read_text())

    def names(self) -> list[str]:
        if not self.datasets.exists():
            return []
        return sorted(p.name for p in self.datasets.iterdir() if (p / "LATEST").exists())
