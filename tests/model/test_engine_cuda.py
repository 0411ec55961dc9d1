"""The engine on CUDA (gpu-marked; skipped without a GPU): continuous batching with chunked prefill and
preemption gives each request the tokens it gets alone on the GPU, and the same greedy tokens as on CPU."""

from __future__ import annotations

import pytest
import torch

from m1model import Engine, SamplingParams

from .conftest import TINY_CONFIGS, tiny_model
from .test_continuous_batching import PROMPTS, alone, arrivals, mixed_params

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.mark.parametrize("name", ["lightning_prefix_top2", "several_softmax_top1_gqa"])
def test_the_engine_on_cuda_answers_each_request_as_alone_and_as_on_cpu(name):
    cpu = tiny_model(**TINY_CONFIGS[name])
    gpu = tiny_model(**TINY_CONFIGS[name]).cuda()
    params = mixed_params()
    engine = Engine(gpu, 4, max_num_batched_tokens=16, block_size=4, kv_cache_tokens=100)
    got = arrivals(engine, list(range(len(PROMPTS))), [0, 0, 1, 2, 2, 5], params)
    assert engine.stats()["preemptions_total"] > 0
    for i, c in got.items():
        ref = alone(gpu, PROMPTS[i], params[i])
        assert c.token_ids == ref.token_ids
        torch.testing.assert_close(torch.tensor(c.logprobs), torch.tensor(ref.logprobs), atol=1e-4, rtol=0)
    greedy = SamplingParams(temperature=0, max_tokens=12)
    on_gpu = Engine(gpu).generate(PROMPTS, greedy)
    on_cpu = Engine(cpu).generate(PROMPTS, greedy)
    assert [c.token_ids for c in on_gpu] == [c.token_ids for c in on_cpu]
    for a, b in zip(on_gpu, on_cpu, strict=True):  # TF32 off by default: fp32 on both
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=0)
