"""M1_HOME, where the project keeps its state (datasets, runs, logs, Prefect's database).

It lives apart from flows/store.py, which re-exports it, because the CLI reads it before every command
(`m1 --help` included) and the store pulls polars, half a second of start-up that the CLI does not need.
"""

from __future__ import annotations

import os
from pathlib import Path


def m1_home() -> Path:
    return Path(os.environ.get("M1_HOME", "./.m1")).resolve()
