"""Our model against transformers' MiniMaxForCausalLM on the same weights, through real checkpoint files."""

from __future__ import annotations

import logging

import pytest
import torch
from transformers import MiniMaxForCausalLM

from m1model import Engine, M1ForCausalLM, SamplingParams


@pytest.fixture
def pair(tiny, tmp_path, caplog):
    """(ours, transformers') loaded from one checkpoint that we wrote."""
    tiny.save_pretrained(tmp_path)
    with caplog.at_level(logging.WARNING):
        hf, info = MiniMaxForCausalLM.from_pretrained(tmp_path, output_loading_info=True)
    assert info["missing_keys"] == set() and info["unexpected_keys"] == set()
    assert info["mismatched_keys"] == set()
    assert not [r for r in caplog.records if "missing" in r.getMessage().lower()]
    return tiny, hf.eval()


def test_logits_match_transformers(pair):
    ours, hf = pair
    x = torch.randint(3, ours.config.vocab_size, (2, 53), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        a, b = ours(x).logits, hf(x).logits
    assert a.abs().max() > 1.0  # the comparison below is not vacuous
    torch.testing.assert_close(a, b, atol=1e-4, rtol=0)


def test_greedy_generation_matches_transformers(pair):
    ours, hf = pair
    gen = torch.Generator().manual_seed(2)
    prompts = [torch.randint(3, ours.config.vocab_size, (n,), generator=gen).tolist() for n in (7, 19, 12)]
    params = SamplingParams(temperature=0, max_tokens=32)
    completions = Engine(ours).generate(prompts, params)  # one left-padded batch
    for prompt, completion in zip(prompts, completions, strict=True):
        ref = hf.generate(
            torch.tensor([prompt]), max_new_tokens=32, do_sample=False, eos_token_id=None, pad_token_id=0
        )[0, len(prompt) :].tolist()
        assert completion.token_ids == ref
        assert completion.finish_reason == "length"


def test_loads_checkpoint_written_by_transformers(pair, tmp_path):
    ours, hf = pair
    hf.save_pretrained(tmp_path / "hf")
    reloaded = M1ForCausalLM.from_pretrained(tmp_path / "hf")
    x = torch.randint(3, ours.config.vocab_size, (1, 40))
    with torch.no_grad():
        torch.testing.assert_close(reloaded(x).logits, hf(x).logits, atol=1e-4, rtol=0)
    assert reloaded.config.to_dict()["layer_types"] == ours.config.layer_types


def test_loads_transformers_in_memory_expert_layout(pair, tmp_path):
    """A state dict saved straight from transformers' modules (fused `mlp.experts.gate_up_proj`) loads too."""
    from safetensors.torch import save_file

    ours, hf = pair
    folder = tmp_path / "raw"
    hf.config.save_pretrained(folder)
    state = {k: v.contiguous() for k, v in hf.state_dict().items()}
    assert any(k.endswith("mlp.experts.gate_up_proj") for k in state)
    save_file(state, str(folder / "model.safetensors"))
    reloaded = M1ForCausalLM.from_pretrained(folder)
    for (name, a), b in zip(ours.state_dict().items(), reloaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
