"""The code presets: HumanEval, MBPP, APPS (and TACO), CodeContests (the table in
flows/curate/presets/__init__.py says what each reads). Each item carries its reference solution as one
fenced block and the fields the code verifier runs its tests from.

Not a flow: part of curation's ingest presets (flows/curate/presets/__init__.py says why they live here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flows.curate.presets.base import (
    CODE_ANSWER,
    Converted,
    Preset,
    RowError,
    columns,
    fenced,
    kind_of,
    numeric_id,
    read_json,
    read_str_list,
    read_text,
)


def _humaneval(row: Mapping[str, Any]) -> Converted:
    code_prompt = read_text(row, "prompt")
    entry_point = read_text(row, "entry_point")
    test = read_text(row, "test")
    solution = read_text(row, "canonical_solution", required=False)
    prompt = (
        "Complete the following Python function. Answer with the whole function, with the imports it "
        f"needs, in a ```python code block.\n\n```python\n{code_prompt.rstrip()}\n```"
    )
    meta = {"test": test, "entry_point": entry_point, "starter_code": code_prompt, "language": "python"}
    reference = fenced(code_prompt + solution) if solution else None
    return Converted(
        prompt, reference, id=numeric_id("humaneval", row.get("task_id")), task="humaneval", metadata=meta
    )


def _mbpp(row: Mapping[str, Any]) -> Converted:
    text = read_text(row, "text", required=False)
    if text is None:  # the sanitized config calls it `prompt`
        text = read_text(row, "prompt")
    tests = read_str_list(row, "test_list")
    meta: dict[str, Any] = {"test_list": tests, "language": "python"}
    if "test_setup_code" in row:
        meta["test_setup_code"] = read_text(row, "test_setup_code", required=False) or ""
    if "test_imports" in row:
        meta["test_imports"] = read_str_list(row, "test_imports", required=False)
    reason = None if tests else "no tests in test_list"
    prompt = (
        f"{text.strip()}\n\nYour code should pass these tests:\n\n" + "\n".join(tests) + f"\n\n{CODE_ANSWER}"
    )
    code = read_text(row, "code", required=False)
    return Converted(
        prompt,
        fenced(code) if code else None,
        id=numeric_id("mbpp", row.get("task_id")),
        task="mbpp",
        metadata=meta,
        reason=reason,
    )


_APPS_DIFFICULTY = {"introductory": 1, "interview": 2, "competition": 3}
_TACO_DIFFICULTY = {"EASY": 1, "MEDIUM": 2, "MEDIUM_HARD": 3, "HARD": 4, "VERY_HARD": 5}


def _io_text(value: Any, name: str) -> str:
    """A stdin or stdout of APPS: text, or (in some rows) a list of its lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + "\n"
    raise RowError(name, f"expected text or a list of lines, got {kind_of(value)}")


def _expected(value: Any) -> Any:
    """APPS stores a call's result wrapped in a one-element list ([[2]] for 2), as its own harness
    reads it (the result, or the list's only element)."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _apps(row: Mapping[str, Any]) -> Converted:
    question = read_text(row, "question")
    io = read_json(row, "input_output")
    meta: dict[str, Any] = {"language": "python"}
    solutions = read_json(row, "solutions")
    if solutions is not None and not (
        isinstance(solutions, list) and all(isinstance(s, str) for s in solutions)
    ):
        raise RowError("solutions", f"expected a list of programs (or its JSON), got {kind_of(solutions)}")
    reference = fenced(solutions[0]) if solutions else None
    level = row.get("difficulty")
    if isinstance(level, str):
        if (difficulty := _APPS_DIFFICULTY.get(level.lower()) or _TACO_DIFFICULTY.get(level)) is not None:
            meta["difficulty"] = difficulty
        meta["difficulty_name"] = level
    starter = read_text(row, "starter_code", required=False) or ""
    item_id = numeric_id("apps", row.get("problem_id"))
    if io is None:
        return Converted(question, reference, id=item_id, task="apps", metadata=meta, reason="no tests")
    if not isinstance(io, dict):
        raise RowError("input_output", f"expected an object with inputs and outputs, got {kind_of(io)}")
    inputs, outputs = io.get("inputs"), io.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise RowError("input_output", "expected `inputs` and `outputs` lists of the same length")
    fn_name = io.get("fn_name")
    if fn_name is not None and not isinstance(fn_name, str):
        raise RowError("input_output", f"fn_name: expected text, got {kind_of(fn_name)}")
    if fn_name:
        if not all(isinstance(args, list) for args in inputs):
            raise RowError(
                "input_output", "with fn_name, each input must be the list of the call's arguments"
            )
        tests = [
            {"args": args, "expected": _expected(out)} for args, out in zip(inputs, outputs, strict=True)
        ]
        meta["fn_name"] = fn_name
        how = f"Write the function `{fn_name}`; it is called with each test's arguments."
    else:
        tests = [
            {"input": _io_text(i, "input_output"), "output": _io_text(o, "input_output")}
            for i, o in zip(inputs, outputs, strict=True)
        ]
        how = "Read the input from standard input and write the answer to standard output."
    meta["tests"] = tests
    prompt = question.rstrip() + "\n\n" + how
    if starter.strip():
        prompt += f"\n\nStart from this code:\n```python\n{starter.rstrip()}\n```"
    return Converted(
        prompt + f"\n\n{CODE_ANSWER}",
        reference,
        id=item_id,
        task="apps",
        metadata=meta,
        reason=None if tests else "no tests",
    )


_CC_PYTHON3, _CC_CPP = 3, 2  # CodeContests' Solution.Language values
_CC_TESTS = ("public_tests", "private_tests", "generated_tests")


def _cc_difficulty(value: Any) -> int | None:
    """CodeContests' difficulty enum as a level: EASY..HARDEST (1-5) as they are, a Codeforces problem's
    letter (A=7, B=8, ...) as its rank (A -> 1); unknown (0) and external (6) -> None."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if 1 <= value <= 5:
        return value
    return value - 6 if value >= 7 else None


