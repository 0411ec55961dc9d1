"""Ingest presets: public RL and benchmark datasets read in their own schemas into canonical items.

A preset knows one family of files as published on the Hugging Face hub (the columns and value types of
the ``datasets`` copies, saved to disk, JSONL or Parquet) and turns each row into the canonical item
(flows/schema.py) the project's verifiers score, the way verl's and TRL's preprocessing scripts do:

======================  ==============================================================================
``gsm8k``               ``question``; ``answer`` ending in ``#### N`` -> reference ``N`` (commas
                        dropped); the whole answer (the reasoning) kept as ``metadata.solution``
``math``                Hendrycks MATH and look-alikes (MATH-500): ``problem``; the ``answer`` column
                        when there is one, else the last ``\\boxed{}`` of ``solution``; ``level``
                        ("Level 3" or 3) -> ``metadata.difficulty``; ``type`` / ``subject`` -> task
``numina``              NuminaMath (CoT, 1.5): ``problem``; ``answer`` when usable, else the last
                        ``\\boxed{}`` of ``solution``; ``source`` (olympiads, cn_k12, ...) -> task;
                        ``messages`` kept in metadata
``humaneval``           ``task_id, prompt, canonical_solution, test, entry_point``: metadata ``test``
                        and ``entry_point`` (the code verifier's HumanEval form)
``mbpp``                ``text`` (or sanitized ``prompt``), ``code``, ``test_list`` (shown in the prompt,
                        as in the MBPP paper), ``test_setup_code``, ``test_imports`` (MBPP form)
``apps``                APPS (and TACO): ``question``, ``input_output`` JSON ``{"inputs", "outputs",
                        "fn_name"?}`` -> ``tests`` of ``{input, output}`` or, with ``fn_name``,
                        ``{args, expected}``; ``difficulty`` -> 1..3 (TACO's: 1..5)
``codecontests``        ``description``; ``public_tests`` + ``private_tests`` + ``generated_tests``
                        (``{input: [...], output: [...]}``) -> ``tests``; ``time_limit`` and
                        ``memory_limit_bytes`` -> the verifier's per-item limits
``swebench``            SWE-bench (full, Lite, Verified): the instance fields, ``FAIL_TO_PASS`` and
                        ``PASS_TO_PASS`` as lists or JSON strings -> a ``repair`` item of the ``swe``
                        verifier (scored where its instance image can be built)
======================  ==============================================================================

Code items carry their reference solution as a fenced block, like the project's own code tasks
(flows/tasks/code.py); only that one solution is kept of APPS's and CodeContests's solution lists (they
hold up to hundreds per problem). Every other column of the file goes into ``metadata`` unchanged.

A row a preset cannot read (a field of the wrong type, tests that are not JSON, a GSM8K answer without
``####``) raises `RowError`, which the ingest turns into one line naming the file, the row and the
field: such a file is not what the preset expects. A row that is readable but has nothing to learn from
(no tests, no answer to extract) gets a quarantine reason instead, as any bad row does.

A file is *detected* as a preset when its columns are exactly one of the preset's schemas and the
preset reads its first row (a file with just ``question`` and ``answer`` whose answers have no ``####``
is not GSM8K).

A module per family reads its presets (`math.py`, `code.py`, `swe.py`), on what they share (`base.py`);
this one holds the registry, in the order detection tries it, and the detection.

Not a flow: how curation's ingest step reads public datasets, kept beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flows.curate.presets.base import Converted, Preset, RowError
from flows.curate.presets.code import CODE_PRESETS
from flows.curate.presets.math import MATH_PRESETS
from flows.curate.presets.swe import SWE_PRESET

__all__ = ["PRESETS", "Converted", "Preset", "RowError", "detect", "get"]

# In this order detection tries them (`detect`).
PRESETS: dict[str, Preset] = {p.name: p for p in (*MATH_PRESETS, *CODE_PRESETS, SWE_PRESET)}


def get(name: str, where: str = "preset") -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"{where}: unknown preset {name!r} (known: {', '.join(PRESETS)})") from None


def detect(columns, first_row: Mapping[str, Any] | None) -> Preset | None:
    """The preset whose schema the columns are exactly, provided it reads the first row."""
    for preset in PRESETS.values():
        if preset.matches(columns) and first_row is not None:
            try:
                preset.read(first_row)
            except RowError:
                continue
            return preset
    return None
