"""Time sequence (meeting scheduling): given everyone's busy times in a working day, find the earliest
start at which all are free for the whole meeting. The earliest start is unique by definition."""

from __future__ import annotations

import random
import re
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError
from verifiers.logic.textutil import NAMES, strip_wrapping

DAY_START, DAY_END = 9 * 60, 18 * 60


def hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def earliest_start(busy: list[list[int]], duration: int, step: int) -> int | None:
    """The first start on the step grid where [start, start + duration) overlaps no busy interval."""
    for start in range(DAY_START, DAY_END - duration + 1, step):
        if all(start + duration <= a or start >= b for a, b in busy):
            return start
    return None


class TimeSequence(LogicTask):
    name = "time_sequence"
    description = "Find the earliest time when everyone is free for a meeting of a given length."
    levels = {
        1: "2 people, 2 busy slots each, 30-minute grid",
        2: "3 people, 2 slots each, 30-minute grid",
        3: "3 people, 3 slots each, 15-minute grid",
        4: "4 people, 3 slots each, 15-minute grid",
        5: "5 people, 4 slots each, 5-minute grid",
        6: "6 people, 4 slots each, 5-minute grid",
    }
    sizes = {1: (2, 2, 30), 2: (3, 2, 30), 3: (3, 3, 15), 4: (4, 3, 15), 5: (5, 4, 5), 6: (6, 4, 5)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        people, slots, step = self.sizes[difficulty]
        names = rng.sample(NAMES, people)
        durations = [30, 45, 60, 90] if step < 30 else [30, 60]
        while True:  # draw schedules until some meeting length fits after 09:00, then pick one that does
            schedule = {nm: _busy_slots(rng, slots, step) for nm in names}
            busy = [iv for ivs in schedule.values() for iv in ivs]
            starts = {d: earliest_start(busy, d, step) for d in durations}
            fitting = [d for d in durations if starts[d] is not None and starts[d] > DAY_START]
            if fitting:
                duration = rng.choice(fitting)
                start = starts[duration]
                break
        lines = "\n".join(
            f"{nm} is busy " + ", ".join(f"{hhmm(a)}-{hhmm(b)}" for a, b in ivs) + "."
            for nm, ivs in schedule.items()
        )
        prompt = (
            f"The working day runs from {hhmm(DAY_START)} to {hhmm(DAY_END)}. Busy times (start-end):\n{lines}\n\n"
            f"What is the earliest time at which a {duration}-minute meeting with everyone can start, if "
            f"meetings start on a {step}-minute boundary and must end by {hhmm(DAY_END)}? A meeting may start "
            f"exactly when a busy time ends. Give the start time as HH:MM (24-hour). {ANSWER_FORMAT} "
            "Example: <answer>13:30</answer>"
        )
        puzzle = {
            "busy": {nm: ivs for nm, ivs in schedule.items()},
            "duration": duration,
            "step": step,
            "start": start,
        }
        return LogicInstance(self.name, difficulty, seed, prompt, hhmm(start), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        got = parse_time(answer)
        want = puzzle["start"]
        if got == want:
            return 1.0, {"correct": True}
        busy = [iv for ivs in puzzle["busy"].values() for iv in ivs]
        clash = [hhmm(a) + "-" + hhmm(b) for a, b in busy if not (got + puzzle["duration"] <= a or got >= b)]
        reason = f"clashes with {clash[0]}" if clash else "a free time, but not the earliest"
        return 0.0, {"correct": False, "reason": reason, "got": hhmm(got)}

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(sum(len(v) for v in puzzle["busy"].values()) * 60 / puzzle["step"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        start = instance.puzzle["start"] + random.Random(seed).choice([-1, 1]) * instance.puzzle["step"]
        return hhmm(start)


def _busy_slots(rng: random.Random, count: int, step: int) -> list[list[int]]:
    """Non-overlapping busy intervals on the grid, sorted."""
    grid = list(range(DAY_START, DAY_END, step))
    out: list[list[int]] = []
    for _ in range(count * 4):
        a = rng.choice(grid)
        b = min(DAY_END, a + rng.choice([30, 45, 60, 90, 120]) // step * step or step)
        if all(b <= x or a >= y for x, y in out):
            out.append([a, b])
        if len(out) == count:
            break
    return sorted(out)


def parse_time(answer: str) -> int:
    """Minutes after midnight from the whole answer: '13:30', '1:30 pm', '13.30', '13h30'."""
    text = strip_wrapping(answer)
    m = re.fullmatch(
        r"(\d{1,2})\s*[:.h]\s*(\d{2})\s*(?:([ap])\.?m\.?)?", text, flags=re.IGNORECASE | re.ASCII
    )
    if not m:
        raise ParseError(f"expected a time like 13:30, got {text[:30]!r}")
    hour, minute = int(m.group(1)), int(m.group(2))
    suffix = (m.group(3) or "").lower()
    if minute > 59 or hour > (12 if suffix else 23) or (suffix and hour == 0):
        raise ParseError(f"{text!r} is not a time of day")
    if suffix == "p" and hour < 12:
        hour += 12
    if suffix == "a" and hour == 12:
        hour = 0
    return hour * 60 + minute


TASK = TimeSequence()
