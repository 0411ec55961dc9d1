"""Cache keys from content for the flows' tasks (flows/runner.py): polars frames, numpy arrays, configs and
dataclasses hashed by value.

Prefect's INPUTS policy hashes a pickle of each argument, and a polars frame's pickle depends on its
chunk layout (a filter or concat may split it differently from run to run), so equal shards would miss
the cache. Here a frame is keyed by its schema and a hash of every row, in order.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np
import polars as pl
from prefect.cache_policies import TASK_SOURCE, CacheKeyFnPolicy
from pydantic import BaseModel


def _feed(h, value: Any) -> None:
    if isinstance(value, pl.DataFrame):
        h.update(repr(value.schema).encode())
        h.update(value.hash_rows(seed=0).to_numpy().tobytes())
    elif isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, BaseModel):
        h.update(value.model_dump_json().encode())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(type(value).__qualname__.encode())
        for f in dataclasses.fields(value):
            _feed(h, getattr(value, f.name))
    elif isinstance(value, dict):
        for key in sorted(value, key=repr):
            h.update(repr(key).encode())
            _feed(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _feed(h, item)
    else:
        h.update(repr(value).encode())


def content_key(_context, parameters: dict[str, Any]) -> str:
    h = hashlib.sha256()
    _feed(h, parameters)
    return h.hexdigest()


# The task's source code plus the content of its inputs.
CONTENT = TASK_SOURCE + CacheKeyFnPolicy(cache_key_fn=content_key)
