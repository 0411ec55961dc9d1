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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flows.curate.answers import reference_box


class RowError(Exception):
    """A row the preset cannot read: `field` names the column, the message says what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass
class Converted:
    """One row as canonical fields (None: the ingest's default) plus, when the row must be
    quarantined, the reason."""

    prompt: str | None
    reference: str | None = None
    id: str | None = None
    task: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None


@dataclass(frozen=True)
class Preset:
    name: str
    domain: str
    schemas: tuple[frozenset[str], ...]  # column sets detected as this preset
    uses: dict[str, tuple[str, ...]]  # canonical column (or metadata.<key>) -> the file's columns it is
    # read from, the first present one first (the record of how a source was read)
    consumes: frozenset[str]  # columns turned into canonical fields (not copied into metadata as they are)
    read: Callable[[Mapping[str, Any]], Converted]

    def matches(self, columns) -> bool:
        return frozenset(columns) in self.schemas

    def mapping(self, columns) -> dict[str, str]:
        """Canonical column -> the file's column it is read from (tests: columns), for those it has."""
        out = {}
        for col, sources in self.uses.items():
            if present := [s for s in sources if s in columns]:
                out[col] = " + ".join(present) if col == "metadata.tests" else present[0]
        return out


# -- reading values ----------------------------------------------------------------------------------


def _text(row: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    """A text column's value; None (or "") when absent and not `required`."""
    value = row.get(name)
    if value is None:
        if required:
            raise RowError(name, "missing")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowError(name, f"expected text, got {_kind(value)}")
    return str(value)


def _json(row: Mapping[str, Any], name: str) -> Any:
    """A column that holds a structure, stored as such or as JSON text (the hub's copies do both)."""
    value = row.get(name)
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowError(name, f"not JSON ({exc.msg} at column {exc.pos + 1})") from None
    return value


def _str_list(row: Mapping[str, Any], name: str, *, required: bool = True) -> list[str]:
    value = _json(row, name)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RowError(name, f"expected a list of strings (or its JSON), got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _fenced(code: str, language: str = "python") -> str:
    """A reference solution as the project's code items hold it: one fenced block."""
    return f"```{language}\n{code.rstrip()}\n```"


def _boxed(solution: str, column: str) -> tuple[str | None, str | None]:
    """(answer, quarantine reason) from the last \\boxed{} of a worked solution. This is the
    curation's reading of references (flows/curate/answers.py): an unbalanced last box is a broken
    reference, never an earlier box."""
    answer = reference_box(solution)
    if answer is not None:
        return answer, None
    if "\\boxed" in solution or "\\fbox" in solution:
        return None, f"unbalanced \\boxed{{ in {column}"
    return None, f"no \\boxed{{}} answer in {column}"


def _numeric_id(preset: str, value: Any) -> str | None:
    """Ids that are bare numbers get the preset's name (mbpp/11), as the harnesses name them, so two
    such sources in one run do not clash."""
    if value is None:
        return None
    text = str(value)
    return f"{preset}/{text}" if text.isdigit() else text


_CODE_ANSWER = "Answer with the complete program in a ```python code block."


# -- math --------------------------------------------------------------------------------------------

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_LEVEL = re.compile(r"^\s*(?:level\s*)?(\d+)\s*$", re.IGNORECASE)


def _gsm8k(row: Mapping[str, Any]) -> Converted:
    question = _text(row, "question")
    answer = _text(row, "answer")
    final = answer.rsplit("####", 1)[1].strip() if "####" in answer else ""
    if not final:
        raise RowError("answer", "no final '#### <answer>' line (GSM8K's form)")
    reference = _THOUSANDS.sub("", final)
    return Converted(question, reference, metadata={"solution": answer})


def _difficulty(level: Any) -> int | None:
    """MATH's "Level 3" (or 3) -> 3; "Level ?" (a few MATH rows) -> None."""
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    match = _LEVEL.match(level) if isinstance(level, str) else None
    return int(match.group(1)) if match else None


def _math(row: Mapping[str, Any]) -> Converted:
    problem = _text(row, "problem")
    solution = _text(row, "solution", required=False)
    given = _text(row, "answer", required=False)
    meta: dict[str, Any] = {"solution": solution} if solution is not None else {}
    level = row.get("level")
    if level is not None:
        meta["level"] = level
        if (difficulty := _difficulty(level)) is not None:
            meta["difficulty"] = difficulty
    reference, reason = (given.strip(), None) if given and given.strip() else (None, None)
    if reference is None:
        reference, reason = _boxed(solution, "solution") if solution else (None, "no solution")
    task = _text(row, "type", required=False) or _text(row, "subject", required=False)
    item_id = _text(row, "unique_id", required=False)
    return Converted(problem, reference, id=item_id, task=task, metadata=meta, reason=reason)


_NUMINA_NO_ANSWER = {"proof": "a proof (no answer to check)", "notfound": "answer not found (NuminaMath)"}


def _numina(row: Mapping[str, Any]) -> Converted:
    problem = _text(row, "problem")
    solution = _text(row, "solution", required=False) or ""
    given = (_text(row, "answer", required=False) or "").strip()
    messages = _json(row, "messages")
    if messages is not None and not isinstance(messages, list):
        raise RowError("messages", f"expected a list of messages, got {_kind(messages)}")
    meta: dict[str, Any] = {"solution": solution}
    if messages is not None:
        meta["messages"] = messages
    if given.lower() in _NUMINA_NO_ANSWER:
        return Converted(problem, None, metadata=meta, reason=_NUMINA_NO_ANSWER[given.lower()])
    reference, reason = (given, None) if given else _boxed(solution, "solution")
    return Converted(
        problem, reference, task=_text(row, "source", required=False), metadata=meta, reason=reason
    )


# -- code --------------------------------------------------------------------------------------------


def _humaneval(row: Mapping[str, Any]) -> Converted:
    code_prompt = _text(row, "prompt")
    entry_point = _text(row, "entry_point")
    test = _text(row, "test")
    solution = _text(row, "canonical_solution", required=False)
    prompt = (
        "Complete the following Python function. Answer with the whole function, with the imports it "
        f"needs, in a ```python code block.\n\n```python\n{code_prompt.rstrip()}\n```"
    )
    meta = {"test": test, "entry_point": entry_point, "starter_code": code_prompt, "language": "python"}
    reference = _fenced(code_prompt + solution) if solution else None
    return Converted(
        prompt, reference, id=_numeric_id("humaneval", row.get("task_id")), task="humaneval", metadata=meta
    )


def _mbpp(row: Mapping[str, Any]) -> Converted:
    text = _text(row, "text", required=False)
    if text is None:  # the sanitized config calls it `prompt`
        text = _text(row, "prompt")
    tests = _str_list(row, "test_list")
    meta: dict[str, Any] = {"test_list": tests, "language": "python"}
    if "test_setup_code" in row:
        meta["test_setup_code"] = _text(row, "test_setup_code", required=False) or ""
    if "test_imports" in row:
        meta["test_imports"] = _str_list(row, "test_imports", required=False)
    reason = None if tests else "no tests in test_list"
    prompt = (
        f"{text.strip()}\n\nYour code should pass these tests:\n\n" + "\n".join(tests) + f"\n\n{_CODE_ANSWER}"
    )
    code = _text(row, "code", required=False)
    return Converted(
        prompt,
        _fenced(code) if code else None,
        id=_numeric_id("mbpp", row.get("task_id")),
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
    raise RowError(name, f"expected text or a list of lines, got {_kind(value)}")


def _expected(value: Any) -> Any:
    """APPS stores a call's result wrapped in a one-element list ([[2]] for 2), as its own harness
    reads it (the result, or the list's only element)."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _apps(row: Mapping[str, Any]) -> Converted:
    question = _text(row, "question")
    io = _json(row, "input_output")
    meta: dict[str, Any] = {"language": "python"}
    solutions = _json(row, "solutions")
    if solutions is not None and not (
        isinstance(solutions, list) and all(isinstance(s, str) for s in solutions)
    ):
        raise RowError("solutions", f"expected a list of programs (or its JSON), got {_kind(solutions)}")
    reference = _fenced(solutions[0]) if solutions else None
    level = row.get("difficulty")
    if isinstance(level, str):
        if (difficulty := _APPS_DIFFICULTY.get(level.lower()) or _TACO_DIFFICULTY.get(level)) is not None:
            meta["difficulty"] = difficulty
        meta["difficulty_name"] = level
    starter = _text(row, "starter_code", required=False) or ""
    item_id = _numeric_id("apps", row.get("problem_id"))
    if io is None:
        return Converted(question, reference, id=item_id, task="apps", metadata=meta, reason="no tests")
    if not isinstance(io, dict):
        raise RowError("input_output", f"expected an object with inputs and outputs, got {_kind(io)}")
    inputs, outputs = io.get("inputs"), io.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise RowError("input_output", "expected `inputs` and `outputs` lists of the same length")
    fn_name = io.get("fn_name")
    if fn_name is not None and not isinstance(fn_name, str):
        raise RowError("input_output", f"fn_name: expected text, got {_kind(fn_name)}")
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
        prompt + f"\n\n{_CODE_ANSWER}",
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
    description = _text(row, "description")
    tests: list[dict[str, str]] = []
    for name in _CC_TESTS:
        group = _json(row, name)
        if group is None:
            continue
        if not isinstance(group, dict):
            raise RowError(name, f"expected an object with input and output lists, got {_kind(group)}")
        inputs, outputs = group.get("input") or [], group.get("output") or []
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
            raise RowError(name, "expected `input` and `output` lists of the same length")
        if not all(isinstance(v, str) for v in [*inputs, *outputs]):
            raise RowError(name, "inputs and outputs must be text")
        tests += [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    meta: dict[str, Any] = {"tests": tests}
    limit = _json(row, "time_limit")
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
    solutions = _json(row, "solutions")
    if isinstance(solutions, dict):
        pairs = list(zip(solutions.get("language") or [], solutions.get("solution") or [], strict=False))
        for wanted, fence in ((_CC_PYTHON3, "python"), (_CC_CPP, "cpp")):
            code = next((c for lang, c in pairs if lang == wanted and isinstance(c, str)), None)
            if code:
                reference = _fenced(code, fence)
                break
    elif solutions is not None:
        raise RowError(
            "solutions", f"expected an object with language and solution lists, got {_kind(solutions)}"
        )
    prompt = (
        description.rstrip()
        + "\n\nRead the input from standard input and write the answer to standard output. "
        + _CODE_ANSWER
    )
    return Converted(
        prompt,
        reference,
        id=_text(row, "name", required=False),
        task="codecontests",
        metadata=meta,
        reason=None if tests else "no tests",
    )


# -- SWE ---------------------------------------------------------------------------------------------

_SWE_DIFFICULTY = {"<15 min fix": 1, "15 min - 1 hour": 2, "1-4 hours": 3, ">4 hours": 4}
_SWE_REPAIR = (
    "Fix the issue. Answer with a patch in unified diff format (as `git diff` prints it, paths relative to "
    "the repository root) in a ```diff code block. Do not change the tests."
)


def _swebench(row: Mapping[str, Any]) -> Converted:
    """SWE-bench's instance -> the `swe` verifier's repair item (flows/swe/items.py's schema). The
    prompt holds the issue without code context: the repository is not checked out at ingest."""
    from verifiers.base import ItemError
    from verifiers.swe import SWETask

    for name in ("instance_id", "repo", "base_commit", "patch", "problem_statement"):
        _text(row, name)
    fields = dict(row)
    for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        fields[name] = _str_list(row, name)
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


def _columns(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SWE = "repo instance_id base_commit patch test_patch problem_statement hints_text created_at version "
_SWE += "FAIL_TO_PASS PASS_TO_PASS environment_setup_commit"
_CC = "name description public_tests private_tests generated_tests source difficulty solutions "
_CC += "incorrect_solutions cf_contest_id cf_index cf_points cf_rating cf_tags is_description_translated "
_CC += "untranslated_description time_limit memory_limit_bytes input_file output_file"

# name, domain, schemas detected (exact column sets), how canonical columns are read (for the record),
# the columns consumed (not copied into metadata as they are), the reader
PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "gsm8k",
            "math",
            (_columns("question answer"),),
            {"prompt": ("question",), "reference": ("answer",), "metadata.solution": ("answer",)},
            _columns("question answer"),
            _gsm8k,
        ),
        Preset(
            "math",
            "math",
            (
                _columns("problem level type solution"),
                _columns("problem solution answer subject level unique_id"),
            ),
            {
                "id": ("unique_id",),
                "prompt": ("problem",),
                "reference": ("answer", "solution"),
                "task": ("type", "subject"),
                "metadata.difficulty": ("level",),
                "metadata.solution": ("solution",),
            },
            _columns("problem solution answer type subject level unique_id"),
            _math,
        ),
        Preset(
            "numina",
            "math",
            (
                _columns("source problem solution messages"),
                _columns("problem solution answer problem_type question_type source synthetic"),
            ),
            {
                "prompt": ("problem",),
                "reference": ("answer", "solution"),
                "task": ("source",),
                "metadata.solution": ("solution",),
            },
            _columns("problem solution answer source messages"),
            _numina,
        ),
        Preset(
            "humaneval",
            "code",
            (_columns("task_id prompt canonical_solution test entry_point"),),
            {
                "id": ("task_id",),
                "prompt": ("prompt",),
                "reference": ("canonical_solution",),
                "metadata.test": ("test",),
                "metadata.entry_point": ("entry_point",),
            },
            _columns("task_id prompt canonical_solution test entry_point"),
            _humaneval,
        ),
        Preset(
            "mbpp",
            "code",
            (
                _columns("task_id text code test_list test_setup_code challenge_test_list"),
                _columns("source_file task_id prompt code test_imports test_list"),
            ),
            {
                "id": ("task_id",),
                "prompt": ("text", "prompt"),
                "reference": ("code",),
                "metadata.test_list": ("test_list",),
                "metadata.test_setup_code": ("test_setup_code",),
                "metadata.test_imports": ("test_imports",),
            },
            _columns("task_id text prompt code test_list test_setup_code test_imports"),
            _mbpp,
        ),
        Preset(
            "apps",
            "code",
            (_columns("problem_id question solutions input_output difficulty url starter_code"),),
            {
                "id": ("problem_id",),
                "prompt": ("question",),
                "reference": ("solutions",),
                "metadata.tests": ("input_output",),
                "metadata.difficulty": ("difficulty",),
            },
            _columns("problem_id question solutions input_output difficulty"),
            _apps,
        ),
        Preset(
            "codecontests",
            "code",
            (_columns(_CC),),
            {
                "id": ("name",),
                "prompt": ("description",),
                "reference": ("solutions",),
                "metadata.tests": _CC_TESTS,
                "metadata.difficulty": ("difficulty",),
                "metadata.time_limit_s": ("time_limit",),
                "metadata.memory_mb": ("memory_limit_bytes",),
            },
            _columns(
                "name description public_tests private_tests generated_tests solutions incorrect_solutions "
                "difficulty time_limit memory_limit_bytes"
            ),
            _codecontests,
        ),
        Preset(
            "swebench",
            "swe",
            (_columns(_SWE), _columns(_SWE + " difficulty")),
            {
                "id": ("instance_id",),
                "prompt": ("problem_statement",),
                "reference": ("patch",),
                "metadata.difficulty": ("difficulty",),
            },
            _columns(_SWE + " difficulty"),
            _swebench,
        ),
    )
}


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
