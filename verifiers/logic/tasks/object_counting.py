"""Object counting: a chatty inventory of things ("two violins, a goat, ...", later with things given
away or bought); count the items of one category."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask, ParseError, exact_result
from verifiers.logic.textutil import SEPARATORS, parse_int, scan, strip_wrapping

# category -> (singular, plural)
ITEMS: dict[str, list[tuple[str, str]]] = {
    "animals": [
        ("dog", "dogs"),
        ("cat", "cats"),
        ("rabbit", "rabbits"),
        ("goat", "goats"),
        ("cow", "cows"),
        ("pig", "pigs"),
        ("duck", "ducks"),
        ("snake", "snakes"),
        ("mouse", "mice"),
        ("donkey", "donkeys"),
        ("frog", "frogs"),
        ("chicken", "chickens"),
    ],
    "fruits": [
        ("apple", "apples"),
        ("banana", "bananas"),
        ("peach", "peaches"),
        ("plum", "plums"),
        ("orange", "oranges"),
        ("strawberry", "strawberries"),
        ("nectarine", "nectarines"),
        ("blackberry", "blackberries"),
        ("grape", "grapes"),
    ],
    "vegetables": [
        ("carrot", "carrots"),
        ("potato", "potatoes"),
        ("onion", "onions"),
        ("cabbage", "cabbages"),
        ("cauliflower", "cauliflowers"),
        ("yam", "yams"),
        ("turnip", "turnips"),
        ("radish", "radishes"),
    ],
    "musical instruments": [
        ("piano", "pianos"),
        ("flute", "flutes"),
        ("violin", "violins"),
        ("drum", "drums"),
        ("trumpet", "trumpets"),
        ("clarinet", "clarinets"),
        ("trombone", "trombones"),
        ("accordion", "accordions"),
    ],
}
CATEGORY_WORDS = {w for category in ITEMS for w in category.split()}
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()


def amount(k: int, item: tuple[str, str]) -> str:
    if k == 1:
        article = "an" if item[0][0] in "aeiou" else "a"
        return f"{article} {item[0]}"
    return f"{NUMBER_WORDS[k]} {item[1]}"


class ObjectCounting(LogicTask):
    name = "object_counting"
    description = "Count the items of one category in a described collection (with changes later on)."
    levels = {
        1: "3 kinds of item, up to 2 each",
        2: "5 kinds, up to 3 each",
        3: "7 kinds, up to 4 each",
        4: "9 kinds, up to 4 each, 1 change",
        5: "11 kinds, up to 5 each, 2 changes",
        6: "14 kinds, up to 5 each, 4 changes",
    }
    sizes = {1: (3, 2, 0), 2: (5, 3, 0), 3: (7, 4, 0), 4: (9, 4, 1), 5: (11, 5, 2), 6: (14, 5, 4)}

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        kinds, most, changes = self.sizes[difficulty]
        category = rng.choice(sorted(ITEMS))
        pool = [(c, it) for c in sorted(ITEMS) for it in ITEMS[c]]
        chosen = [(category, rng.choice(ITEMS[category]))]
        chosen += rng.sample([x for x in pool if x not in chosen], kinds - 1)
        rng.shuffle(chosen)
        counts = {it: rng.randint(1, most) for _, it in chosen}
        text = (
            "I have "
            + ", ".join(amount(counts[it], it) for _, it in chosen[:-1])
            + f", and {amount(counts[chosen[-1][1]], chosen[-1][1])}."
        )
        events = []
        for _ in range(changes):
            _, it = rng.choice(chosen)
            if counts[it] > 1 and rng.random() < 0.5:
                k = rng.randint(1, counts[it] - 1)
                counts[it] -= k
                events.append(f"Then I gave away {NUMBER_WORDS[k]} of the {it[1]}.")
            else:
                k = rng.randint(1, 3)
                counts[it] += k
                events.append(f"Then I got {NUMBER_WORDS[k]} more {it[0] if k == 1 else it[1]}.")
        total = sum(counts[it] for c, it in chosen if c == category)
        prompt = (
            f"{text} {' '.join(events)}".strip()
            + f"\n\nHow many {category} do I have now? Give the number. {ANSWER_FORMAT} Example: <answer>5</answer>"
        )
        puzzle = {"category": category, "kinds": kinds, "changes": changes, "count": total}
        return LogicInstance(self.name, difficulty, seed, prompt, str(total), puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        return exact_result(parse_count(answer), puzzle["count"])

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["kinds"] + 2 * puzzle["changes"])

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        return str(int(instance.answer) + random.Random(seed).choice([-1, 1]))


# Words a short answer sentence may wrap the number in ("I count five in total"); any other word is
# stray text, so the answer stays one number however it is phrased.
FILLER = set("i count counted have has there are is in total the answer now of them all items".split())


def parse_count(answer: str) -> int:
    """One integer, in digits or as an English number word up to twenty, optionally inside a short
    sentence of FILLER words; a second number or any other word is a parse error."""
    text = strip_wrapping(answer)
    tokens = [t.lower() for t in scan(text, r"[A-Za-z]+|\d+", SEPARATORS + ".:", "a count")]
    numbers = [t for t in tokens if t.isdigit() or t in NUMBER_WORDS]
    stray = [t for t in tokens if t not in numbers and t not in FILLER and t not in CATEGORY_WORDS]
    if stray:
        raise ParseError(f"unexpected {stray[0]!r} in a count")
    if len(numbers) != 1:
        raise ParseError(f"expected one number, found {len(numbers)}")
    return NUMBER_WORDS.index(numbers[0]) if numbers[0] in NUMBER_WORDS else parse_int(numbers[0])


TASK = ObjectCounting()
