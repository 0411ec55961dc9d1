"""The general-domain dataset (`{run}-general`): open-ended prompts with reference answers.

No model writes these here, so they are templated from the bundled math generator's vocabulary: short
writing tasks (a note, a sign, a reply, a summary, a thank-you line) whose quality a reader would judge
by (1) carrying the one fact the prompt gives (a day, a price, an hour, a name: the item's ``key``),
(2) following its explicit instructions (word limit, words to mention: IFEval-style ``constraints`` that
the `constraints` verifier checks), and (3) not much else. Each item's reference is a good answer.

These are the items the judges score in the `general` curriculum stage (`genrm-grade` against their
references in tiny.toml, the pairwise `genrm` in m1.toml); `rule_grade` (flows/genrm/labels.py) turns
(1)+(2) into the true grade the judge is trained and evaluated on.

Not a flow: the data the general-task flow (flows/genrm/flow.py) writes, kept beside it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl

from flows.data.word_problems import DAYS, ITEMS, NAMES, PLACES
from flows.schema import ITEM_COLUMNS, validate_items

KEY_KINDS: dict[str, list[str]] = {
    "day": DAYS,
    "name": NAMES,
    "number": [str(n) for n in range(2, 100)],
}


@dataclass
class GeneralTask:
    prompt: str
    reference: str
    key: str
    key_kind: str
    constraints: list[dict] = field(default_factory=list)


def _note(rng: random.Random) -> GeneralTask:
    a, b = rng.sample(NAMES, 2)
    place, day, w = rng.choice(PLACES), rng.choice(DAYS), rng.randint(14, 20)
    return GeneralTask(
        f"Write a short note to {b} saying that {a} will meet them at the {place} on {day}. "
        f"Use at most {w} words.",
        f"Hi {b}, {a} will meet you at the {place} on {day}.",
        day,
        "day",
        [{"type": "word_count", "max": w}, {"type": "keywords", "words": [b, place]}],
    )


def _sign(rng: random.Random) -> GeneralTask:
    item, place, n, w = rng.choice(ITEMS), rng.choice(PLACES), rng.randint(2, 99), rng.randint(10, 14)
    return GeneralTask(
        f"Write a one-line sign for the {place} announcing that {item}s cost {n} coins today. "
        f"Use at most {w} words.",
        f"{item.capitalize()}s today: only {n} coins each at the {place}!",
        str(n),
        "number",
        [{"type": "word_count", "max": w}, {"type": "keywords", "words": [f"{item}s"]}],
    )


def _reply(rng: random.Random) -> GeneralTask:
    a, place, h, w = rng.choice(NAMES), rng.choice(PLACES), rng.randint(6, 11), rng.randint(12, 16)
    return GeneralTask(
        f"{a} asks when the {place} opens. It opens at {h} o'clock. "
        f"Reply to {a} in one sentence of at most {w} words.",
        f"Hi {a}, the {place} opens at {h} o'clock.",
        str(h),
        "number",
        [{"type": "word_count", "max": w}, {"type": "keywords", "words": [a]}],
    )


def _summary(rng: random.Random) -> GeneralTask:
    a, b = rng.sample(NAMES, 2)
    item, place, n, w = rng.choice(ITEMS), rng.choice(PLACES), rng.randint(2, 30), rng.randint(12, 16)
    return GeneralTask(
        f"Summarise in at most {w} words: {a} walked to the {place}, bought {n} {item}s there "
        f"and gave every one of them to {b} as a present.",
        f"{a} bought {n} {item}s at the {place} for {b}.",
        b,
        "name",
        [{"type": "word_count", "max": w}, {"type": "keywords", "words": [a, f"{item}s"]}],
    )


def _thanks(rng: random.Random) -> GeneralTask:
    a, b = rng.sample(NAMES, 2)
    item, place = rng.choice(ITEMS), rng.choice(PLACES)
    return GeneralTask(
        f"Write a thank-you line from {a} to {b} for the {item}s {b} brought from the {place}. "
        f"Mention the {item}s and keep it under 16 words.",
        f"Thank you, {b}, for the lovely {item}s from the {place}! - {a}",
        b,
        "name",
        [{"type": "word_count", "max": 15}, {"type": "keywords", "words": [f"{item}s"]}],
    )


TEMPLATES: dict[str, Callable[[random.Random], GeneralTask]] = {
    "note": _note,
    "sign": _sign,
    "reply": _reply,
    "summary": _summary,
    "thanks": _thanks,
}


def general_tasks(n: int, seed: int) -> list[tuple[str, GeneralTask]]:
    """n (template name, task) pairs with distinct prompts, deterministic in seed."""
    rng = random.Random(f"general/{seed}")
    names = list(TEMPLATES)
    out, seen = [], set()
    while len(out) < n:
        name = names[len(out) % len(names)]
        task = TEMPLATES[name](rng)
        if task.prompt not in seen:
            seen.add(task.prompt)
            out.append((name, task))
    return out


def to_item(index: int, name: str, task: GeneralTask, seed: int) -> dict:
    return {
        "id": f"general-{seed}-{index:05d}",
        "source": "genrm-general",
        "domain": "general",
        "task": name,
        "prompt": task.prompt,
        "reference": task.reference,
        "metadata": json.dumps(
            {"key": task.key, "key_kind": task.key_kind, "constraints": task.constraints}, sort_keys=True
        ),
    }


def general_items(n: int, seed: int = 0) -> pl.DataFrame:
    """The canonical items of `{run}-general`, validated against the schema."""
    rows = [to_item(i, name, task, seed) for i, (name, task) in enumerate(general_tasks(n, seed))]
    valid, bad = validate_items(pl.DataFrame(rows, schema=ITEM_COLUMNS), where="general items")
    if bad.height:  # the generator's own bug: never write a partial dataset silently
        raise RuntimeError(f"general items failed the schema: {bad['reason'].to_list()[:3]}")
    return valid
