"""Code tasks as data: `{run}-code`, programming problems with reference solutions and checked tests.

plan -> test suites (-> model-proposed tests) -> schema -> reference check -> exact dedup -> store

Problems come round-robin from the families in flows/data/code_problems (`code.families`; null: all,
in a seeded order),
each drawn from its seed with its own constants and wording. Every bundled test is the output of the
reference run in the process sandbox on an input the family proposed, with independent alternatives
(brute forces) having to agree (flows/tasks/suites.py); a problem with a failing or disagreeing input,
or a suite a constant program would pass, is quarantined with the reason. When `code.testgen` names an
endpoint, the model proposes extra inputs (verifiers/testgen.py), kept where the solutions agree.
Finally the `code` verifier itself must score each reference 1, as the SFT warm start trains on it.
Duplicates are exact ones within the set; duplicates of the run's other datasets are removed where the
curriculum reads them together (flows/curriculum/overlap.py). Nothing runs when the dataset was last
built from the same inputs (flows/lineage.py: the `code` settings).

Items: domain "code", task = family, prompt = the statement with its input/output contract and answer
format, reference = the reference as a ```python block; metadata holds `tests`, `fn_name` (function
style), `difficulty` (the family's: 1 one pass, 2 strings/number theory, 3 DP/greedy), `family`,
`style`, `seed`, `params`, `language` and the per-test `time_limit_s`/`memory_mb` the verifier applies.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl
from prefect import flow, get_run_logger

import flows.data.code_problems
from flows.config import CodeTasksConfig, PipelineConfig
from flows.curate.result import StepResult, split_by_reason
from flows.curate.step_tasks import mapped, once, over
from flows.data.code_problems import FAMILIES, problem
from flows.datasets import CODE, dataset_name
from flows.errors import ConfigError
from flows.lineage import RELEASE, config_inputs, reuse_or_build
from flows.prerequisites import check as check_machine
from flows.runner import ROW, Tasks, on_runner
from flows.schema import ITEM_COLUMNS
from flows.store import DatasetStore
from flows.tasks.publish import Steps, publish, source_hash, write
from flows.tasks.steps import Schema, answer_check, chunks, deduplicate
from flows.tasks.suites import check, extra_tests, limits_for
from sandboxes.prerequisites import PROCESS_SANDBOX
from verifiers.code import CodeVerifier
from verifiers.endpoint import EndpointError, EndpointUnavailable

# What this flow needs from the machine (flows/prerequisites.py): the reference check and testgen run
# programs in the process sandbox.
PREREQUISITES = (PROCESS_SANDBOX,)
SOURCE = "code_problems"


@dataclass(frozen=True)
class Spec:
    family: str
    seed: int
    row: int


def plan(cfg: CodeTasksConfig) -> list[Spec]:
    """Problem seeds, families round-robin (all families in a seeded order, so that a small
    `n_problems` still mixes topics and styles); a one-line error for unknown families."""
    if cfg.families is None:
        names = sorted(FAMILIES)
        random.Random(f"families/{cfg.seed}").shuffle(names)
    else:
        names = list(dict.fromkeys(cfg.families))
    if not names:
        raise ConfigError("code.families is empty: name families, or set code.enabled = false")
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ConfigError(
            f"code.families: unknown famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)} "
            f"(known: {', '.join(sorted(FAMILIES))})"
        )
    return [
        Spec(names[i % len(names)], cfg.seed * 1_000_000 + i // len(names), i) for i in range(cfg.n_problems)
    ]


def _row(spec: Spec, cfg: CodeTasksConfig) -> dict:
    """The spec's item with a checked suite, or the row to quarantine (with `reason`)."""
    row = {
        "id": f"{spec.family}-s{spec.seed}",
        "source": SOURCE,
        "domain": "code",
        "task": spec.family,
        ROW: spec.row,
    }
    try:
        p = problem(spec.family, spec.seed, cfg.tests_per_problem)
    except Exception as exc:  # noqa: BLE001 - a broken family quarantines its problem, not the run
        return row | {"prompt": "", "reference": "", "metadata": "{}", "reason": f"family failed: {exc!r}"}
    checked = check(p, limits_for(cfg.time_limit_s, cfg.memory_mb))
    meta = {
        "tests": checked.tests,
        "difficulty": p.difficulty,
        "family": p.family,
        "style": p.style,
        "seed": p.seed,
        "params": p.params,
        "language": "python",
        "time_limit_s": cfg.time_limit_s,
        "memory_mb": cfg.memory_mb,
    } | ({"fn_name": p.fn_name} if p.fn_name else {})
    item = {"prompt": p.statement, "reference": p.reference, "metadata": json.dumps(meta, sort_keys=True)}
    return row | item | {"reason": checked.error}


@dataclass(frozen=True)
class Suites:
    """Draw each problem of a chunk of the plan and build its suite in the sandbox (`cfg.workers`
    problems at once). `families` is a hash of the families' source, so a changed family misses the cache."""

    name = "test-suites"
    removes = "problems whose reference fails or disagrees on an input, or whose suite is too weak"
    retry = False
    cfg: CodeTasksConfig
    families: str

    def run(self, rows: list[Spec]) -> StepResult:
        with ThreadPoolExecutor(self.cfg.workers) as pool:  # the work happens in sandboxed processes
            made = list(pool.map(lambda s: _row(s, self.cfg), rows))
        df = pl.DataFrame(made, schema={**ITEM_COLUMNS, ROW: pl.Int64, "reason": pl.String})
        return split_by_reason(
            df.drop("reason"), df["reason"], "test-suites", "every test from the reference run in the sandbox"
        )


