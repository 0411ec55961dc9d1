"""Vigenere cipher: letter i is shifted by key letter i mod len(key); spaces do not consume key letters."""

from __future__ import annotations

import random
import string

from verifiers.logic.ciphers import CipherTask, shift_letter


class VigenereCipher(CipherTask):
    name = "vigenere_cipher"
    description = "Encrypt or decrypt a sentence with a given Vigenere key; longer keys and texts are harder."
    levels = {
        1: "4 words, key of 2 letters",
        2: "6 words, key of 3 letters",
        3: "8 words, key of 4 letters",
        4: "12 words, key of 6 letters",
        5: "16 words, key of 8 letters",
    }
    sizes = {1: (4, 2), 2: (6, 3), 3: (8, 4), 4: (12, 6), 5: (16, 8)}

    def make_key(self, rng: random.Random, key_size: int) -> str:
        return "".join(rng.choice(string.ascii_uppercase) for _ in range(key_size))

    def _apply(self, text: str, key: str, sign: int) -> str:
        out, j = [], 0
        for c in text:
            if c.isalpha():
                out.append(shift_letter(c, sign * (ord(key[j % len(key)]) - 65)))
                j += 1
            else:
                out.append(c)
        return "".join(out)

    def encrypt(self, plaintext: str, key: str) -> str:
        return self._apply(plaintext, key, 1)

    def decrypt(self, ciphertext: str, key: str) -> str:
        return self._apply(ciphertext, key, -1)

    def describe_key(self, key: str) -> str:
        return (
            "A Vigenere cipher shifts each letter by the alphabet position of the matching key letter "
            "(A=0, B=1, ..., Z=25), cycling through the key; spaces are kept and do not use up key letters. "
            f"Encryption adds the shift, decryption subtracts it. The key is {key}."
        )

    def key_weight(self, key: str) -> int:
        return len(key)


TASK = VigenereCipher()
