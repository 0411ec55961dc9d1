"""Helpers for Prefect artifacts: keys they accept, PNG plots written atomically, and inline in markdown.

Not a flow: what the flows and their reports share to publish Prefect artifacts; the libraries know
nothing of Prefect, so it lives with the flows.
"""

from __future__ import annotations

import base64
from pathlib import Path

from flows.atomic import atomic_path


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys take lowercase letters, digits and dashes: ``("My run", "eval")`` -> ``my-run-eval``."""
    return "-".join("".join(ch if ch.isalnum() else "-" for ch in p.lower()) for p in parts)


def embed_png(path: str | Path, alt: str) -> str:
    """Markdown that shows a PNG inline (Prefect artifacts cannot reference local files)."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"


def save_png(fig, path: str | Path, dpi: int = 110) -> Path:
    """Write a matplotlib figure to `path` as PNG atomically (a reader never sees half a plot), then
    close it so that pyplot does not keep every figure of a long run alive."""
    import matplotlib.pyplot as plt  # heavy, and only where a plot is drawn

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    plt.close(fig)
    return Path(path)