@dataclass(frozen=True)
class Testgen:
    """Extra tests from inputs the `code.testgen` model proposes (kept where the solutions agree). A
    reply that cannot be used leaves the problem with its bundled tests (said in its metadata); an
    endpoint that is down fails the step, retried as transient (flows/runner.py)."""

    name = "testgen"
    removes = "nothing: it adds tests"
    retry = True
    cfg: CodeTasksConfig

    def run(self, rows: pl.DataFrame) -> StepResult:
        shard, cfg = rows, self.cfg
        endpoint, limits = cfg.testgen.client(), limits_for(cfg.time_limit_s, cfg.memory_mb)

        def extend(metadata: str) -> str:
            meta = json.loads(metadata)
            p = problem(meta["family"], meta["seed"], cfg.tests_per_problem)
            try:
                tests, proposed = extra_tests(p, endpoint, cfg.testgen_inputs, limits)
            except EndpointUnavailable:
                raise
            except EndpointError as exc:
                return json.dumps(meta | {"testgen_error": str(exc)}, sort_keys=True)
            known = {json.dumps(t, sort_keys=True) for t in meta["tests"]}
            new = [t for t in tests if json.dumps(t, sort_keys=True) not in known]
            meta |= {"tests": meta["tests"] + new, "testgen": {"proposed": proposed, "added": len(new)}}
            return json.dumps(meta, sort_keys=True)

        with ThreadPoolExecutor(cfg.workers) as pool:
            metadata = list(pool.map(extend, shard["metadata"]))
        kept = shard.with_columns(pl.Series("metadata", metadata, dtype=pl.String))
        reason = f"tests added from inputs proposed by {cfg.testgen.url}, where the solutions agree"
        return split_by_reason(kept, pl.Series([None] * kept.height, dtype=pl.String), "testgen", reason)


@dataclass(frozen=True)
class ReferenceCheck:
    """The `code` verifier must score every reference 1 (it is the SFT warm start's target)."""

    name = "reference-check"
    removes = "problems whose reference the code verifier does not score 1"
    retry = False
    cfg: CodeTasksConfig

    def run(self, rows: pl.DataFrame) -> StepResult:
        c = self.cfg
        verifier = CodeVerifier(time_limit_s=c.time_limit_s, memory_mb=c.memory_mb, workers=c.workers)
        return answer_check(rows, verifier, "reference-check", "the code verifier scores each reference 1")


def preflight(config: PipelineConfig) -> list[Spec]:
    """Check the code section and the machine before anything runs (the CLI and the DAG call this first)."""
    specs = plan(config.code)
    check_machine({CODE: PREREQUISITES})
    return specs


def inputs(config: PipelineConfig) -> dict:
    """What `{run}-code` is built from (flows/lineage.py): the code settings."""
    return {"config": config_inputs(CODE, config), "release": RELEASE}


@flow(name="m1-code-tasks", flow_run_name="{config.name}-code-tasks", log_prints=True)
def code_tasks(config: PipelineConfig = PipelineConfig()) -> dict:  # noqa: B008 - the UI form default
    """Write `{run}-code` (see the module docstring); returns the manifest (as a dict), the rows per
    family and difficulty, notes, why it was built, and every task run's state (none when reused)."""
    preflight(config)
    store = DatasetStore(config.home)
    build = lambda: on_runner(code_steps, config.runner, store.root)(config)  # noqa: E731
    name = dataset_name(config.name, CODE)
    return reuse_or_build(store, name, code_tasks.name, inputs(config), build, get_run_logger())


@flow(name="m1-code-tasks-steps", flow_run_name="{config.name}-code-tasks-steps", log_prints=True)
def code_steps(config: PipelineConfig) -> dict:
    cfg, store = config.code, DatasetStore(config.home)
    specs = plan(cfg)
    steps = Steps(config.name, "code tasks", 4 + bool(cfg.testgen.url))
    tasks, n = Tasks(), config.runner.shards
    suites = Suites(cfg, source_hash(flows.data.code_problems))
    df = steps.record(over(tasks, suites, chunks(specs, n)))
    if cfg.testgen.url:
        df = steps.record(mapped(tasks, Testgen(cfg), df, n))
    df = steps.record(once(tasks, Schema("code items"), df))
    df = steps.record(mapped(tasks, ReferenceCheck(cfg), df, n))
    df = deduplicate(tasks, steps, config, df)
    meta = [json.loads(m) for m in df["metadata"]]
    notes = [
        f"{style}: {count} problems" for style, count in sorted(Counter(m["style"] for m in meta).items())
    ]
    notes.append(f"{cfg.tests_per_problem} test inputs proposed by each family; outputs from the references")
    if cfg.testgen.url:
        extra = [m.get("testgen", {}) for m in meta]
        notes.append(
            f"testgen: {sum(e.get('added', 0) for e in extra)} tests added of {sum(e.get('proposed', 0) for e in extra)} "
            f"inputs proposed; {sum('testgen_error' in m for m in meta)} problems without a usable reply"
        )
    manifest = write(
        store, dataset_name(config.name, CODE), df, steps, params={"code": cfg.model_dump(mode="json")}
    )
    steps.logger.info("%d of %d tasks resumed from cache", tasks.cached, len(tasks.states))
    return publish(manifest, df, steps, notes) | {"tasks": tasks.states}
