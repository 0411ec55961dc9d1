"""Characterisation tests: what every logic task generates and how it judges a fixed set of answers,
pinned in pinned_outputs.json.

A curated item records only (task, difficulty, seed); regenerating it must give the same puzzle in any
process and any later version, or stored datasets, calibrations and dedup against earlier items silently
stop matching. Verdicts are pinned too: the reward *and* the detail that explains it, for gold answers,
near misses and fuzzed answers at every level, so a rule that stops firing is seen even when another
rule still rejects the answer for a different reason.

An intended change (a new rule, a better message, a new level) is recorded with
    M1_UPDATE_PINS=1 python -m pytest tests/logic/test_pinned_outputs.py
and the diff of pinned_outputs.json shows what moved.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import pytest

from tests.logic.test_fuzz_contract import (
    CYRILLIC,
    FULLWIDTH,
    STRAY,
    edge_numbers,
    insert_at_space,
    lookalike,
    one_token_changes,
)
from verifiers.logic import TASKS, LogicInstance

PINS = Path(__file__).with_name("pinned_outputs.json")
UPDATE = os.environ.get("M1_UPDATE_PINS") == "1"
SEEDS = (0, 1)
NAMES = sorted(TASKS)


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def generated(name: str) -> dict[str, str]:
    """(level, seed) -> digests of prompt and puzzle and of four near misses, the measured difficulty and
    the gold answer."""
    task, out = TASKS[name], {}
    for d in task.difficulties:
        for seed in SEEDS:
            inst = task.generate(d, seed)
            near = digest([task.corrupt(inst, k) for k in range(4)])  # as the tests and calibration use them
            measured = f"{task.measure(inst.puzzle):.6g}"
            out[f"d{d}-s{seed}"] = (
                f"{digest([inst.prompt, inst.puzzle])} {near} measure {measured} {inst.answer}"
            )
    return out


def answers(name: str, inst: LogicInstance) -> list[str]:
    """Responses to judge: gold, the task's near miss, one-token changes, edge numbers, stray tokens,
    repeats, look-alike characters and missing blocks (each a deterministic function of the instance)."""
    rng = random.Random(f"{name}-{inst.difficulty}-{inst.seed}")
    gold = inst.answer
    texts = [gold, TASKS[name].corrupt(inst, inst.seed), *one_token_changes(name, inst, rng)]
    texts += [text for text in edge_numbers(inst, rng) if len(text) < 1000]
    texts += [f"{gold} {STRAY[0]}", insert_at_space(gold, rng.choice(STRAY), rng), f"{gold}\n{gold}", ""]
    texts += [t for t in (lookalike(gold, CYRILLIC, rng), lookalike(gold, FULLWIDTH, rng)) if t]
    return [f"<answer>{t}</answer>" for t in texts] + [gold, f"<think>{gold}</think>"]


def verdicts(name: str) -> dict[str, str]:
    """level -> a count of the verdicts (read in a diff) and a digest of every [response, reward, detail]
    (the full verdicts would be a megabyte; a failure prints the changed level's verdicts as they are now)."""
    task, out = TASKS[name], {}
    for d in task.difficulties:
        inst = task.generate(d, 0)
        found = [[r, *task.verify(inst.puzzle, r)] for r in answers(name, inst)]
        ones = sum(reward == 1.0 for _, reward, _ in found)
        parse = sum(str(details.get("error", "")).startswith("parse error") for *_, details in found)
        out[f"d{d}"] = f"{len(found)} judged, {ones} scored 1, {parse} parse errors, {digest(found)}"
        NOW[(name, f"d{d}")] = found
    return out


NOW: dict[tuple[str, str], list] = {}  # the verdicts behind each digest, for the failure message


def pinned() -> dict:
    return json.loads(PINS.read_text()) if PINS.exists() else {}


def check(kind: str, name: str, now: dict) -> None:
    if UPDATE:
        pins = pinned()
        pins.setdefault(kind, {})[name] = now
        PINS.write_text(json.dumps(pins, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        return
    then = pinned().get(kind, {}).get(name)
    assert then is not None, f"{name} has no pinned {kind}; record it with M1_UPDATE_PINS=1"
    changed = sorted(set(then) ^ set(now)) + [k for k in then if k in now and then[k] != now[k]]
    shown = [f"{k}: pinned {then.get(k)!r}, now {now.get(k)!r} {NOW.get((name, k), '')}" for k in changed[:2]]
    assert not changed, f"{name}: {kind} changed at {changed}; " + "; ".join(shown)[:4000]


@pytest.mark.parametrize("name", NAMES)
def test_generation_matches_the_pins(name):
    check("generation", name, generated(name))


@pytest.mark.parametrize("name", NAMES)
def test_verdicts_match_the_pins(name):
    check("verdicts", name, verdicts(name))
