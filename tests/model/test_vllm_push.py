"""The weight push into vLLM, on CPU: the trainer's parameters, named as vLLM's loader reads them, fill a
real torch module laid out as vLLM's MiniMaxText01ForCausalLM (fused q/k/v, stacked experts, FP32
router, padded vocabulary), completely and exactly; and an RL run whose rollout engine samples from
that module follows the policy after every update."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn

from m1model import Engine, M1Config, M1ForCausalLM
from m1model.rl.distributed import DataParallel
from m1model.vllm_backend import WeightSync, policy_weights

from .conftest import tiny_config

VOCAB_PAD = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE for the embedding and the LM head


def _pad(n: int) -> int:
    return -(-n // VOCAB_PAD) * VOCAB_PAD


class VLLMLayout(nn.Module):
    """vLLM's parameter layout of a MiniMax checkpoint, and the rules its `load_weights` applies.

    Only the parameters and the loading rules (vllm/model_executor/models/minimax_text_01.py); no
    kernels. `to_checkpoint` undoes the fusing, so a test can compare what arrived with what was sent.
    """

    def __init__(self, config: M1Config, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.config = config
        c, h = config, config.hidden_size
        q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
        e, i = c.num_local_experts, c.intermediate_size
        shapes = {"model.embed_tokens.weight": (_pad(c.vocab_size), h)}
        for n, kind in enumerate(c.layer_types):
            pre = f"model.layers.{n}."
            if kind == "linear_attention":
                shapes |= {
                    pre + "self_attn.qkv_proj.weight": (3 * q, h),
                    pre + "self_attn.output_gate.weight": (q, h),
                    pre + "self_attn.out_proj.weight": (h, q),
                    pre + "self_attn.norm.weight": (q,),
                }
            else:
                shapes |= {
                    pre + "self_attn.qkv_proj.weight": (q + 2 * kv, h),
                    pre + "self_attn.o_proj.weight": (h, q),
                }
            shapes |= {
                pre + "input_layernorm.weight": (h,),
                pre + "post_attention_layernorm.weight": (h,),
                pre + "block_sparse_moe.gate.weight": (e, h),
                pre + "block_sparse_moe.experts.w13_weight": (e, 2 * i, h),
                pre + "block_sparse_moe.experts.w2_weight": (e, h, i),
            }
        shapes |= {"model.norm.weight": (h,), "lm_head.weight": (_pad(c.vocab_size), h)}
        self.names = list(shapes)
        for name, shape in shapes.items():
            kind = torch.float32 if name.endswith("block_sparse_moe.gate.weight") else dtype  # router: FP32
            self._put(name, nn.Parameter(torch.full(shape, float("nan"), dtype=kind), requires_grad=False))
        self.qkv_split = {"q_proj": (0, q), "k_proj": (q, q + kv), "v_proj": (q + kv, q + 2 * kv)}

    def _put(self, dotted: str, param: nn.Parameter) -> None:
        *path, leaf = dotted.split(".")
        module = self
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, nn.Module())
            module = getattr(module, part)
        module.register_parameter(leaf, param)

    def load_weights(self, weights) -> set[str]:
        params = dict(self.named_parameters())
        loaded = set()
        for name, tensor in weights:
            *prefix, module, leaf = name.split(".")
            base = ".".join(prefix)
            if module in self.qkv_split and f"{base}.qkv_proj.weight" in params:  # a softmax layer
                target, (lo, hi) = f"{base}.qkv_proj.weight", self.qkv_split[module]
                params[target].data[lo:hi] = tensor.to(params[target].dtype)
            elif prefix[-2:-1] == ["experts"]:  # block_sparse_moe.experts.{e}.w1/w2/w3.weight
                expert, half = int(prefix[-1]), self.config.intermediate_size
                stacked = ".".join(prefix[:-1])
                if module == "w2":
                    target = f"{stacked}.w2_weight"
                    params[target].data[expert] = tensor.to(params[target].dtype)
                else:
                    target = f"{stacked}.w13_weight"
                    rows = slice(0, half) if module == "w1" else slice(half, 2 * half)
                    params[target].data[expert, rows] = tensor.to(params[target].dtype)
            elif name in ("model.embed_tokens.weight", "lm_head.weight"):
                target = name
                params[target].data[: tensor.shape[0]] = tensor.to(params[target].dtype)
            else:
                target = name
                if params[target].shape != tensor.shape:  # KeyError above for an unknown name, as vLLM
                    raise ValueError(f"{name}: {tuple(tensor.shape)} into {tuple(params[target].shape)}")
                params[target].data.copy_(tensor.to(params[target].dtype))
            loaded.add(target)
        return loaded

    def to_checkpoint(self) -> dict[str, torch.Tensor]:
        """The parameters under the checkpoint's names and shapes (the inverse of `load_weights`)."""
        out, c = {}, self.config
        for name, p in self.named_parameters():
            base = name.rsplit(".", 1)[0]
            if (
                name.endswith("qkv_proj.weight")
                and c.layer_types[int(name.split(".")[2])] == "full_attention"
            ):
                for module, (lo, hi) in self.qkv_split.items():
                    out[f"{base.rsplit('.', 1)[0]}.{module}.weight"] = p[lo:hi]
            elif name.endswith("w13_weight"):
                for e in range(c.num_local_experts):
                    out[f"{base}.{e}.w1.weight"] = p[e, : c.intermediate_size]
                    out[f"{base}.{e}.w3.weight"] = p[e, c.intermediate_size :]
            elif name.endswith("w2_weight"):
                for e in range(c.num_local_experts):
                    out[f"{base}.{e}.w2.weight"] = p[e]
            elif name in ("model.embed_tokens.weight", "lm_head.weight"):
                out[name] = p[: c.vocab_size]
            else:
                out[name] = p
        return {k: v.detach().clone() for k, v in out.items()}


