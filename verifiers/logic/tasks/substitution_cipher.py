"""Monoalphabetic substitution cipher with the full key table given."""

from __future__ import annotations

import random
import string

from verifiers.logic.ciphers import CipherTask

ALPHABET = string.ascii_uppercase


class SubstitutionCipher(CipherTask):
    name = "substitution_cipher"
    description = "Encrypt or decrypt a sentence with a given letter-substitution table."
    levels = {
        1: "3 words",
        2: "5 words",
        3: "8 words",
        4: "12 words",
        5: "18 words",
        6: "26 words",
    }
    sizes = {1: (3, 26), 2: (5, 26), 3: (8, 26), 4: (12, 26), 5: (18, 26), 6: (26, 26)}

    def make_key(self, rng: random.Random, key_size: int) -> str:
        # A derangement-free shuffle is fine: a fixed letter is still a valid substitution.
        table = list(ALPHABET)
        rng.shuffle(table)
        return "".join(table)

    def encrypt(self, plaintext: str, key: str) -> str:
        return plaintext.translate(str.maketrans(ALPHABET, key))

    def decrypt(self, ciphertext: str, key: str) -> str:
        return ciphertext.translate(str.maketrans(key, ALPHABET))

    def describe_key(self, key: str) -> str:
        return (
            "A substitution cipher replaces each plaintext letter by the cipher letter below it; spaces are kept.\n"
            f"Plain:  {' '.join(ALPHABET)}\nCipher: {' '.join(key)}"
        )


TASK = SubstitutionCipher()
