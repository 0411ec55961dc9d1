"""String problems: words, characters, simple encodings.

Not a flow: a family group of flows/data/code_problems (its __init__ says why they live here).
"""

from __future__ import annotations

import random
import string

from flows.data.code_problems import WORDS, Draft, call, family, pick, word_cases

LINE_INPUT = "Input: one line of 1 to {n} words of lowercase letters, separated by single spaces."


def _lines(rng: random.Random, n_tests: int, max_words: int) -> list[str]:
    return [" ".join(w) + "\n" for w in word_cases(rng, n_tests, WORDS, max_words)]


@family("reverse_words", 1, "stdio", "reverse the word order, or each word's letters")
def reverse_words(rng: random.Random, n_tests: int) -> Draft:
    sep, n = pick(rng, [" ", ", ", " | ", "-"]), rng.randint(4, 12)
    letters = rng.random() < 0.5
    what = "the letters of every word, keeping the word order," if letters else "the order of the words"
    body = "w[::-1] for w in input().split()" if letters else "input().split()[::-1]"
    return Draft(
        f"Reverse {what} and print the words joined by {sep!r}.\n\n{LINE_INPUT.format(n=n)}\n"
        "Output: one line.",
        f"print({sep!r}.join({body}))",
        _lines(rng, n_tests, n),
        {"sep": sep, "letters": letters},
    )


@family("count_letters", 1, "stdio", "count the characters drawn from a set")
def count_letters(rng: random.Random, n_tests: int) -> Draft:
    letters = "".join(sorted(rng.sample(string.ascii_lowercase, rng.randint(2, 6))))
    n = rng.randint(4, 12)
    return Draft(
        f"Count how many characters of the line are one of the letters {', '.join(letters)}.\n\n"
        f"{LINE_INPUT.format(n=n)}\nOutput: the count.",
        f"print(sum(c in {letters!r} for c in input()))",
        _lines(rng, n_tests, n),
        {"letters": letters},
    )


@family("caesar_shift", 1, "stdio", "shift every letter forward or back in the alphabet")
def caesar_shift(rng: random.Random, n_tests: int) -> Draft:
    k, forward = rng.randint(1, 25), rng.random() < 0.5
    n = rng.randint(4, 12)
    way = f"the letter {k} places {'later' if forward else 'earlier'}"
    wrap = "from z to a" if forward else "from a to z"
    return Draft(
        f"{'Encrypt' if forward else 'Decrypt'} the line with a Caesar cipher: replace every letter by "
        f"{way} in the alphabet, wrapping {wrap}. Spaces stay as they are.\n\n"
        f"{LINE_INPUT.format(n=n)}\nOutput: the resulting line.",
        f"print(''.join(chr((ord(c) - 97 {'+' if forward else '-'} {k}) % 26 + 97) if c != ' ' else c "
        "for c in input()))",
        _lines(rng, n_tests, n),
        {"k": k, "forward": forward},
    )


@family("letter_frequency", 2, "stdio", "most or least frequent letter, with a tie rule")
def letter_frequency(rng: random.Random, n_tests: int) -> Draft:
    most, first = rng.random() < 0.5, rng.random() < 0.5
    n = rng.randint(3, 20)
    sign = "-" if most else ""
    tie = "c" if first else "-ord(c)"
    alt_key = f"({'' if most else '-'}s.count(c), {'-ord(c)' if first else 'ord(c)'})"
    return Draft(
        f"Print the letter that occurs {'most' if most else 'least'} often in the line, among the letters "
        f"it contains (spaces do not count). If several letters occur equally often, print the one that "
        f"comes {'first' if first else 'last'} in the alphabet.\n\n{LINE_INPUT.format(n=n)}\n"
        "Output: one letter.",
        "from collections import Counter\n"
        "counts = Counter(input().replace(' ', ''))\n"
        f"print(min(counts, key=lambda c: ({sign}counts[c], {tie})))",
        _lines(rng, n_tests, n),
        {"most": most, "first": first},
        alternatives=(f"s = input().replace(' ', '')\nprint(max(set(s), key=lambda c: {alt_key}))",),
    )


@family("mark_letter", 1, "stdio", "upper-case the first or last letter of each word")
def mark_letter(rng: random.Random, n_tests: int) -> Draft:
    first, sep = rng.random() < 0.5, pick(rng, [" ", "_", "-"])
    n = rng.randint(4, 12)
    piece = "w[0].upper() + w[1:]" if first else "w[:-1] + w[-1].upper()"
    return Draft(
        f"Print the words of the line with the {'first' if first else 'last'} letter of every word in upper "
        f"case and every other letter unchanged, joined by {sep!r}.\n\n{LINE_INPUT.format(n=n)}\n"
        "Output: one line.",
        f"print({sep!r}.join({piece} for w in input().split()))",
        _lines(rng, n_tests, n),
        {"first": first, "sep": sep},
    )


