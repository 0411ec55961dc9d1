"""Shared text pieces for the logic tasks: a small vocabulary, a sentence generator, and lenient answer
normalisation (case, whitespace, separators, optional quotes) so verifiers judge content, not layout."""

from __future__ import annotations

import random
import re

from verifiers.logic.base import ParseError

# Short, common English words: plaintexts should look like language (ciphers are judged on letters),
# and word-sorting tasks need words whose order is not obvious at a glance.
NOUNS = (
    "apple river garden window teacher market forest castle doctor island letter mountain pencil rabbit "
    "school silver summer table tiger valley village winter yellow anchor basket bridge candle cactus "
    "dragon engine falcon ginger harbor jacket kettle ladder lemon magnet meadow needle orange parrot "
    "pepper planet pocket puzzle quartz rocket saddle shadow signal spider tunnel violin wagon walnut "
    "whistle canyon cotton desert feather glacier hammer lantern marble orchard pillow ribbon sailor "
    "tomato turtle blanket button camera cookie dolphin farmer helmet kitten monkey novel painter "
    "pirate queen rainbow scholar soldier student sunset thunder wizard"
).split()
ADJECTIVES = (
    "ancient bright calm clever quiet dusty eager fancy gentle golden happy hidden humble jolly lazy "
    "little lonely lucky merry narrow noble proud rapid silent simple sleepy smooth steady sturdy swift "
    "tender tiny brave wild wooden young"
).split()
VERBS = (
    "carries finds follows greets helps holds likes meets paints reads sees visits watches builds "
    "chases cleans draws feeds guards hides"
).split()
ADVERBS = "slowly quickly gladly softly loudly often rarely kindly".split()
NAMES = (
    "Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Liam Mia Noah Olivia Peter Quinn "
    "Rose Sam Tina Uma Victor Wendy Xavier Yara Zoe"
).split()


VOCABULARY = sorted(set(NOUNS + ADJECTIVES + VERBS + ADVERBS))


def pick_words(rng: random.Random, count: int, clustered: bool) -> list[str]:
    """Distinct words; when clustered, most share a few initial letters."""
    if not clustered:
        return rng.sample(VOCABULARY, count)
    initials = sorted({w[0] for w in VOCABULARY})
    chosen: list[str] = []
    for letter in rng.sample(initials, len(initials)):
        group = [w for w in VOCABULARY if w[0] == letter and w not in chosen]
        chosen += rng.sample(group, min(len(group), 4, count - len(chosen)))
        if len(chosen) == count:
            break
    rng.shuffle(chosen)
    return chosen


def sentence(rng: random.Random, n_words: int) -> str:
    """A grammatical-looking lower-case sentence of exactly ``n_words`` words (n_words >= 1).

    Built from 'the ADJ NOUN VERB the NOUN ADVERB' clauses so that letter frequencies resemble English."""
    words: list[str] = []
    while len(words) < n_words:
        words += [
            "the",
            rng.choice(ADJECTIVES),
            rng.choice(NOUNS),
            rng.choice(VERBS),
            "the",
            rng.choice(NOUNS),
        ]
        if rng.random() < 0.5:
            words.append(rng.choice(ADVERBS))
        words.append("and")
    words = words[:n_words]
    while words and words[-1] in ("and", "the"):  # end on a content word where possible
        words[-1] = rng.choice(NOUNS)
    return " ".join(words)


_QUOTES = "\"'`“”‘’"


def strip_wrapping(text: str) -> str:
    """Remove surrounding whitespace, quotes, brackets, backticks and a trailing full stop."""
    text = text.strip()
    while len(text) >= 2 and (
        text[0] in _QUOTES
        and text[-1] in _QUOTES
        or (text[0], text[-1]) in (("[", "]"), ("(", ")"), ("{", "}"))
    ):
        text = text[1:-1].strip()
    return text.rstrip(".").strip()


def letters(text: str) -> str:
    """Upper-case letters only: ciphers and word answers are judged on letters, not spacing."""
    return re.sub(r"[^A-Z]", "", text.upper())


def words_of(text: str) -> list[str]:
    """Alphabetic words in order, lower-cased ("Apple, 'banana'; cherry" -> [apple, banana, cherry])."""
    return [w.lower() for w in re.findall(r"[A-Za-z]+", text)]


MAX_DIGITS = 18  # no answer needs longer numbers; int() of huge digit strings is slow or refused


def parse_int(digits: str) -> int:
    """int() for answer text, refusing absurdly long numbers with a parse error."""
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ParseError(f"number with more than {MAX_DIGITS} digits")
    return int(digits)


def integers(text: str, signed: bool = True) -> list[int]:
    """All integers in the text in order; with signed=False a '-' is an operator, not a sign."""
    return [parse_int(m) for m in re.findall(r"-?\d+" if signed else r"\d+", text)]


def first_difference(a: str, b: str) -> int:
    """Index of the first position where two strings differ (len of the shorter when one is a prefix)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))
