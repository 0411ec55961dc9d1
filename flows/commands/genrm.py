"""`m1 genrm ...`: generative reward models: general data, the local judge, its evaluation, Swiss rounds."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from flows.atomic import atomic_write_text
from flows.errors import InputError
from flows.progress import bars, rich_progress

app = typer.Typer(no_args_is_help=True)
console = Console()

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Pipeline config (its [genrm] section).")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a config field, e.g. genrm.judge_steps=300 (repeatable)."),
]
PairMethodOpt = Annotated[
    str | None,
    typer.Option(
        "--pair-method",
        help="How a pair is judged: pairwise (both texts in one prompt, both orders) or pointwise (each "
        "text graded alone against the question); default: $M1_GENRM_PAIR_METHOD, else pairwise.",
    ),
]

GradeViewsOpt = Annotated[
    str | None,
    typer.Option(
        "--grade-views",
        help="What a grade is against: reference, or both (also the question alone; the lower grade "
        "counts); default: $M1_GENRM_GRADE_VIEWS, else reference.",
    ),
]


def _config(config: Path | None, set_: list[str] | None):
    # heavy: pydantic; not at m1 start-up
    from flows.config import load_config

    return load_config(config, set_ or [])


def print_rows(rows, title: str) -> None:
    """Rows of metric, value, baseline, note as a console table."""
    table = Table(title=title)
    for col in ("metric", "value", "baseline", "note"):
        table.add_column(col, justify="left" if col in ("metric", "note") else "right")
    for r in rows:
        table.add_row(
            r["metric"], str(r["value"]), "" if r["baseline"] is None else str(r["baseline"]), r["note"]
        )
    console.print(table)


def print_eval(result, title: str, margin: float) -> None:
    print_rows(result.table(), title)
    for verifier, why in result.verdicts(margin).items():
        verdict = (
            f"not fit to train on: {why}"
            if why
            else f"beats every trivial judge by at least {margin:.2f} in balanced accuracy: fit to train on"
        )
        console.print(f"judge as {verifier}: {verdict}", highlight=False, soft_wrap=True)


@app.command("general")
def general(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Write the run's general-domain dataset ({run}-general): open-ended prompts with references."""
    # heavy: prefect, scipy, polars; not at m1 start-up
    from flows.genrm.flow import write_general

    console.print(f"wrote {write_general(_config(config, set_))}")


@app.command("train-judge")
def train_judge(
    output: Annotated[Path, typer.Option("--output", "-o", help="Checkpoint folder for the judge.")],
    config: ConfigOpt = None,
    set_: SetOpt = None,
) -> None:
    """SFT a small m1model judge on labelled responses (general items by default; math and logic with
    genrm.judge_domains); evaluate it on held-out prompts; save it (HF format) for `m1 serve model`."""
    # heavy: scipy, polars; not at m1 start-up
    from flows.genrm.train_judge import HELDOUT
    from flows.genrm.train_judge import train_judge as train
    from flows.model_settings import use_threads
    from verifiers.genrm.evaluate import JudgeEval

    cfg = _config(config, set_)
    use_threads(cfg.train)
    g = cfg.genrm
    with bars(console) as progress:
        report = rich_progress(progress, "judge SFT", g.judge_steps)
        summary = train(
            output,
            g,
            on_step=lambda m: report(int(m["step"]), g.judge_steps, f"judge SFT  loss {m['loss']:.3f}"),
        )
    print_eval(
        JudgeEval.from_dict(summary["eval"]),
        f"judge on {summary['heldout_responses']} held-out responses",
        g.gate_margin,
    )
    console.print(
        f"wrote {output} (trained in {summary['train_seconds']:.0f} s); held-out labels: {output / HELDOUT}"
    )


