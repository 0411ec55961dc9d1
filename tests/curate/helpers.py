"""Small helpers shared by the curation tests."""

from __future__ import annotations

import json


def write_jsonl(path, rows: list[dict]):
    """Write dicts as JSON lines (UTF-8, one object per line); returns the path."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def removed_reasons(res) -> dict[str, str]:
    """id -> reason of the rows a step removed."""
    return dict(zip(res.removed["id"], res.removed["reason"], strict=True))
