"""`m1 model ...`: create a fresh model + tokenizer, probe training/inference precision."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.errors import InputError

app = typer.Typer(no_args_is_help=True)


def read_lines(path: Path, what: str) -> list[str]:
    """Non-empty lines of a UTF-8 text file, or an InputError naming the file."""
    if not path.is_file():
        raise InputError(f"{path}: {what} file not found")
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = [line for line in lines if line]
    if not lines:
        raise InputError(f"{path}: no non-empty lines")
    return lines


@app.command("init")
def init(
    output: Annotated[Path, typer.Option("--output", "-o", help="New checkpoint folder (must not exist).")],
    corpus: Annotated[
        Path, typer.Option("--corpus", help="UTF-8 text, one document per line, for the BPE tokenizer.")
    ],
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Pipeline config; its [model] section sizes the model."),
    ] = None,
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="Override a config field, e.g. model.hidden_size=128.")
    ] = None,
) -> None:
    """A randomly initialised hybrid model and a byte-level BPE tokenizer trained on CORPUS, as an HF checkpoint."""
    from flows.atomic import atomic_dir
    from flows.config import load_config
    from flows.train import build_model
    from m1model import train_tokenizer

    if output.exists():
        raise InputError(f"{output}: already exists (checkpoints are never overwritten)")
    texts = read_lines(corpus, "corpus")
    spec = load_config(config, overrides or []).model
    tokenizer = train_tokenizer(texts, spec.vocab_size)
    model = build_model(spec, tokenizer)
    with atomic_dir(output) as tmp:
        model.save_pretrained(tmp, tokenizer=tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    kinds = "".join("S" if t == "full_attention" else "L" for t in model.config.layer_types)
    Console().print(
        f"wrote {output}: {n_params / 1e6:.2f}M parameters, layers {kinds} (L lightning, S softmax), "
        f"vocab {len(tokenizer)} trained on {len(texts)} lines",
        highlight=False,
    )


@app.command("probe-precision")
def probe_precision(
    checkpoint: Annotated[Path, typer.Option("--checkpoint", help="Checkpoint folder with tokenizer files.")],
    prompts: Annotated[Path, typer.Option("--prompts", help="UTF-8 text file, one prompt per line.")],
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens sampled per prompt.")] = 32,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
) -> None:
    """Correlation of per-token probabilities: bf16 inference engine vs FP32 training forward, bf16 vs FP32 LM head."""
    from safetensors import SafetensorError

    from m1model import M1ForCausalLM
    from m1model.precision import probe_precision as probe
    from m1model.tokenizer import load_tokenizer

    if not (checkpoint / "config.json").is_file():
        raise InputError(f"{checkpoint}: not a checkpoint folder (no config.json)")
    if not (checkpoint / "tokenizer.json").is_file():
        raise InputError(f"{checkpoint}: no tokenizer.json (save the model with its tokenizer)")
    texts = read_lines(prompts, "prompts")
    try:
        tokenizer = load_tokenizer(checkpoint)
        model = M1ForCausalLM.from_pretrained(checkpoint)
    except (ValueError, OSError, SafetensorError) as exc:  # malformed config or weights, unreadable files
        raise InputError(f"{checkpoint}: cannot load the checkpoint: {exc}") from None
    ids = [tokenizer(t).input_ids for t in texts]
    rows = probe(model, ids, max_tokens=max_tokens, seed=seed)
    table = Table(title=f"train (FP32) vs inference (bf16 engine): {len(ids)} prompts x {max_tokens} tokens")
    for col in ("inference LM head", "tokens", "Pearson r", "mean |dp|", "max |dp|"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r.inference_head,
            str(r.tokens),
            f"{r.pearson:.5f}",
            f"{r.mean_abs_diff:.2e}",
            f"{r.max_abs_diff:.2e}",
        )
    Console().print(table)
