"""Math word-problem families: each draws a problem with its answer and a short worked solution from a
random generator, worded with varied names, items, places and days so that problems of one family stay
far apart in shingle space (flows/data/synthetic_math.py keeps them distinct and plants defects).

The families climb a difficulty ladder (`metadata.difficulty`, 1-5), so a curriculum's difficulty band
has something to select and the bundled model has something it can learn: 1 copies a number the
problem states, 2 adds two one-digit numbers, 3 takes a one-digit number from a number up to 19, 4 is
two steps on two-digit numbers, 5 multiplies, divides or solves for an unknown. The model of `m1 run`
learns the first levels in its warm start and RL sharpens them; the last two are beyond it.

Not a flow: the families of the bundled math data (flows/data/synthetic_math.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

NAMES = [
    "Ada",
    "Bela",
    "Chen",
    "Dara",
    "Emeka",
    "Farah",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kofi",
    "Lena",
    "Mateo",
    "Nia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Yara",
]
ITEMS = [
    "apple",
    "marble",
    "sticker",
    "pencil",
    "stamp",
    "coin",
    "shell",
    "card",
    "button",
    "ribbon",
    "candle",
    "brick",
    "feather",
    "bead",
    "ticket",
    "acorn",
]
PLACES = [
    "market",
    "library",
    "harbour",
    "school fair",
    "bakery",
    "museum shop",
    "garden centre",
    "train station",
    "bookshop",
    "street festival",
    "farm stall",
    "toy store",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
UNITS = ["metres", "litres", "kilograms", "pages", "laps", "minutes"]


@dataclass
class Problem:
    prompt: str
    answer: int
    solution: str  # a short worked solution ending in \boxed{answer}
    difficulty: int = 5  # 1 (copy a stated number) .. 5 (multiply, divide, solve for an unknown)


def _pick(rng: random.Random, xs: list[str], k: int = 1) -> list[str]:
    return rng.sample(xs, k)


def _scene(rng: random.Random) -> tuple[str, str, str, str, str]:
    """Two people, an item, a place and a day: the varied words that keep problems apart in shingle space."""
    a, b = _pick(rng, NAMES, 2)
    (item,) = _pick(rng, ITEMS)
    (place,) = _pick(rng, PLACES)
    (day,) = _pick(rng, DAYS)
    return a, b, item, place, day


def _shop(rng: random.Random) -> Problem:
    a, b, item, place, day = _scene(rng)
    n1, n2, n3 = rng.randint(12, 90), rng.randint(2, 11), rng.randint(3, 29)
    total = n1 - n2 + n3
    return Problem(
        f"On {day} {a} bought {n1} {item}s at the {place}, gave {n2} {item}s to {b} right away, "
        f"and then found {n3} more {item}s hidden in a box. How many {item}s does {a} have now?",
        total,
        f"{a} starts with {n1}, gives away {n2} leaving {n1 - n2}, then finds {n3}: "
        f"{n1 - n2} + {n3} = {total}. The answer is \\boxed{{{total}}}.",
        difficulty=4,
    )


def _rate(rng: random.Random) -> Problem:
    (a,) = _pick(rng, NAMES)
    (unit,) = _pick(rng, UNITS)
    (day,) = _pick(rng, DAYS)
    per, days = rng.randint(3, 40), rng.randint(2, 14)
    extra = rng.randint(1, 50)
    total = per * days + extra
    return Problem(
        f"Starting on a {day}, {a} logs {per} {unit} every day for {days} days in a row, "
        f"and adds a bonus of {extra} {unit} on the final evening. What total number of {unit} did {a} log?",
        total,
        f"{per} {unit} for {days} days is {per * days}; adding {extra} gives {total}. "
        f"The answer is \\boxed{{{total}}}.",
    )


def _linear(rng: random.Random) -> Problem:
    (a,) = _pick(rng, NAMES)
    x, m, c = rng.randint(2, 30), rng.randint(2, 12), rng.randint(1, 60)
    (item,) = _pick(rng, ITEMS)
    return Problem(
        f"{a} thinks of a secret number of {item}s, multiplies it by {m}, adds {c}, and announces the "
        f"result {m * x + c} to the class. Which number of {item}s did {a} start from?",
        x,
        f"Solve {m}x + {c} = {m * x + c}: {m}x = {m * x}, so x = {x}. The answer is \\boxed{{{x}}}.",
    )


def _share(rng: random.Random) -> Problem:
    a, b, c = _pick(rng, NAMES, 3)
    (item,) = _pick(rng, ITEMS)
    (place,) = _pick(rng, PLACES)
    each, people = rng.randint(2, 25), rng.randint(3, 9)
    left = rng.randint(0, people - 1)
    total = each * people + left
    return Problem(
        f"{a}, {b} and {c} collect {total} {item}s at the {place} and split them between {people} "
        f"children so that each child gets the same amount, keeping the {left} leftover {item}s aside. "
        f"How many {item}s does each child receive?",
        each,
        f"{total} - {left} = {each * people}, and {each * people} / {people} = {each}. "
        f"The answer is \\boxed{{{each}}}.",
    )


def _area(rng: random.Random) -> Problem:
    (a,) = _pick(rng, NAMES)
    (place,) = _pick(rng, PLACES)
    w, h, cut = rng.randint(3, 30), rng.randint(3, 30), rng.randint(1, 2)
    cw, ch = rng.randint(1, w - 1 if w > 1 else 1), rng.randint(1, h - 1 if h > 1 else 1)
    area = w * h - cut * cw * ch
    return Problem(
        f"Behind the {place}, {a} marks a rectangular plot {w} by {h} metres and then removes "
        f"{cut} corner patch{'es' if cut > 1 else ''} of {cw} by {ch} metres for a path. "
        f"What area in square metres remains for planting?",
        area,
        f"{w} * {h} = {w * h}; removing {cut} * {cw} * {ch} = {cut * cw * ch} leaves {area}. "
        f"The answer is \\boxed{{{area}}}.",
    )


def _recall(rng: random.Random) -> Problem:
    """The easy family: the answer is stated in the problem, so even a tiny model can learn it."""
    a, b, item, place, day = _scene(rng)
    n = rng.randint(2, 99)
    return Problem(
        f"{a} packs {n} {item}s at the {place} on {day} while {b} watches. "
        f"Nobody adds or removes any {item}s. How many {item}s did {a} pack?",
        n,
        f"{a} packed {n} {item}s and nothing changed. The answer is \\boxed{{{n}}}.",
        difficulty=1,
    )


def _gift(rng: random.Random) -> Problem:
    """One-digit addition: a sum the model can learn as a table."""
    a, b, item, place, day = _scene(rng)
    x, y = rng.randint(1, 9), rng.randint(1, 9)
    return Problem(
        f"On {day} {a} carries {x} {item}s into the {place}, and later {b} hands over {y} more {item}s "
        f"as a small gift. How many {item}s does {a} hold at the end of the visit?",
        x + y,
        f"{x} + {y} = {x + y}. The answer is \\boxed{{{x + y}}}.",
        difficulty=2,
    )


def _sold(rng: random.Random) -> Problem:
    """Take a one-digit number from a number up to 19."""
    a, b, item, place, day = _scene(rng)
    x = rng.randint(3, 19)
    y = rng.randint(1, min(9, x - 1))
    return Problem(
        f"{a} brings {x} {item}s to the {place} on {day} and sells {y} of them to {b} before noon. "
        f"How many {item}s does {a} still have after the sale?",
        x - y,
        f"{x} - {y} = {x - y}. The answer is \\boxed{{{x - y}}}.",
        difficulty=3,
    )


TEMPLATES: list[Callable[[random.Random], Problem]] = [
    _shop,
    _rate,
    _linear,
    _share,
    _area,
    _recall,
    _gift,
    _sold,
]
