"""The whole DAG as one Prefect flow: curate -> model -> SFT warm start -> CISPO -> eval -> report.

`m1 run` runs it on the bundled synthetic math data (flows/data/synthetic_math.py) so that every
filter visibly removes the rows planted for it. Each step is a Prefect task; data steps are the pure
functions of flows/curate, training is flows/train. The flow only wires them together.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE

from flows.atomic import atomic_write_text
from flows.config import DataConfig, PipelineConfig
from flows.report import RunReport
from flows.schema import require_columns, validate_items
from flows.store import DatasetStore, StepCount

PLANTED_BY_STEP = {
    "exact-dedup": "exact",
    "minhash-dedup": "near",
    "decontaminate": "leak",
    "answer-check": "unparseable",
}


def load_input(cfg: DataConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The RL items (generated, or read from `cfg.input_path`) split into (valid, quarantined).

    A file that cannot be read as items at all (missing, broken JSON, missing columns) is an InputError:
    `m1 run` checks this before anything is written, so no partial output is left in the store.
    """
    if cfg.input_path is None:
        from flows.data.synthetic_math import generate_for

        return validate_items(generate_for(cfg), where="synthetic-math")
    from flows.curate.ingest import read_table

    path = Path(cfg.input_path)
    return validate_items(read_table(path, strict=True), where=str(path))


def load_benchmarks(cfg: DataConfig) -> dict[str, pl.DataFrame]:
    from flows.curate.ingest import read_table
    from flows.data.synthetic_math import load_benchmark

    benches = {"tiny_benchmark": load_benchmark()}
    for p in cfg.benchmark_paths:
        benches[Path(p).stem] = read_table(Path(p), strict=True)
    return benches


def preflight(config: PipelineConfig) -> None:
    """Read every input once so bad files fail fast, with one clear line, before the flow writes."""
    load_input(config.data)
    for name, df in load_benchmarks(config.data).items():
        require_columns(df, ["prompt"], where=f"benchmark {name}")


