"""The byte-level BPE tokenizer: special ids, lossless round trip, saved and loaded beside the model."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from m1model import M1ForCausalLM, train_tokenizer

from .conftest import TINY_CONFIGS, tiny_model

CORPUS = ["The answer is 42.", "Solve x + 1 = 3, so x = 2.", "def double(x):\n    return 2 * x\n"] * 40


def test_special_ids_and_lossless_round_trip():
    tok = train_tokenizer(CORPUS, vocab_size=320, additional_special_tokens=["<think>", "</think>"])
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert tok.convert_tokens_to_ids("<think>") == 3
    text = "The answer: ünïcode 😀 never seen\ttabs"
    ids = tok(text).input_ids
    assert ids[0] == tok.bos_token_id
    assert tok.decode(ids, skip_special_tokens=True) == text  # byte-level: nothing is unknown
    assert len(tok("The answer is 42.").input_ids) < len("The answer is 42.")  # merges were learned


def test_vocab_size_too_small_is_rejected():
    with pytest.raises(ValueError, match="at least 259"):
        train_tokenizer(CORPUS, vocab_size=100)


def test_saved_with_the_model(tmp_path):
    tok = train_tokenizer(CORPUS, vocab_size=300)
    model = tiny_model(**{**TINY_CONFIGS["lightning_prefix_top2"], "vocab_size": len(tok)})
    model.save_pretrained(tmp_path, tokenizer=tok)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded("x = 2").input_ids == tok("x = 2").input_ids
    assert loaded.padding_side == "left"
    reloaded = M1ForCausalLM.from_pretrained(tmp_path)
    assert reloaded.config.eos_token_id == tok.eos_token_id
    ids = torch.tensor([tok("The answer").input_ids])
    assert torch.equal(reloaded(ids).logits, model(ids).logits)
