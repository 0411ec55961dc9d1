"""Repetition truncation counts *consecutive* confident tokens: one unlikely token restarts the count.

The model is a hand-wired chain: each token's embedding is one feature, every attention and expert
output is zeroed, so the next-token logits depend only on the current token through the LM head. Greedy
decoding then walks 30 -> 31 -> ... -> 40 -> 40 ..., every step with probability ~1 except 32 -> 33,
which is still the argmax but has probability ~0.03.
"""

from __future__ import annotations

import math

import torch

from m1model import Engine, SamplingParams

from .conftest import TINY_CONFIGS, tiny_model

FIRST, LAST, UNSURE = 30, 40, 32  # UNSURE -> UNSURE + 1 is the one low-probability step


def _chain_model():
    model = tiny_model(**TINY_CONFIGS["lightning_prefix_top2"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("out_proj.weight", "o_proj.weight", "w2.weight")):
                p.zero_()
        emb, head = model.model.embed_tokens.weight, model.lm_head.weight
        emb.zero_()
        head.zero_()
        for k, tok in enumerate(range(FIRST, LAST + 1)):
            emb[tok, k] = 1.0
            nxt = min(tok + 1, LAST)
            head[nxt, k] = 0.2 if tok == UNSURE else 5.0  # after the final norm the feature is ~5.7
    return model


def test_one_low_probability_token_resets_the_run():
    engine = Engine(_chain_model())
    params = SamplingParams(temperature=0, max_tokens=20, repetition_run=4)
    through, after = engine.generate([[FIRST], [UNSURE + 1]], params)
    # 31, 32 confident; 33 not (run back to 0); 34..37 confident: the 4th in a row stops generation.
    assert through.token_ids == list(range(31, 38)) and through.finish_reason == "repetition"
    p = [math.exp(x) for x in through.logprobs]
    assert p[2] < 0.1 and min(p[:2] + p[3:]) > 0.99
    # Starting after the unsure step, the first four tokens are already a run.
    assert after.token_ids == list(range(34, 38)) and after.finish_reason == "repetition"
    # Each row keeps its own count when another row leaves the batch (here the first one does).
    assert [c.token_ids for c in engine.generate([[UNSURE + 1], [FIRST]], params)] == [
        after.token_ids,
        through.token_ids,
    ]
    # With run 7 both rows stop at 40: the first has 7 confident tokens before it, but not in a row.
    params = SamplingParams(temperature=0, max_tokens=20, repetition_run=7)
    through, after = engine.generate([[FIRST], [UNSURE + 1]], params)
    assert through.token_ids == list(range(31, 41)) and through.finish_reason == "repetition"
    assert after.token_ids == list(range(34, 41)) and after.finish_reason == "repetition"
