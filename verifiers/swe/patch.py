"""What a response holds: its unified diff (and the repository paths the diff touches, checked to stay
inside the repository) or its pytest file."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from verifiers.base import ItemError
from verifiers.format import final_section

_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)```", re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- )", re.MULTILINE)


def extract_patch(response: str) -> str:
    """The unified diff in a response: the last ```diff/```patch block (or any block that is a diff),
    else the text from the first ``diff --git``/``---`` line on; '' when there is none."""
    text = final_section(response)
    blocks = _FENCE.findall(text)
    tagged = [body for tag, body in blocks if tag.lower() in ("diff", "patch", "udiff")]
    diffs = tagged or [body for _, body in blocks if _DIFF_START.search(body)]
    if diffs:
        return diffs[-1]
    match = _DIFF_START.search(text)
    return text[match.start() :] if match else ""


def repo_path(name: str) -> str | None:
    """A diff header's path inside the repository (a/ b/ prefixes dropped); None for /dev/null."""
    name = name.strip().split("\t")[0]
    if name == "/dev/null":
        return None
    if name[:2] in ("a/", "b/"):
        name = name[2:]
    return name


def patch_files(patch: str) -> list[str]:
    """The repository paths a unified diff touches; ItemError (the reason) for an empty, malformed or
    out-of-repository diff."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    if not patch.strip():
        raise ItemError("empty patch")
    try:
        parsed = PatchSet(patch if patch.endswith("\n") else patch + "\n")
    except UnidiffParseError as exc:
        raise ItemError(f"malformed diff: {exc}") from None
    if not parsed:
        raise ItemError("malformed diff: no file changes found")
    files: list[str] = []
    for patched in parsed:
        # git apply takes such a change for one to `dev/null` inside the repository.
        if repo_path(patched.source_file) is None and repo_path(patched.target_file) is None:
            raise ItemError("malformed diff: /dev/null on both sides of a file change")
        for raw in (patched.source_file, patched.target_file):
            path = repo_path(raw or "/dev/null")
            if path is None:
                continue
            parts = PurePosixPath(path).parts
            if not path or path.startswith("/") or ".." in parts or (parts and parts[0] == ".git"):
                raise ItemError(f"patch touches files outside the repository: {path}")
            if path not in files:
                files.append(path)
    return files


_PY_FENCE_TAGS = ("python", "py", "python3", "")


def extract_test_file(response: str) -> str:
    """The last Python code block of a response, else the response as a whole."""
    text = final_section(response)
    blocks = [body for tag, body in _FENCE.findall(text) if tag.lower() in _PY_FENCE_TAGS]
    return blocks[-1] if blocks else text
