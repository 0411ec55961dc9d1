"""Every task `m1 logic list` shows works at every level it lists (the built-in ones and reasoning-gym's),
and the tables that decide which reasoning-gym levels are listed (verifiers/logic/reasoning_gym_adapter.py)
stay true for the installed reasoning-gym (skipped when reasoning-gym is absent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

pytest.importorskip("reasoning_gym")

from flows.cli import app  # noqa: E402
from flows.commands.logic import instance_seed  # noqa: E402
from flows.errors import InputError  # noqa: E402
from verifiers.logic import TASKS, get_task  # noqa: E402
from verifiers.logic.base import MAX_ANSWER_CHARS  # noqa: E402
from verifiers.logic.reasoning_gym_adapter import (  # noqa: E402
    ACCEPTED,
    METADATA_REFERENCE,
    NO_REFERENCE,
    UNLISTED,
    _curricula,
    _entry,
    available,
    levels,
    not_offered,
    reference,
    refusal,
    settings,
)

LISTED = [*sorted(TASKS), *(f"rg_{name}" for name in available())]  # what `m1 logic list` shows
CASES = [(name, d) for name in LISTED for d in get_task(name).difficulties]


ITEMS = 3  # per listed level, as `m1 logic generate -t <name> -d <level> -n 3` writes them

# A run generates items in one process (the logic flow) and scores them in others (the gold check of a
# later run, training, `m1 verify`), each with its own hash seed and its own order of tasks. So items
# are generated in one process and scored in another, with another PYTHONHASHSEED and the tasks in the
# reverse order: a verifier that rebuilds a puzzle differently there (a generator that iterates over a
# set, state an earlier task left behind) shows as a gold answer that scores 0.
GENERATE = """
import json, sys
from flows.commands.logic import instance_seed
from verifiers.logic import get_task
with open(sys.argv[2], "w") as out:
    for name, difficulty in json.load(open(sys.argv[1])):
        for i in range(int(sys.argv[3])):
            item = get_task(name).generate(difficulty, instance_seed(0, i)).to_item(i)
            out.write(json.dumps(item) + "\\n")
"""
SCORE = """
import json, sys
from flows.curriculum.prompts import answer_text
from verifiers.logic.verifier import LogicVerifier
items = [json.loads(line) for line in open(sys.argv[1])]
with open(sys.argv[2], "w") as out:
    for item in reversed(items):
        response = "</think>\\n" + answer_text(item)  # the SFT target after the reasoning
        (reward,) = LogicVerifier().verify([item | {"response": response}])
        out.write(json.dumps({"id": item["id"], "reward": reward.reward, "details": reward.details}) + "\\n")
"""


def _in_processes(script: str, hash_seed: str, jobs: list[list[str]]) -> None:
    """`script` once per argument list, side by side (two halves of the cases use both cores)."""
    env = os.environ | {"PYTHONHASHSEED": hash_seed}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, *args], env=env, stderr=subprocess.PIPE, text=True)
        for args in jobs
    ]
    errors = [p.communicate(timeout=1800)[1] for p in procs]
    for p, err in zip(procs, errors, strict=True):
        assert p.returncode == 0, err[-3000:]


@pytest.fixture(scope="module")
def gold_scores(request, tmp_path_factory) -> dict[str, dict]:
    """The items of every selected level (all of them, unless `-k` chose), generated with one hash seed
    and scored with another: id -> result."""
    chosen = {
        (item.callspec.params["name"], item.callspec.params["difficulty"])
        for item in request.session.items
        if getattr(item, "originalname", "")
        == test_every_listed_levels_gold_scores_one_in_another_process.__name__
    }
    cases = [case for case in CASES if case in chosen]  # in the order `m1 logic list` gives
    d = tmp_path_factory.mktemp("gold")
    halves = [cases[0::2], cases[1::2]]
    for k, half in enumerate(halves):
        (d / f"cases{k}.json").write_text(json.dumps(half))
    _in_processes(
        GENERATE, "1", [[str(d / f"cases{k}.json"), str(d / f"items{k}.jsonl"), str(ITEMS)] for k in (0, 1)]
    )
    _in_processes(SCORE, "2", [[str(d / f"items{k}.jsonl"), str(d / f"scores{k}.jsonl")] for k in (0, 1)])
    scores = [json.loads(line) for k in (0, 1) for line in (d / f"scores{k}.jsonl").read_text().splitlines()]
    return {s["id"]: s for s in scores}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "difficulty"), CASES, ids=[f"{n}-d{d}" for n, d in CASES])
def test_every_listed_levels_gold_scores_one_in_another_process(gold_scores, name, difficulty):
    """What `m1 logic generate -t <name> -d <level> -n 3` writes, its gold answer given back as the SFT
    warm start's target after the reasoning (`</think>` then `<answer>REF</answer>`), scored as the logic
    flow's gold check, `m1 verify` and training score it."""
    ids = [f"{name}-d{difficulty}-s{instance_seed(0, i)}-{i}" for i in range(ITEMS)]
    got = [gold_scores[i] for i in ids]
    assert [g["reward"] for g in got] == [1.0] * ITEMS, [g["details"] for g in got]


