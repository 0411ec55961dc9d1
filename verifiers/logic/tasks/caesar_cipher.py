"""Caesar cipher: every letter shifted by a fixed amount; at the top levels the shift is not given."""

from __future__ import annotations

import random
from typing import Any

from verifiers.logic.ciphers import CipherTask, shift_letter


class CaesarCipher(CipherTask):
    name = "caesar_cipher"
    description = "Encrypt or decrypt a sentence with a Caesar shift (unknown shift at the top levels)."
    levels = {
        1: "3 words, shift given",
        2: "6 words, shift given",
        3: "12 words, shift given",
        4: "20 words, shift given",
        5: "8 words, shift unknown (decrypt only)",
        6: "16 words, shift unknown (decrypt only)",
    }
    # key_size 1 = shift stated in the prompt, 0 = hidden
    sizes = {1: (3, 1), 2: (6, 1), 3: (12, 1), 4: (20, 1), 5: (8, 0), 6: (16, 0)}

    def make_key(self, rng: random.Random, key_size: int) -> dict[str, Any]:
        return {"shift": rng.randint(1, 25), "given": bool(key_size)}

    def encrypt(self, plaintext: str, key: dict[str, Any]) -> str:
        return "".join(shift_letter(c, key["shift"]) for c in plaintext)

    def decrypt(self, ciphertext: str, key: dict[str, Any]) -> str:
        return "".join(shift_letter(c, -key["shift"]) for c in ciphertext)

    def describe_key(self, key: dict[str, Any]) -> str:
        rule = "A Caesar cipher replaces every letter by the letter a fixed number of places later in the alphabet, wrapping from Z to A; spaces are kept."
        if key["given"]:
            return f"{rule} The shift is {key['shift']} (so A becomes {shift_letter('A', key['shift'])})."
        return f"{rule} The shift is unknown: find it. The plaintext is an English sentence."

    def key_space(self, key: dict[str, Any]) -> int:
        return 1 if key["given"] else 25


TASK = CaesarCipher()
