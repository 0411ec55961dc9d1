"""Bit manipulation: apply a sequence of fixed-width bitwise operations to a binary number."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask

OPS = ("AND", "OR", "XOR", "NOT", "SHL", "SHR", "ROL", "ROR")


def apply(op: list[Any], x: int, width: int) -> int:
    mask = (1 << width) - 1
    name, arg = op
    if name == "AND":
        return x & arg
    if name == "OR":
        return x | arg
    if name == "XOR":
        return x ^ arg
    if name == "NOT":
        return ~x & mask
    if name == "SHL":
        return (x << arg) & mask
    if name == "SHR":
        return x >> arg
    if name == "ROL":
        return ((x << arg) | (x >> (width - arg))) & mask
    return ((x >> arg) | (x << (width - arg))) & mask  # ROR


def describe(op: list[Any], width: int) -> str:
    name, arg = op
    if name in ("AND", "OR", "XOR"):
        return f"{name} with {arg:0{width}b}"
    if name == "NOT":
        return "NOT (flip every bit)"
    what = {"SHL": "shift left", "SHR": "shift right", "ROL": "rotate left", "ROR": "rotate right"}[name]
    return f"{what} by {arg}"


class BitManipulation(LogicTask):
    name = "bit_manipulation"
    description = "Apply AND/OR/XOR/NOT/shift/rotate steps to a fixed-width binary number."
    levels = {
        1: "4 bits, 2 operations",
        2: "6 bits, 3 operations",
        3: "8 bits, 4 operations",
        4: "8 bits, 6 operations",
        5: "12 bits, 8 operations",
        6: "16 bits, 10 operations",
    }
    sizes = {1: (4, 2), 2: (6, 3), 3: (8, 4), 4: (8, 6), 5: (12, 8), 6: (16, 10)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        width, count = self.sizes[difficulty]
        x = start = rng.getrandbits(width)
        ops: list[list[Any]] = []
        for _ in range(count):
            name = rng.choice(OPS)
            arg = (
                rng.getrandbits(width)
                if name in ("AND", "OR", "XOR")
                else 0
                if name == "NOT"
                else rng.randint(1, width - 1)
            )
            ops.append([name, arg])
            x = apply([name, arg], x, width)
        steps = "\n".join(f"{k}. {describe(op, width)}" for k, op in enumerate(ops, 1))
        prompt = (
            f"Start from the {width}-bit binary number {start:0{width}b}. Apply these operations in order, "
            f"always keeping exactly {width} bits (bits shifted out are lost, shifts bring in zeros, rotations "
            f"wrap around):\n{steps}\n\nGive the final {width}-bit binary number. {ANSWER_FORMAT} "
            f"Example: <answer>{'01' * (width // 2)}</answer>"
        )
        puzzle = {"width": width, "start": start, "ops": ops, "result": x}
        return LogicInstance(self.name, difficulty, seed, prompt, f"{x:0{width}b}", puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        width = puzzle["width"]
        text = answer.strip().strip("`'\"").replace(" ", "").replace("_", "")
        text = text[2:] if text.lower().startswith("0b") else text
        if not text or set(text) - {"0", "1"} or len(text) > width:
            return 0.0, {"error": f"parse error: expected a binary number of at most {width} bits"}
        got, want = text.zfill(width), f"{puzzle['result']:0{width}b}"
        if got == want:
            return 1.0, {"correct": True}
        i = next(k for k in range(width) if got[k] != want[k])
        return 0.0, {"correct": False, "first_wrong_bit_from_left": i + 1, "expected": want}

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["width"] * len(puzzle["ops"]))

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        bits = list(instance.answer)
        k = random.Random(seed).randrange(len(bits))
        bits[k] = "1" if bits[k] == "0" else "0"
        return "".join(bits)


TASK = BitManipulation()