@task(name="ingest")
def ingest(cfg: DataConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    return load_input(cfg)


@task(name="curate")
def curate(items: pl.DataFrame, config: PipelineConfig) -> tuple[pl.DataFrame, list[StepCount], pl.DataFrame]:
    """exact dedup -> MinHash near-dup -> n-gram contamination -> answer parseability."""
    from flows.curate import decontaminate, exact_dedup, extract_answers, minhash_dedup

    c = config.curate
    results = []
    df = items
    benchmarks = load_benchmarks(config.data)
    for run in (
        exact_dedup,
        lambda d: minhash_dedup(
            d, threshold=c.minhash_threshold, num_perm=c.minhash_num_perm, shingle_size=c.shingle_size
        ),
        lambda d: decontaminate(d, benchmarks, ngram=c.contamination_ngram),
        extract_answers,
    ):
        res = run(df)
        results.append(res)
        df = res.kept
    removed = pl.concat(
        [
            r.removed.select(*items.columns, "reason").with_columns(pl.lit(r.count.step).alias("step"))
            for r in results
        ],
        how="vertical_relaxed",
    )
    return df, [r.count for r in results], removed


def planted_counts(items: pl.DataFrame) -> dict[str, int]:
    planted = items["metadata"].map_elements(lambda m: json.loads(m).get("planted"), return_dtype=pl.String)
    counts = planted.value_counts()
    by_kind = dict(zip(counts[counts.columns[0]].to_list(), counts["count"].to_list(), strict=True))
    return {step: by_kind.get(kind, 0) for step, kind in PLANTED_BY_STEP.items()}


def split_eval(df: pl.DataFrame, n_eval: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    ids = sorted(df["id"].to_list())
    random.Random(seed).shuffle(ids)
    held = set(ids[: min(n_eval, len(ids) // 4)])
    mask = df["id"].is_in(list(held))
    return df.filter(~mask), df.filter(mask)


@flow(name="m1-pipeline", log_prints=True)
def pipeline(config: PipelineConfig = PipelineConfig()) -> dict:  # noqa: B008 - the UI form default
    """Run the whole pipeline on one machine; returns the run report as a dict."""
    logger = get_run_logger()
    store = DatasetStore(config.home)
    report = RunReport(name=config.name)

    items, quarantined = ingest(config.data)
    report.quarantined = quarantined.height
    curated, steps, removed = curate(items, config)
    report.steps = steps
    if config.data.input_path is None:
        report.planted = planted_counts(items)
    rejected = pl.concat(
        [quarantined.with_columns(pl.lit("ingest").alias("step")), removed], how="vertical_relaxed"
    )
    manifest = store.write(
        f"{config.name}-curated",
        curated,
        steps=steps,
        quarantine=rejected,
        params=config.data.model_dump() | config.curate.model_dump(),
    )
    report.datasets.append(manifest.ref)
    logger.info("curated %d of %d items into %s", curated.height, items.height, manifest.ref)

    train_items, eval_items = split_eval(curated, config.eval.n_items, config.data.seed)
    report.eval_items = eval_items.height
    _train(config, train_items, eval_items, report, store)

    markdown = report.to_markdown()
    run_dir = store.root / "runs" / config.name
    atomic_write_text(run_dir / "report.md", markdown)
    create_markdown_artifact(markdown, key=_artifact_key(config.name), description="m1 run report")
    print(markdown)
    return report.__dict__ | {"steps": [s.__dict__ for s in report.steps]}


def _artifact_key(name: str) -> str:
    return "run-report-" + "".join(ch if ch.isalnum() else "-" for ch in name.lower())


@task(name="build-model", cache_policy=NONE)
def build_model_and_tokenizer(config: PipelineConfig, train_items: pl.DataFrame):
    """A BPE tokenizer trained on the curated corpus and a fresh tiny hybrid model."""
    from flows.curriculum.prompts import answer_text, prompt_text
    from flows.train import build_model
    from m1model import train_tokenizer

    rows = train_items.to_dicts()
    tokenizer = train_tokenizer(
        [prompt_text(r) + answer_text(r) for r in rows], vocab_size=config.model.vocab_size
    )
    return build_model(config.model, tokenizer), tokenizer


@task(name="evaluate", cache_policy=NONE)
def evaluate(model, tokenizer, eval_items: pl.DataFrame, max_new_tokens: int) -> float:
    from flows.train import pass_rate

    return pass_rate(model, tokenizer, eval_items, max_new_tokens)


@task(name="sft-and-cispo", cache_policy=NONE)
def train(model, tokenizer, train_items: pl.DataFrame, config: PipelineConfig):
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    from flows.train import warm_start_and_rl

    tc = config.train
    total = max(tc.sft_steps + tc.rl_steps, 1)
    artifact = create_progress_artifact(0.0, description="SFT warm start + RL steps done")
    logger = get_run_logger()
    done = 0

    def on_step(phase: str, m: dict) -> None:
        nonlocal done
        done += 1
        update_progress_artifact(artifact, progress=100.0 * done / total)
        if phase == "rl":
            logger.info(
                "%s step %d/%d: reward %.3f, loss %s",
                tc.algorithm,
                int(m["step"]),
                tc.rl_steps,
                m["reward_mean"],
                f"{m['loss']:.4f}" if "loss" in m else "skipped (no signal)",
            )
        elif done % 25 == 0 or done == tc.sft_steps:
            logger.info("sft step %d/%d: loss %.4f", done, tc.sft_steps, m["loss"])

    return warm_start_and_rl(model, tokenizer, train_items, tc, on_step=on_step)


@task(name="save-checkpoint", cache_policy=NONE)
def save_checkpoint(model, tokenizer, folder: Path) -> str:
    from flows.train import save_policy

    return str(save_policy(model, tokenizer, folder))


def _train(config: PipelineConfig, train_items, eval_items, report: RunReport, store: DatasetStore) -> None:
    import torch

    from flows.train import use_threads

    use_threads(config.train)
    model, tokenizer = build_model_and_tokenizer(config, train_items)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    report.pass_rate_before = evaluate(model, tokenizer, eval_items, config.eval.max_new_tokens)
    result = train(model, tokenizer, train_items, config)
    report.sft_losses = [m["loss"] for m in result.sft]
    report.rl_metrics = result.rl
    report.weights_changed = any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    report.pass_rate_after = evaluate(model, tokenizer, eval_items, config.eval.max_new_tokens)
    report.checkpoint = save_checkpoint(model, tokenizer, store.root / "runs" / config.name / "model")
