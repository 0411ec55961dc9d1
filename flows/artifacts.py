"""Helpers for Prefect artifacts: keys they accept, and PNG plots inline in markdown."""

from __future__ import annotations

import base64
from pathlib import Path


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys take lowercase letters, digits and dashes: ``("My run", "eval")`` -> ``my-run-eval``."""
    return "-".join("".join(ch if ch.isalnum() else "-" for ch in p.lower()) for p in parts)


def embed_png(path: str | Path, alt: str) -> str:
    """Markdown that shows a PNG inline (Prefect artifacts cannot reference local files)."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"