class LayoutWorker(WeightSync):
    """What vLLM builds: its worker class with our extension mixed in, ``model_runner.model`` its model."""

    def __init__(self, config: M1Config, dtype: torch.dtype = torch.float32) -> None:
        self.model_runner = SimpleNamespace(model=VLLMLayout(config, dtype))


def policy(**overrides) -> M1ForCausalLM:
    torch.manual_seed(0)
    layers = ["linear_attention", "full_attention", "linear_attention"]
    return M1ForCausalLM(
        tiny_config(layer_types=layers, num_local_experts=3, num_experts_per_tok=2, **overrides)
    )


def test_pushed_weights_fill_vllms_layout_completely_and_exactly():
    model = policy()
    worker = LayoutWorker(model.config, dtype=torch.bfloat16)  # the engine's dtype; its router stays FP32
    missing = worker.m1_load_weights(policy_weights(DataParallel(model).full_weights()))
    assert missing == []
    arrived = worker.model_runner.model.to_checkpoint()
    assert arrived.keys() == model.state_dict().keys()
    for name, tensor in model.state_dict().items():
        router = name.endswith("block_sparse_moe.gate.weight")
        assert torch.equal(arrived[name], tensor if router else tensor.to(torch.bfloat16)), name


def test_a_push_that_leaves_a_parameter_out_is_reported():
    model = policy()
    worker = LayoutWorker(model.config)
    partial = [
        (n, t) for n, t in model.named_parameters() if not n.startswith("model.layers.1.self_attn.o_proj")
    ]
    assert worker.m1_load_weights(policy_weights(partial)) == ["model.layers.1.self_attn.o_proj.weight"]


def test_policy_weights_use_checkpoint_names_under_training_wrappers():
    model = policy()
    wrapped = [(f"module._orig_mod.{n}", t) for n, t in model.named_parameters()]
    assert [n for n, _ in policy_weights(wrapped)] == [n for n, _ in model.named_parameters()]
    with_tables = wrapped + [("module.model.layers.0.self_attn.slope_rate", torch.zeros(4, 1, 1))]
    assert len(policy_weights(with_tables)) == len(wrapped)  # vLLM recomputes the decay tables


class LayoutEngine:
    """Rollouts sampled from the weights the vLLM-layout module holds (the bundled engine stands in for
    vLLM's kernels); the trainer can only reach them through `load_weights`."""

    def __init__(self, model: M1ForCausalLM, follow: bool = True) -> None:
        self.worker, self.follow = LayoutWorker(model.config), follow
        self.worker.m1_load_weights(policy_weights(model.named_parameters()))  # the start checkpoint

    def load_weights(self, weights) -> None:
        if self.follow:
            assert self.worker.m1_load_weights(policy_weights(weights)) == []

    def generate(self, prompts, params):
        sampler = M1ForCausalLM(self.worker.model_runner.model.config)
        sampler.load_state_dict(self.worker.model_runner.model.to_checkpoint())
        return Engine(sampler).generate(prompts, params)


def test_rollouts_follow_the_policy_after_every_update():
    from m1model.rl.rollout import PromptPool
    from m1model.rl.trainer import RLConfig, RLTrainer

    def run(follow: bool) -> list[float]:
        model = policy()
        pool = PromptPool([[1 + i % 5, 10 + i % 7, 3] for i in range(8)], [{}] * 8)
        cfg = RLConfig(
            group_size=4, prompts_per_step=4, lr=5e-2, max_new_tokens=5, seed=1, micro_batch_size=16
        )
        distinct = lambda items, responses: [len(set(r)) / len(r) for r in responses]  # noqa: E731
        trainer = RLTrainer(model, LayoutEngine(model, follow), distinct, pool, cfg)
        return [m["logprob_abs_diff"] for m in trainer.train(3)]

    followed, stale = run(True), run(False)
    # The paper's precision check: rollout log-probs are the trainer's own, every step, when pushed ...
    assert max(followed) < 1e-5, followed
    # ... and the check sees the gap as soon as the engine misses an update.
    assert stale[0] < 1e-5 and min(stale[1:]) > 1e-3, stale