def test_what_was_broken_is_listed_and_what_cannot_work_is_not():
    # nested option objects reach the config as objects (they were dicts: 'dict' has no 'alphabet')
    assert levels("arc_agi").keys() == levels("rearc").keys() == {1, 2, 3, 4, 5}
    assert levels("knight_swap").keys() == {1, 2, 3, 4, 5}
    assert levels("caesar_cipher").keys() == levels("survo").keys() == {1, 2, 3, 4, 5}
    assert levels("modulo_grid").keys() == {1, 2, 3, 4, 5}
    assert levels("jugs").keys() == {1, 2}
    assert levels("game_of_life").keys() == {1, 2, 3}
    assert levels("rubiks_cube").keys() == {1}
    assert set(not_offered()) == set(NO_REFERENCE)
    assert set(available()) | set(not_offered()) == set(_curricula())


def test_a_level_is_described_by_its_settings_after_the_fix():
    assert levels("caesar_cipher")[5] == "reasoning-gym curriculum level 4: rotation 5..25, words 5..50"
    assert levels("knight_swap")[1] == "reasoning-gym curriculum level 0: nodes 6, pieces 2, steps 1..10"


@pytest.mark.parametrize("dataset", sorted(ACCEPTED))
def test_each_fix_is_needed_and_enough(dataset, monkeypatch):
    """Without its fix, some level's settings are refused by the dataset's own validate(); with it, none."""
    fixed = {d: settings(dataset, d) for d in range(1, 6)}
    assert all(refusal(dataset, f) is None for f in fixed.values())
    monkeypatch.delitem(ACCEPTED, dataset)
    settings.cache_clear()
    try:
        raw = {d: settings(dataset, d) for d in range(1, 6)}
        assert any(refusal(dataset, f) for f in raw.values()), (
            f"{dataset}: the curriculum needs no fix any more"
        )
        for d, f in raw.items():  # a fix only moves fields the curriculum set out of bounds
            assert {k for k in f if f[k] != fixed[d][k]} <= set(fixed[d])
    finally:
        settings.cache_clear()


@pytest.mark.parametrize("dataset", sorted(UNLISTED))
def test_unlisted_levels_are_ones_validate_accepts_and_are_not_listed(dataset):
    unlisted, why = UNLISTED[dataset]
    assert why and not unlisted & levels(dataset).keys()
    assert all(refusal(dataset, settings(dataset, d)) is None for d in unlisted)  # else validate says it


def test_the_unlisted_levels_fail_as_their_reasons_say():
    big = _entry("game_of_life", 4, 0)[1]
    assert len(reference("game_of_life", big)) > MAX_ANSWER_CHARS
    assert reference("rubiks_cube", _entry("rubiks_cube", 2, 0)[1]) == ""  # no example answer past 3x3
    assert reference("rubiks_cube", _entry("rubiks_cube", 1, 0)[1])


@pytest.mark.parametrize("dataset", sorted(NO_REFERENCE))
def test_datasets_not_offered_have_no_reference_and_name_why(dataset):
    entry = _entry(dataset, 1, 0)[1]
    assert entry["answer"] is None and dataset not in METADATA_REFERENCE
    with pytest.raises(ValueError, match="has no reference answer"):
        reference(dataset, entry)
    with pytest.raises(KeyError, match=f"'{dataset}' is not offered: no reference answer"):
        get_task(f"rg_{dataset}")


@pytest.mark.parametrize("dataset", sorted(METADATA_REFERENCE))
def test_a_reference_from_the_metadata_is_the_gold_answer(dataset):
    task = get_task(f"rg_{dataset}")
    inst = task.generate(1, 3)
    assert _entry(dataset, 1, 3)[1]["answer"] is None and inst.answer
    assert task.verify(inst.puzzle, f"<answer>{inst.answer}</answer>")[0] == 1.0
    assert task.verify(inst.puzzle, "<answer>no</answer>")[0] < 1.0


def test_logic_list_names_the_datasets_not_offered_and_lists_levels_that_work():
    out = CliRunner().invoke(app, ["logic", "list", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert got["not_offered"] == not_offered()
    jugs = next(t for t in got["tasks"] if t["name"] == "rg_jugs")
    assert (jugs["min_difficulty"], jugs["max_difficulty"], sorted(jugs["levels"])) == (1, 2, ["1", "2"])
    table = CliRunner().invoke(app, ["logic", "list"], terminal_width=400)
    assert "reasoning-gym's boxnet is not offered: no reference answer" in table.output


def test_generate_at_an_unlisted_level_is_one_line_naming_the_levels(tmp_path):
    out = CliRunner().invoke(
        app, ["logic", "generate", "-t", "rg_jugs", "-d", "5", "-o", str(tmp_path / "j.jsonl")]
    )
    assert isinstance(out.exception, InputError)
    assert str(out.exception) == "--difficulty 5: rg_jugs has levels 1..2"


# `m1 logic generate` as users run it, with reasoning-gym's generator failing on the second instance.
FAILING = """
import sys
from verifiers.logic.reasoning_gym_adapter import ReasoningGymTask
real = ReasoningGymTask.generate
def generate(self, difficulty, seed):
    if seed == 1:
        raise AssertionError("min_nodes must be >= 6\\n(more text)")
    return real(self, difficulty, seed)
ReasoningGymTask.generate = generate
sys.argv = ["m1", *sys.argv[1:]]
from flows.cli import main
main()
"""


def test_a_generator_failure_exits_2_with_one_line_naming_task_level_and_seed(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("before\n")
    args = ["logic", "generate", "-t", "rg_basic_arithmetic", "-d", "3", "-n", "3", "-o", str(target)]
    done = subprocess.run([sys.executable, "-c", FAILING, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "error: rg_basic_arithmetic at difficulty 3: the generator failed on seed 1: "
        "AssertionError: min_nodes must be >= 6"
    )
    assert target.read_text() == "before\n"  # the output is written whole or not at all
