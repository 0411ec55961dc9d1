"""`m1 model init` and `m1 model probe-precision`, tiny, through the real CLI app."""

from __future__ import annotations

from typer.testing import CliRunner

from flows.cli import app
from flows.errors import InputError
from m1model import M1ForCausalLM
from m1model.precision import probe_precision

from .conftest import TINY_CONFIGS, tiny_model


def test_init_then_probe(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(["The answer is 42.", "x + 1 = 3", "", "print('hi')"] * 20), encoding="utf-8")
    ckpt = tmp_path / "ckpt"
    sizes = [
        "model.hidden_size=32",
        "model.num_hidden_layers=2",
        "model.softmax_every=2",
        "model.vocab_size=300",
    ]
    out = CliRunner().invoke(
        app,
        [
            "model",
            "init",
            "--output",
            str(ckpt),
            "--corpus",
            str(corpus),
            *sum((["--set", s] for s in sizes), []),
        ],
    )
    assert out.exit_code == 0, out.output
    model = M1ForCausalLM.from_pretrained(ckpt)
    assert model.config.layer_types == ["linear_attention", "full_attention"]
    assert (ckpt / "tokenizer.json").is_file()

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("The answer\nx + 1\n", encoding="utf-8")
    out = CliRunner().invoke(
        app,
        [
            "model",
            "probe-precision",
            "--checkpoint",
            str(ckpt),
            "--prompts",
            str(prompts),
            "--max-tokens",
            "4",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "Pearson r" in out.output and "bf16" in out.output and "fp32" in out.output

    again = CliRunner().invoke(app, ["model", "init", "--output", str(ckpt), "--corpus", str(corpus)])
    assert isinstance(again.exception, InputError) and "already exists" in str(again.exception)
    missing = CliRunner().invoke(
        app, ["model", "probe-precision", "--checkpoint", str(ckpt), "--prompts", str(tmp_path / "none.txt")]
    )
    assert isinstance(missing.exception, InputError) and "not found" in str(missing.exception)
    (ckpt / "model.safetensors").write_bytes(b"not safetensors")
    broken = CliRunner().invoke(
        app, ["model", "probe-precision", "--checkpoint", str(ckpt), "--prompts", str(prompts)]
    )
    assert isinstance(broken.exception, InputError) and "cannot load" in str(broken.exception)


def test_probe_reports_both_heads_and_agreement():
    model = tiny_model(**TINY_CONFIGS["several_softmax_top1_gqa"])
    rows = probe_precision(model, [[5, 6, 7], [9, 10]], max_tokens=6)
    assert [r.inference_head for r in rows] == ["bf16", "fp32"]
    for r in rows:
        assert r.tokens == 12
        assert 0.9 < r.pearson <= 1.0 + 1e-9  # bf16 vs FP32 of the same weights: close, not identical
        assert r.max_abs_diff > 0