@app.command("eval")
def eval_cmd(
    endpoint: Annotated[
        str,
        typer.Option(
            "--endpoint", help="Judge base URL ending in /v1; several, comma-separated: an ensemble."
        ),
    ],
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="JSONL of labelled responses (default: the run's held-out labels, built from the config's "
            "[genrm] section: the set the run's own judge and its gate are measured on).",
        ),
    ] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the endpoint.")] = "default",
    k: Annotated[int, typer.Option(min=1, help="Judge samples per grade, averaged.")] = 1,
    pairwise: Annotated[bool, typer.Option(help="Also score the blind pairwise judge.")] = True,
    pair_domain: Annotated[
        list[str] | None,
        typer.Option(
            "--pair-domain",
            help="Domains of the balanced pairwise set (repeatable; default: general, or every row when "
            "none is general).",
        ),
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="PNG output (default: beside the labels).")] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=1, help="Tokens per judgment (default: $M1_GENRM_MAX_TOKENS, else 512)."),
    ] = None,
    pair_method: PairMethodOpt = None,
    grade_views: GradeViewsOpt = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="An m1model checkpoint (the policy a stage starts from): also grade its own sampled answers "
            "to general prompts the judge never trained on, by the five-grade judge and by the rule, and "
            "count how often the judge orders two answers to one prompt as the rule does (its grades as "
            "genrm.grade_score says).",
        ),
    ] = None,
    policy_prompts: Annotated[int, typer.Option(min=2, help="General prompts --policy answers.")] = 64,
    policy_samples: Annotated[
        int | None, typer.Option(min=2, help="Answers per prompt (default: the config's train.group_size).")
    ] = None,
    seed: int = 0,
    config: ConfigOpt = None,
    set_: SetOpt = None,
) -> None:
    """Grade accuracy beside the majority grade, balanced accuracy, Spearman, confusion, length slope,
    Best-of-N vs pass@N and random; the blind pairwise judge on a balanced set in both orders beside
    every trivial judge; and whether the run's gate would train on it. With --policy, the judge on that
    policy's own answers beside the rule grade."""
    # heavy: scipy, polars; not at m1 start-up
    from flows.genrm.files import plot_eval, read_labels
    from verifiers.endpoint import EndpointError
    from verifiers.genrm.evaluate import PAIR_DOMAINS, evaluate_judge

    cfg = _config(config, set_)
    _check_pair_method(pair_method)
    _check_grade_views(grade_views)
    if policy is not None:  # before minutes of judging
        from m1model.policy import CheckpointError, model_folder  # heavy: torch

        try:
            model_folder(policy)
        except CheckpointError as exc:
            raise InputError(f"--policy {exc}") from None
    if labels is not None:
        rows, bad = read_labels(labels)
    else:
        from flows.genrm.flow import heldout_rows  # heavy: prefect, math_verify

        with console.status("building the run's held-out labels ..."):
            rows, bad = heldout_rows(cfg.genrm), []
    if bad:
        console.print(
            f"[yellow]skipped {len(bad)} rows:[/] "
            + "; ".join(f"line {b['line']}: {b['reason']}" for b in bad[:3])
        )
    with console.status(f"judging {len(rows)} responses at {endpoint} ..."):
        try:
            result = evaluate_judge(
                endpoint,
                rows,
                model=model,
                k=k,
                pairwise=pairwise,
                seed=seed,
                rejected=len(bad),
                max_tokens=max_tokens,
                pair_domains=pair_domain or PAIR_DOMAINS,
                pair_method=pair_method,
                grade_views=grade_views,
            )
        except EndpointError as exc:  # every judgment failed: a user error (a wrong URL, a dead server)
            raise InputError(str(exc)) from None
    print_eval(result, f"judge {model} at {endpoint}: {len(rows)} labelled responses", cfg.genrm.gate_margin)
    png = plot_eval(result, plot or (labels.with_suffix(".eval.png") if labels else Path("judge-eval.png")))
    console.print(f"plot: {png}")
    _table_artifact(result)
    if policy is not None:
        _policy_order(
            cfg, policy, endpoint, model, k, max_tokens, grade_views, policy_prompts, policy_samples, seed
        )


