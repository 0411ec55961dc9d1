"""Common shape of the cipher tasks: a generated sentence is encrypted (or must be), the key is given,
and the answer is judged on its letters only, so spacing, case and punctuation never cost reward."""

from __future__ import annotations

import random
from abc import abstractmethod
from typing import Any

from verifiers.logic.base import ANSWER_FORMAT, LogicInstance, LogicTask
from verifiers.logic.textutil import first_difference, scan, sentence, strip_wrapping

# Between words an answer may carry spaces and sentence punctuation; anything else (digits, symbols,
# look-alike letters) is not part of a text in capital letters.
PUNCTUATION = r"\s.,;:!?'\"-"


class CipherTask(LogicTask):
    # level -> (number of plaintext words, key size parameter); the subclass interprets the key size.
    sizes: dict[int, tuple[int, int]]
    # Ciphertext with word spaces kept (substitution-like ciphers) or as one block of letters.
    keeps_spaces: bool = True

    @abstractmethod
    def make_key(self, rng: random.Random, key_size: int) -> Any:
        """A JSON-serialisable key."""

    @abstractmethod
    def encrypt(self, plaintext: str, key: Any) -> str:
        """Encrypt an upper-case text (letters, and spaces where ``keeps_spaces``)."""

    @abstractmethod
    def decrypt(self, ciphertext: str, key: Any) -> str: ...

    @abstractmethod
    def describe_key(self, key: Any) -> str:
        """How the prompt states the key and the cipher's rule."""

    def key_space(self, key: Any) -> int:
        """How many keys a solver would consider; 1 when the key is given."""
        return 1

    def generate(self, difficulty: int, seed: int) -> LogicInstance:
        rng = self.rng(difficulty, seed)
        n_words, key_size = self.sizes[difficulty]
        plain = sentence(rng, n_words).upper()
        if not self.keeps_spaces:
            plain = plain.replace(" ", "")
        key = self.make_key(rng, key_size)
        cipher = self.encrypt(plain, key)
        assert self.decrypt(cipher, key) == plain
        direction = rng.choice(["encrypt", "decrypt"])
        if self.key_space(key) > 1:  # an unknown key can only be recovered from a ciphertext
            direction = "decrypt"
        given, answer = (plain, cipher) if direction == "encrypt" else (cipher, plain)
        what = "ciphertext" if direction == "encrypt" else "plaintext"
        prompt = (
            f"{self.describe_key(key)}\n\n"
            f"{direction.capitalize()} the following text:\n{given}\n\n"
            f"Give the {what} in capital letters"
            + (", keeping the spaces between words" if self.keeps_spaces else "")
            + f". {ANSWER_FORMAT} Example: <answer>{'HELLO WORLD' if self.keeps_spaces else 'HELLOWORLD'}</answer>"
        )
        puzzle = {"direction": direction, "given": given, "key": key, "n_words": n_words, "answer": answer}
        return LogicInstance(self.name, difficulty, seed, prompt, answer, puzzle)

    def score(self, puzzle: dict[str, Any], answer: str) -> tuple[float, dict[str, Any]]:
        got = "".join(scan(strip_wrapping(answer), r"[A-Za-z]+", PUNCTUATION, "a text of letters")).upper()
        if not got:
            return 0.0, {"error": "parse error: the answer contains no letters"}
        want = puzzle["answer"].replace(" ", "")
        if got == want:
            return 1.0, {"correct": True}
        i = first_difference(got, want)
        return 0.0, {
            "correct": False,
            "first_wrong_letter": i,
            "expected": want[i : i + 1] or "<end>",
            "got": got[i : i + 1] or "<end>",
            "length": {"expected": len(want), "got": len(got)},
        }

    def measure(self, puzzle: dict[str, Any]) -> float:
        return float(puzzle["n_words"] * self.key_space(puzzle["key"]) * self.key_weight(puzzle["key"]))

    def key_weight(self, key: Any) -> int:
        """Extra per-letter work the key causes (e.g. rails, Vigenere key length); 1 by default."""
        return 1

    def corrupt(self, instance: LogicInstance, seed: int) -> str:
        rng = random.Random(seed)
        text = instance.answer
        positions = [i for i, c in enumerate(text) if c.isalpha()]
        i = rng.choice(positions)
        new = chr((ord(text[i]) - 65 + rng.randint(1, 25)) % 26 + 65)
        return text[:i] + new + text[i + 1 :]


def shift_letter(c: str, k: int) -> str:
    """Shift an upper-case letter by k positions (other characters unchanged)."""
    return chr((ord(c) - 65 + k) % 26 + 65) if "A" <= c <= "Z" else c
