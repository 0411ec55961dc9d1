"""`m1 model ...`: create a fresh model + tokenizer, probe training/inference precision."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown

from flows.atomic import atomic_dir, atomic_write_text
from flows.commands.pipeline import SetOpt
from flows.errors import InputError
from flows.experiments import precision as lib

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
    overrides: SetOpt = None,
) -> None:
    """A randomly initialised hybrid model and a byte-level BPE tokenizer trained on CORPUS, as an HF checkpoint."""
    # heavy: transformers, pydantic; not at m1 start-up
    from flows.config import load_config
    from flows.model_settings import fresh_model
    from m1model import train_tokenizer

    if output.exists():
        raise InputError(f"{output}: already exists (checkpoints are never overwritten)")
    texts = read_lines(corpus, "corpus")
    spec = load_config(config, overrides or []).model
    tokenizer = train_tokenizer(texts, spec.vocab_size)
    model = fresh_model(spec, tokenizer)
    with atomic_dir(output) as tmp:
        model.save_pretrained(tmp, tokenizer=tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    kinds = "".join("S" if t == "full_attention" else "L" for t in model.config.layer_types)
    Console().print(
        f"wrote {output}: {n_params / 1e6:.2f}M parameters, layers {kinds} (L lightning, S softmax), "
        f"vocab {len(tokenizer)} trained on {len(texts)} lines",
        highlight=False,
    )


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--{what}: expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise InputError(f"--{what}: expected positive integers, got {text!r}")
    return values


@app.command("probe-precision")
def probe_precision(
    checkpoint: Annotated[
        Path | None,
        typer.Option("--checkpoint", help="Probe this checkpoint (with --prompts) instead of the sweep."),
    ] = None,
    prompts: Annotated[
        Path | None, typer.Option("--prompts", help="UTF-8 text file, one prompt per line.")
    ] = None,
    hidden: Annotated[str, typer.Option(help="Sweep: model widths, comma-separated.")] = "64,256,512",
    vocab: Annotated[str, typer.Option(help="Sweep: vocabulary sizes, comma-separated.")] = "512,8192",
    logit_std: Annotated[
        str, typer.Option(help="Sweep: LM-head logit std to scale to, comma-separated (0: as initialised).")
    ] = "0,16",
    n_prompts: Annotated[int, typer.Option(min=1, help="Sweep: random prompts per model.")] = 6,
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens sampled per prompt.")] = 24,
    tolerance: Annotated[
        float, typer.Option(min=0, help="|dp| above which a token counts as mismatched.")
    ] = 0.01,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Folder for precision.md and scatter.png.")
    ] = None,
) -> None:
    """Training vs rollout path probabilities of the same tokens, bf16 vs FP32 LM head (paper Figure 3)."""
    # heavy: torch, transformers; not at m1 start-up
    import torch

    from m1model.precision import probe_precision as probe

    torch.set_num_threads(1)
    console = Console()
    results: list[tuple[str, object]] = []
    if checkpoint is not None:
        model, tokenizer = _load_checkpoint(checkpoint, prompts)
        ids = [tokenizer(t).input_ids for t in read_lines(prompts, "prompts")]
        results.append(
            (checkpoint.name, probe(model, ids, max_tokens=max_tokens, seed=seed, tolerance=tolerance))
        )
        note = f"{len(ids)} prompts x {max_tokens} tokens"
    else:
        grid = lib.settings(
            _ints(hidden, "hidden"),
            _ints(vocab, "vocab"),
            [float(x) for x in logit_std.split(",") if x.strip()],
        )
        with console.status("") as status:
            for i, s in enumerate(grid):
                status.update(f"probing {s.label} ({i + 1}/{len(grid)})")
                prompts_ = lib.random_prompts(s.vocab, n_prompts)
                results.append(
                    (s.label, probe(lib.random_model(s), prompts_, max_tokens, seed, tolerance=tolerance))
                )
        note = f"{n_prompts} random prompts x {max_tokens} tokens per setting"
    text = lib.markdown(results, tolerance, note)
    console.print(Markdown(text))
    if output is not None:
        # the paper's scatter for the setting where the heads differ most
        label, shown = max(results, key=lambda lr: lr[1].rows[1].pearson - lr[1].rows[0].pearson)
        lib.scatter(shown, output / "scatter.png", f"training vs rollout probability, {label}")
        atomic_write_text(output / "precision.md", text + f"\n![scatter: {label}](scatter.png)\n")
        console.print(f"wrote {output}/precision.md and {output}/scatter.png ({label})", highlight=False)


def _load_checkpoint(checkpoint: Path, prompts: Path | None):
    # heavy: torch, transformers; not at m1 start-up
    from m1model.policy import CheckpointError, load_policy

    if prompts is None:
        raise InputError("--checkpoint needs --prompts (a text file, one prompt per line)")
    if not (checkpoint / "tokenizer.json").is_file() and (checkpoint / "config.json").is_file():
        raise InputError(f"{checkpoint}: no tokenizer.json (save the model with its tokenizer)")
    read_lines(prompts, "prompts")
    try:
        return load_policy(checkpoint)
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