def _policy_order(cfg, policy, endpoint, model, k, max_tokens, grade_views, n, samples, seed) -> None:
    # heavy: torch, math_verify
    from flows.curriculum.judge_on_policy import policy_order
    from m1model.policy import CheckpointError
    from verifiers.genrm.grade import GradeJudge

    judge = GradeJudge(
        url=endpoint,
        model=model,
        k=k,
        max_tokens=max_tokens,
        grade_views=grade_views,
        grade_score=cfg.genrm.grade_score,  # as the run's stages would score (`--set genrm.grade_score=...`)
    )
    try:
        result = policy_order(
            judge,
            cfg.genrm,
            policy,
            n,
            samples or cfg.train.group_size,
            max_tokens=cfg.eval.max_new_tokens,
            temperature=cfg.train.temperature,
            seed=seed,
            status=console.status,
        )
    except CheckpointError as exc:
        raise InputError(str(exc)) from None
    print_rows(result.table(), f"genrm-grade on the answers of {policy}, beside the rule grade")
    why = result.gate(cfg.genrm.policy_gate_margin)  # the run's second gate (flows/curriculum/policy_gate.py)
    console.print(
        f"as the gate reads it (genrm.policy_gate_margin {cfg.genrm.policy_gate_margin:.2f}): "
        + (f"not fit to train on: {why}" if why else "fit to train on")
    )


def _check_grade_views(views: str | None) -> None:
    # heavy: pydantic, httpx (the judge's options and endpoint); not at m1 start-up
    from verifiers.genrm.options import GRADE_VIEWS

    if views is not None and views not in GRADE_VIEWS:
        raise InputError(f"--grade-views must be {' or '.join(GRADE_VIEWS)}, not {views!r}")


def _check_pair_method(method: str | None) -> None:
    # heavy: pydantic, httpx (the judge's options and endpoint); not at m1 start-up
    from verifiers.genrm.options import PAIR_METHODS

    if method is not None and method not in PAIR_METHODS:
        raise InputError(f"--pair-method must be {' or '.join(PAIR_METHODS)}, not {method!r}")


def _table_artifact(result) -> None:
    """The table as a Prefect artifact too, when a Prefect API is configured (the CLI runs without one)."""
    if not os.environ.get("PREFECT_API_URL"):
        return
    # heavy: prefect; not at m1 start-up
    from prefect.artifacts import create_table_artifact

    create_table_artifact(result.table(), key="genrm-eval", description="judge evaluation (m1 genrm eval)")


@app.command("swiss")
def swiss(
    input: Annotated[Path, typer.Option("--input", help='JSONL: {"prompt", "candidates": [...]} per line.')],
    output: Annotated[Path, typer.Option("--output", help="JSONL: ranking and chosen reference per prompt.")],
    endpoint: Annotated[
        str | None, typer.Option(help="Pairwise judge base URL (default: $M1_GENRM_URL).")
    ] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the endpoint.")] = "default",
    rounds: Annotated[int | None, typer.Option(min=1, help="Swiss rounds (default: ceil(log2 G)).")] = None,
    pair_method: PairMethodOpt = None,
) -> None:
    """Rank each prompt's candidate answers in Swiss rounds with the pairwise judge; keep the winner."""
    # heavy: scipy, polars; not at m1 start-up
    from flows.genrm.files import read_candidates
    from verifiers.genrm.swiss import judge_compare, run_swiss

    url = endpoint or os.environ.get("M1_GENRM_URL")
    if not url:
        raise InputError("no judge: pass --endpoint URL or set M1_GENRM_URL")
    _check_pair_method(pair_method)
    compare_fn = judge_compare(url, model, pair_method=pair_method)
    tournaments = read_candidates(input)
    with console.status("Swiss rounds ...") as status:
        results = run_swiss(
            tournaments,
            compare_fn,
            rounds,
            on_round=lambda r, n: status.update(f"Swiss round {r}/{n} done"),
        )
    atomic_write_text(output, "".join(json.dumps(r) + "\n" for r in results))
    table = Table(title=f"Swiss rounds: {len(results)} prompts")
    for col in ("prompt", "winner", "score", "runner-up", "score "):
        table.add_column(col)
    for r in results[:20]:
        top = r["ranking"]
        table.add_row(
            r["prompt"][:40],
            top[0]["text"][:40],
            f"{top[0]['score']:.1f}",
            top[1]["text"][:40],
            f"{top[1]['score']:.1f}",
        )
    console.print(table)
    console.print(f"wrote {output}")