def _codecontests(row: Mapping[str, Any]) -> Converted:
    description = read_text(row, "description")
    tests: list[dict[str, str]] = []
    for name in _CC_TESTS:
        group = read_json(row, name)
        if group is None:
            continue
        if not isinstance(group, dict):
            raise RowError(name, f"expected an object with input and output lists, got {kind_of(group)}")
        inputs, outputs = group.get("input") or [], group.get("output") or []
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
            raise RowError(name, "expected `input` and `output` lists of the same length")
        if not all(isinstance(v, str) for v in [*inputs, *outputs]):
            raise RowError(name, "inputs and outputs must be text")
        tests += [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    meta: dict[str, Any] = {"tests": tests}
    limit = read_json(row, "time_limit")
    if isinstance(limit, dict) and (seconds := (limit.get("seconds") or 0) + (limit.get("nanos") or 0) / 1e9):
        meta["time_limit_s"] = seconds
    memory = row.get("memory_limit_bytes")
    if isinstance(memory, int) and memory > 0:
        meta["memory_mb"] = memory // 2**20
    if row.get("difficulty") is not None:
        meta["contest_difficulty"] = row["difficulty"]  # the enum as stored
        if (difficulty := _cc_difficulty(row["difficulty"])) is not None:
            meta["difficulty"] = difficulty
    reference = None
    solutions = read_json(row, "solutions")
    if isinstance(solutions, dict):
        pairs = list(zip(solutions.get("language") or [], solutions.get("solution") or [], strict=False))
        for wanted, fence in ((_CC_PYTHON3, "python"), (_CC_CPP, "cpp")):
            code = next((c for lang, c in pairs if lang == wanted and isinstance(c, str)), None)
            if code:
                reference = fenced(code, fence)
                break
    elif solutions is not None:
        raise RowError(
            "solutions", f"expected an object with language and solution lists, got {kind_of(solutions)}"
        )
    prompt = (
        description.rstrip()
        + "\n\nRead the input from standard input and write the answer to standard output. "
        + CODE_ANSWER
    )
    return Converted(
        prompt,
        reference,
        id=read_text(row, "name", required=False),
        task="codecontests",
        metadata=meta,
        reason=None if tests else "no tests",
    )


_CC = "name description public_tests private_tests generated_tests source difficulty solutions "
_CC += "incorrect_solutions cf_contest_id cf_index cf_points cf_rating cf_tags is_description_translated "
_CC += "untranslated_description time_limit memory_limit_bytes input_file output_file"

# name, domain, schemas detected (exact column sets), how canonical columns are read (for the record),
# the columns consumed (not copied into metadata as they are), the reader
CODE_PRESETS: tuple[Preset, ...] = (
    Preset(
        "humaneval",
        "code",
        (columns("task_id prompt canonical_solution test entry_point"),),
        {
            "id": ("task_id",),
            "prompt": ("prompt",),
            "reference": ("canonical_solution",),
            "metadata.test": ("test",),
            "metadata.entry_point": ("entry_point",),
        },
        columns("task_id prompt canonical_solution test entry_point"),
        _humaneval,
    ),
    Preset(
        "mbpp",
        "code",
        (
            columns("task_id text code test_list test_setup_code challenge_test_list"),
            columns("source_file task_id prompt code test_imports test_list"),
        ),
        {
            "id": ("task_id",),
            "prompt": ("text", "prompt"),
            "reference": ("code",),
            "metadata.test_list": ("test_list",),
            "metadata.test_setup_code": ("test_setup_code",),
            "metadata.test_imports": ("test_imports",),
        },
        columns("task_id text prompt code test_list test_setup_code test_imports"),
        _mbpp,
    ),
    Preset(
        "apps",
        "code",
        (columns("problem_id question solutions input_output difficulty url starter_code"),),
        {
            "id": ("problem_id",),
            "prompt": ("question",),
            "reference": ("solutions",),
            "metadata.tests": ("input_output",),
            "metadata.difficulty": ("difficulty",),
        },
        columns("problem_id question solutions input_output difficulty"),
        _apps,
    ),
    Preset(
        "codecontests",
        "code",
        (columns(_CC),),
        {
            "id": ("name",),
            "prompt": ("description",),
            "reference": ("solutions",),
            "metadata.tests": _CC_TESTS,
            "metadata.difficulty": ("difficulty",),
            "metadata.time_limit_s": ("time_limit",),
            "metadata.memory_mb": ("memory_limit_bytes",),
        },
        columns(
            "name description public_tests private_tests generated_tests solutions incorrect_solutions "
            "difficulty time_limit memory_limit_bytes"
        ),
        _codecontests,
    ),
)