@family("is_palindrome", 1, "function", "palindrome test ignoring some characters")
def is_palindrome(rng: random.Random, n_tests: int) -> Draft:
    name = pick(rng, ["is_palindrome", "reads_same_backwards", "palindromic", "mirror_text"])
    fold = rng.random() < 0.5
    max_len = rng.randint(20, 80)
    rule = "case is ignored" if fold else "case matters (A and a differ)"
    keep = "c.lower()" if fold else "c"
    cases = ["no, on!", "Hello, world", "Racecar", "A man, a plan, a canal: Panama!"]
    while len(cases) < n_tests:
        word = "".join(rng.choice("abcAB") for _ in range(rng.randint(2, 5)))
        # half palindromes (even or odd length), half random words (rarely palindromes)
        cases.append(word + word[::-1][rng.randint(0, 1) :] if rng.random() < 0.5 else word)
    return Draft(
        f"Write a Python function `{name}(text)` that returns True when `text` reads the same forwards "
        f"and backwards once every character that is not a letter is removed, where {rule}, and False "
        f"otherwise. `text` has at most {max_len} characters, at least one of them a letter.",
        f"def {name}(text):\n    s = [{keep} for c in text if c.isalpha()]\n    return s == s[::-1]",
        [call(c) for c in cases],
        {"fold_case": fold},
        fn_name=name,
    )


@family("run_length", 2, "function", "run-length encoding")
def run_length(rng: random.Random, n_tests: int) -> Draft:
    name = pick(rng, ["run_length", "rle", "encode_runs", "compress"])
    count_first = rng.random() < 0.5
    max_len = rng.randint(10, 60)
    example = "3a1b2c" if count_first else "a3b1c2"
    piece = "str(len(run)) + run[0]" if count_first else "run[0] + str(len(run))"
    order = "its length then the letter" if count_first else "the letter then its length"
    cases = ["a", "aaaa"]
    while len(cases) < n_tests:
        cases.append("".join(rng.choice("abc") * rng.randint(1, 4) for _ in range(rng.randint(1, 5))))
    return Draft(
        f"Write a Python function `{name}(s)` that run-length encodes a string of 1 to {max_len} lowercase "
        f'letters: each maximal run of one letter becomes {order}, so "aaabcc" becomes "{example}".',
        f"from itertools import groupby\n\ndef {name}(s):\n"
        f"    return ''.join({piece} for run in (''.join(g) for _, g in groupby(s)))",
        [call(c) for c in cases],
        {"count_first": count_first},
        fn_name=name,
    )


@family("extreme_word", 1, "function", "first or last longest or shortest word")
def extreme_word(rng: random.Random, n_tests: int) -> Draft:
    longest, first = rng.random() < 0.5, rng.random() < 0.5
    size = "longest" if longest else "shortest"
    name = pick(rng, [f"{size}_word", f"find_{size}", f"pick_{size}"])
    max_words = rng.randint(5, 15)
    pick_fn = "max" if longest else "min"
    words = "sentence.split()" if first else "sentence.split()[::-1]"
    return Draft(
        f"Write a Python function `{name}(sentence)` that returns the {size} word of a sentence of 1 to "
        f"{max_words} lowercase words separated by single spaces; when several words are equally long, return the "
        f"{'first' if first else 'last'} of them.",
        f"def {name}(sentence):\n    return {pick_fn}({words}, key=len)",
        [
            call(" ".join(w))
            for w in word_cases(rng, n_tests, [*WORDS, "ox", "sky", "a", "we"], min(max_words, 7))
        ],
        {"longest": longest, "first": first},
        fn_name=name,
    )


@family("same_letters", 1, "function", "anagram test, or same set of letters")
def same_letters(rng: random.Random, n_tests: int) -> Draft:
    counts = rng.random() < 0.5
    name = pick(rng, ["are_anagrams", "is_anagram", "same_letters", "letter_match"])
    longest = rng.randint(8, 30)
    rule = (
        "use exactly the same letters the same number of times"
        if counts
        else "use the same set of letters (how often each occurs does not matter)"
    )
    body = "sorted(a) == sorted(b)" if counts else "set(a) == set(b)"
    cases = [("listen", "silent"), ("a", "b"), ("aab", "abb")]
    while len(cases) < n_tests:
        word = pick(rng, WORDS)
        other = "".join(rng.sample(word, len(word))) if rng.random() < 0.5 else pick(rng, WORDS)
        cases.append((word, other))
    return Draft(
        f"Write a Python function `{name}(a, b)` that returns True when the lowercase words `a` and `b` "
        f"(1 to {longest} letters each) {rule}, and False otherwise.",
        f"def {name}(a, b):\n    return {body}",
        [call(a, b) for a, b in cases],
        {"counts": counts},
        fn_name=name,
    )
