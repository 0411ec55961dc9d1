"""Rail fence (zigzag) cipher over the letters of a sentence with spaces removed."""

from __future__ import annotations

import random

from verifiers.logic.ciphers import CipherTask


def _rail_order(n: int, rails: int) -> list[int]:
    """Plaintext indices in the order the cipher reads them: rail by rail along the zigzag."""
    if rails == 1:
        return list(range(n))
    period = 2 * (rails - 1)
    rail_of = [min(i % period, period - i % period) for i in range(n)]
    return sorted(range(n), key=lambda i: (rail_of[i], i))


class RailFenceCipher(CipherTask):
    name = "rail_fence_cipher"
    description = "Encrypt or decrypt letters written in a zigzag over a given number of rails."
    levels = {
        1: "3 words, 2 rails",
        2: "4 words, 3 rails",
        3: "6 words, 3 rails",
        4: "8 words, 4 rails",
        5: "10 words, 5 rails",
        6: "14 words, 6 rails",
    }
    sizes = {1: (3, 2), 2: (4, 3), 3: (6, 3), 4: (8, 4), 5: (10, 5), 6: (14, 6)}
    keeps_spaces = False

    def make_key(self, rng: random.Random, key_size: int) -> int:
        return key_size

    def encrypt(self, plaintext: str, key: int) -> str:
        return "".join(plaintext[i] for i in _rail_order(len(plaintext), key))

    def decrypt(self, ciphertext: str, key: int) -> str:
        out = [""] * len(ciphertext)
        for c, i in zip(ciphertext, _rail_order(len(ciphertext), key), strict=True):
            out[i] = c
        return "".join(out)

    def describe_key(self, key: int) -> str:
        return (
            f"A rail fence cipher with {key} rails writes the letters of the text (spaces removed) in a zigzag "
            f"down and up across {key} rows, then reads the rows from top to bottom, each left to right. "
            "For example, WEAREDISCOVERED with 3 rails encrypts to WECRERDSOEEAIVD."
        )

    def key_weight(self, key: int) -> int:
        return key


TASK = RailFenceCipher()
