"""The SWE task record: SWE-bench's instance fields plus what this project adds (`python_packages`,
`test_cmd`, `image`), read from a SWE-bench JSONL row or an item (top level or ``metadata``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from verifiers.base import ItemError

KINDS = ("repair", "localize", "testgen")
SWE_BENCH_FIELDS = (
    "instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS",
    "problem_statement",
)  # fmt: skip
DEFAULT_PACKAGES = ("pytest",)
# An item's own columns and the response: never part of the task it carries.
_ITEM_KEYS = ("id", "source", "domain", "task", "prompt", "reference", "metadata", "response")
GENERATED_TEST = "test_m1_generated.py"


def _str_list(value: Any, name: str) -> list[str]:
    """A list of strings from a list or a JSON-encoded list (SWE-bench's datasets store the latter)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise ItemError(f"`{name}` is a string but not a JSON list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ItemError(f"`{name}` must be a list of strings")
    return value


@dataclass
class SWETask:
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    problem_statement: str
    python_packages: list[str] = field(default_factory=lambda: list(DEFAULT_PACKAGES))
    test_cmd: str | None = None  # default: sandboxes.swe_run.DEFAULT_TEST_CMD
    image: str | None = None  # the instance image's tag, once built
    extra: dict[str, Any] = field(default_factory=dict)  # other fields, kept as they came

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SWETask:
        """A task from a SWE-bench JSONL row or an item (fields at the top level or in metadata)."""

        meta = row.get("metadata")
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError:
                raise ItemError("`metadata` is not valid JSON") from None
        fields = {
            **(meta if isinstance(meta, Mapping) else {}),
            **{k: v for k, v in row.items() if v is not None},
        }
        get = fields.get
        missing = [f for f in SWE_BENCH_FIELDS if f != "test_patch" and get(f) is None]
        if missing:
            raise ItemError(f"task is missing {', '.join(missing)}")
        for name in ("instance_id", "repo", "base_commit", "patch"):
            if not isinstance(get(name), str) or not get(name).strip():
                raise ItemError(f"`{name}` must be a non-empty string")
        repo = get("repo")
        if PurePosixPath(repo).is_absolute() or ".." in PurePosixPath(repo).parts:
            raise ItemError(f"`repo` must be a relative name like owner/name, got {repo!r}")
        packages = get("python_packages")
        known = {*SWE_BENCH_FIELDS, "python_packages", "test_cmd", "image", *_ITEM_KEYS}
        return cls(
            instance_id=get("instance_id"),
            repo=repo,
            base_commit=get("base_commit"),
            patch=get("patch"),
            test_patch=get("test_patch") or "",
            FAIL_TO_PASS=_str_list(get("FAIL_TO_PASS"), "FAIL_TO_PASS"),
            PASS_TO_PASS=_str_list(get("PASS_TO_PASS"), "PASS_TO_PASS"),
            problem_statement=str(get("problem_statement") or ""),
            python_packages=_str_list(packages, "python_packages") if packages is not None else list(DEFAULT_PACKAGES),
            test_cmd=get("test_cmd") or None,
            image=get("image") or None,
            extra={k: v for k, v in fields.items() if k not in known},
        )  # fmt: skip

    def to_row(self) -> dict[str, Any]:
        row = {k: v for k, v in asdict(self).items() if k != "extra"}
        row = {k: v for k, v in row.items() if v is not None}
        return {**row, **self.extra}

    @property
    def tests(self) -> list[str]:
        return [*self.FAIL_TO_PASS, *self.PASS_TO_PASS]

    def instance_spec(self, repos_dir: str | Path):
        from sandboxes.swe_images import InstanceSpec

        return InstanceSpec(
            self.instance_id, self.repo, Path(repos_dir) / self.repo, self.base_commit, self.test_patch,
            tuple(self.python_packages),
        )  # fmt: skip


def default_repos_dir() -> Path:
    if os.environ.get("M1_SWE_REPOS"):
        return Path(os.environ["M1_SWE_REPOS"])
    return Path(os.environ.get("M1_HOME", "./.m1")).resolve() / "swe" / "repos"
