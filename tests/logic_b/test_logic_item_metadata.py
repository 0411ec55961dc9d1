"""The RL item a logic instance becomes: its metadata names the level and seed it came from and is
canonical JSON, so equal puzzles give byte-identical items (deduplication, hashing, caching)."""

from __future__ import annotations

import json

from verifiers.logic.base import LogicInstance
from verifiers.logic.tasks.caesar_cipher import TASK as CAESAR


def test_metadata_records_level_seed_and_puzzle():
    inst = CAESAR.generate(2, 11)
    item = inst.to_item(3)
    assert item["id"] == "caesar_cipher-d2-s11-3"
    assert json.loads(item["metadata"]) == {"difficulty": 2, "seed": 11, "puzzle": inst.puzzle}


def test_metadata_does_not_depend_on_the_order_puzzle_keys_were_written_in():
    puzzle = {"direction": "decrypt", "given": "KHOOR", "key": {"shift": 3, "given": True}, "answer": "HELLO"}
    reordered = dict(reversed(list(puzzle.items())))
    reordered["key"] = {"given": True, "shift": 3}
    a = LogicInstance("caesar_cipher", 1, 0, "p", "HELLO", puzzle).to_item()
    b = LogicInstance("caesar_cipher", 1, 0, "p", "HELLO", reordered).to_item()
    assert a["metadata"] == b["metadata"]
    assert a["metadata"].index('"answer"') < a["metadata"].index('"direction"')
