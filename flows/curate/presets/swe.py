"""The SWE-bench preset (full, Lite, Verified): an instance read into the `swe` verifier's repair item.

Not a flow: part of curation's ingest presets (flows/curate/presets/__init__.py says why they live here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flows.curate.presets.base import Converted, Preset, RowError, columns, read_str_list, read_text
from verifiers.base import ItemError
from verifiers.swe import SWETask

_SWE_DIFFICULTY = {"<15 min fix": 1, "15 min - 1 hour": 2, "1-4 hours": 3, ">4 hours": 4}
_SWE_REPAIR = (
    "Fix the issue. Answer with a patch in unified diff format (as `git diff` prints it, paths relative to "
    "the repository root) in a ```diff code block. Do not change the tests."
)


def _swebench(row: Mapping[str, Any]) -> Converted:
    """SWE-bench's instance -> the `swe` verifier's repair item (flows/swe/items.py's schema). The
    prompt holds the issue without code context: the repository is not checked out at ingest."""
    for name in ("instance_id", "repo", "base_commit", "patch", "problem_statement"):
        read_text(row, name)
    fields = dict(row)
    for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        fields[name] = read_str_list(row, name)
    try:
        task = SWETask.from_row(fields)
    except ItemError as exc:
        named = re.search(r"`(\w+)`", str(exc))
        raise RowError(named.group(1) if named else "row", str(exc)) from None
    meta = task.to_row()
    label = meta.get("difficulty")
    if isinstance(label, str) and label in _SWE_DIFFICULTY:
        meta["difficulty_label"], meta["difficulty"] = label, _SWE_DIFFICULTY[label]
    prompt = f"Repository: {task.repo}\n\nIssue:\n{task.problem_statement.strip()}\n\n{_SWE_REPAIR}"
    reason = None if task.FAIL_TO_PASS else "no FAIL_TO_PASS tests"
    return Converted(
        prompt, task.patch, id=f"{task.instance_id}:repair", task="repair", metadata=meta, reason=reason
    )


_SWE = "repo instance_id base_commit patch test_patch problem_statement hints_text created_at version "
_SWE += "FAIL_TO_PASS PASS_TO_PASS environment_setup_commit"

SWE_PRESET = Preset(
    "swebench",
    "swe",
    (columns(_SWE), columns(_SWE + " difficulty")),
    {
        "id": ("instance_id",),
        "prompt": ("problem_statement",),
        "reference": ("patch",),
        "metadata.difficulty": ("difficulty",),
    },
    columns(_SWE + " difficulty"),
    _swebench,
)
