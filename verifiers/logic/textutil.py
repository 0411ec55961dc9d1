"""Shared text pieces for the logic tasks: a small vocabulary, a sentence generator, and the strict
answer grammar helpers.

Answer grammars are lenient about layout (case, whitespace, the documented separators, wrapping quotes
or brackets) and strict about content: `scan` refuses any character that is neither part of a token nor
a separator, so a stray word, a note after the answer or a look-alike letter is a parse error rather
than being skipped over. Tokens are matched ASCII-only (full-width digits and Cyrillic letters are not
digits and letters of any answer)."""

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


SEPARATORS = r"\s,;"  # a character-class body: whitespace, commas and semicolons separate tokens


def scan(text: str, token: str, separators: str = SEPARATORS, what: str = "the answer") -> list[str]:
    """The tokens of ``text`` under a strict grammar: the text must consist of matches of the regex
    ``token`` (ASCII-only, case-sensitive unless the pattern says ``(?i)``) with only ``separators``
    characters (a character-class body that must include whitespace) between them.

    Raises ParseError naming the first stray piece; returns the tokens in order (possibly none)."""
    pattern = re.compile(token, re.ASCII)
    found = [m.group() for m in pattern.finditer(text)]
    blanked = pattern.sub(lambda m: " " * len(m.group()), text)  # same length: positions still match
    stray = re.search(rf"[^{separators}]", blanked, flags=re.ASCII)
    if stray:
        i = stray.start()  # report the whole word around the stray character, e.g. 'zz9'
        piece = re.search(r"\S*$", text[:i]).group() + re.match(r"\S*", text[i:]).group()
        raise ParseError(f"unexpected {piece[:20]!r}{'...' if len(piece) > 20 else ''} in {what}")
    return found


def no_repeats(items: list, what: str) -> None:
    """A set-like answer names each thing once: a repeat is a second answer, not a confirmation."""
    seen: set = set()
    for item in items:
        if item in seen:
            raise ParseError(f"{what} {item} is given more than once")
        seen.add(item)


MAX_DIGITS = 18  # no answer needs longer numbers; int() of huge digit strings is slow or refused


def parse_int(digits: str) -> int:
    """int() for answer text, refusing absurdly long numbers with a parse error."""
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ParseError(f"number with more than {MAX_DIGITS} digits")
    return int(digits)


def integers(text: str, signed: bool = True) -> list[int]:
    """All integers in the text in order; with signed=False a '-' is an operator, not a sign."""
    return [parse_int(m) for m in re.findall(r"-?\d+" if signed else r"\d+", text, flags=re.ASCII)]


def one_integer(text: str, zero: str | None = None, what: str = "number") -> int:
    """The whole answer as one non-negative integer ("7", "'7'."), or 0 when the whole answer matches
    the regex ``zero`` (phrases such as "none" for tasks whose answer 0 means "there is none")."""
    text = strip_wrapping(text)
    if zero and re.fullmatch(zero, text, flags=re.IGNORECASE | re.ASCII):
        return 0
    if not re.fullmatch(r"\d+", text, flags=re.ASCII):
        raise ParseError(f"expected one {what}, got {text[:30]!r}")
    return parse_int(text)


def first_difference(a: str, b: str) -> int:
    """Index of the first position where two strings differ (len of the shorter when one is a prefix)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))
