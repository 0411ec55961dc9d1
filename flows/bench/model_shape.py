"""Size of the model that the model benchmarks (`decode`, `train-step`) build.

Defaults are a small MiniMax-like model; `--shape FIELD=INT` (repeatable, M1Config field names) overrides
any of them, e.g. `--shape hidden_size=32 --shape num_hidden_layers=2` for a test-sized run.

Not a benchmark of its own: the `--shape` option the model benchmarks share.
"""

from __future__ import annotations

from typing import Annotated

import typer

from flows.errors import InputError

DEFAULT_SHAPE = dict(
    hidden_size=512,
    num_hidden_layers=8,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=64,
    intermediate_size=768,
    num_local_experts=8,
    num_experts_per_tok=2,
    vocab_size=8192,
)

ShapeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--shape", help=f"Override a model size, FIELD=INT (repeatable); fields: {', '.join(DEFAULT_SHAPE)}."
    ),
]
ThreadsOption = Annotated[int | None, typer.Option(min=1, help="torch intra-op threads (default: torch's).")]


def parse_shape(items: list[str] | None) -> dict[str, int]:
    """DEFAULT_SHAPE with the --shape overrides applied; bad items raise InputError."""
    shape = dict(DEFAULT_SHAPE)
    for item in items or []:
        key, _, value = item.partition("=")
        if key not in DEFAULT_SHAPE:
            raise InputError(
                f"--shape {item!r}: unknown field {key!r} (use one of {', '.join(DEFAULT_SHAPE)})"
            )
        try:
            shape[key] = int(value)
        except ValueError:
            raise InputError(f"--shape {item!r}: expected FIELD=INT") from None
        if shape[key] < 1:
            raise InputError(f"--shape {item!r}: must be positive")
    return shape
