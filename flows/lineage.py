"""What each thing a run builds is built from, in one place, and why a thing is stale.

A run builds *things*: the datasets its producers write, the judge, the base model, every curriculum
stage, every held-out evaluation. Each thing's output is a function of its declared inputs:

- the config fields it reads (`READS`: dotted prefixes of `PipelineConfig`);
- the things upstream of it (dataset versions, the checkpoint it starts from);
- the files it reads (source files, benchmarks, stored calibration), by content;
- the code's release (`RELEASE`), so that an upgrade of the pipeline rebuilds.

Every field of the config is either read by some thing or declared here not to change any result, with
its reason (`NOT_RESULTS`, `SWITCHES`); tests/foundation/test_lineage.py walks every field of the config
model and perturbs it, so a new field cannot be forgotten.

A thing records the inputs it was built from beside its output (a dataset's ``BUILT_FROM.json``, a
checkpoint's training record); `fingerprint` hashes them, and `changes` names what differs between the
recorded inputs and the current ones (``train.rl_lr 0.0001 -> 0.0002``, ``m1-curated v1 -> v2``,
``start checkpoint replaced``): what `m1 train list-stages`, `m1 run --plan` and the report say.

Not a flow: the bookkeeping every flow uses to decide what to rebuild.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from flows.atomic import atomic_write_text

# -- what each thing reads ---------------------------------------------------------------------------

# Config fields each thing reads, as dotted prefixes ("train" is every field of the train section). The
# things: the datasets (`flows.datasets` kinds), the run's judge, the pass-rate filter, the base model
# (tokenizer + SFT warm start), a curriculum stage and a held-out evaluation.
READS: dict[str, tuple[str, ...]] = {
    "curated": (
        "data",  # the bundled generator (only without sources: `config_inputs`), input_path, benchmarks
        "curate.sources",
        "curate.sft_path",
        "curate.clean",
        "curate.minhash",
        "curate.embedding",
        "curate.contamination",
        "plugin_dirs",  # the answer check scores references with the math verifier, which a plugin may replace
    ),
    "synlogic": ("logic",),
    "code": ("code",),
    "swe": ("swe",),
    "general": ("genrm.general_items", "genrm.seed"),
    "judge": (
        "genrm.train_prompts",
        "genrm.eval_prompts",
        "genrm.judge_steps",
        "genrm.judge_lr",
        "genrm.judge_batch_size",
        "genrm.judge_model",
        "genrm.judges",  # how many judges, each at its own judge_model.seed (`judge_cache.judge_hashes`)
        "genrm.judge_domains",
        "genrm.judge_init",  # by the start checkpoint's identity, not its path
        "genrm.pair_training",
        "genrm.pair_domains",
        "genrm.rationale",
        "genrm.pair_grades",
        "genrm.k",  # the held-out measurement the gate reads is taken with these
        "genrm.judge_max_tokens",
        "genrm.seed",
    ),
    "pass-rate": ("curate.pass_rate", "plugin_dirs"),
    "base": (
        "model",
        "train.sft_steps",
        "train.sft_lr",
        "train.batch_size",
        "train.grad_clip",
        "train.seed",
        "eval.fraction",  # the split: the base trains on the rest
        "eval.fractions",
        "curate.minhash",  # the curriculum's datasets are deduplicated against each other with it
    ),
    "stage": (
        "train",  # the stage's effective settings (the curriculum's and the stage's overrides applied)
        "eval.fraction",
        "eval.fractions",
        "curate.minhash",
        "plugin_dirs",
        "genrm.k",  # how a judge is asked: read only where one scores (fingerprint.judged_config)
        "genrm.grade_score",
        "genrm.constraint_weight",
        "genrm.judge_max_tokens",
    ),
    "evaluation": (
        "eval.fraction",
        "eval.fractions",
        "eval.n_items",
        "eval.max_new_tokens",
        "curate.minhash",
        "data.benchmarks",
        "plugin_dirs",
        "genrm.k",  # how a judge is asked: read only where one scores (fingerprint.judged_config)
        "genrm.grade_score",
        "genrm.constraint_weight",
        "genrm.judge_max_tokens",
        "swe.eval_rollouts",
    ),
}

# Fields a thing's prefixes cover that it does not read.
EXCEPT: dict[str, tuple[str, ...]] = {
    # the base's alone: a stage sees them through its start checkpoint (none with train.init_from)
    "stage": ("train.sft_steps", "train.sft_lr"),
    "swe": ("swe.eval_rollouts",),  # how many tasks the final evaluation rolls out
}

# Fields no result depends on, each with its reason. A prefix covers every field under it.
NOT_RESULTS: dict[str, str] = {
    "name": "names the run: its things are stored under it, so another name is another set of things",
    "home": "where things are stored, not what they are",
    "runner": "where the data steps run: the same output on any runner and any shard count (tested)",
    "curate.max_removed_share": "a guard: it fails a run that would empty a source, never changes rows",
    "curate.minhash.max_cluster": "a guard: it fails a MinHash step with a giant cluster, never changes rows",
    "code.workers": "problems checked at once: the same verdicts in any order",
    "swe.workers": "containers at a time: the same verdicts in any order",
    "genrm.port": "the judge server's port",
    "train.torch_threads": "CPU threads: the same computation (float sums in one order per kernel)",
    "train.checkpoint_every": "how often a stage saves resumable state; a resumed stage is bitwise the same",
    "train.keep_checkpoints": "how many step checkpoints a stage keeps on disk as it goes",
    "train.samples_per_step": "responses logged per step for people to read",
    "train.tensorboard": "an extra log of the same metrics",
    "train.curriculum": "names the curriculum; what a stage is built from is the stage's own definition",
    "train.init_from": "names the first stage's start; the start checkpoint's identity is an input instead",
    "train.nproc": "processes running the same stage; a stage keeps its checkpoints when resumed on more",
    "train.parallel": "how the processes split the model (DDP or FSDP): the same updates",
    "train.rollout": "which sampler draws rollouts: other random draws, the same training",
    "train.vllm_gpu_memory": "vLLM's share of the GPU",
    "eval.every": "extra validation inside a stage, for people to read; it changes no weight",
    "eval.overfit_tolerance": "the threshold of a warning a stage prints when it ends",
}

# Fields that decide whether a thing exists (a switched-off producer is absent from the DAG and the
# curriculum drops what only it supplied), not what an existing thing computes.
SWITCHES: dict[str, str] = {
    "logic.enabled": "runs the logic-task producer or not",
    "code.enabled": "runs the code-task producer or not",
    "swe.enabled": "runs the SWE producer or not",
    "genrm.enabled": "writes the general data and trains the judge, or not",
    "genrm.gate": "trains the general stage on a judge that does not beat the trivial judges, or not",
    "genrm.gate_margin": "how far the judge must beat the trivial judges for the general stage to train",
    "genrm.policy_gate_prompts": "the prompts of the judge's second gate (0: off): whether the general stage "
    "trains; its measurement is kept per setting (flows/curriculum/policy_gate.py)",
    "genrm.policy_gate_margin": "how far the judge's order of the policy's answers must beat a constant "
    "judge's for the general stage to train",
    "curate.pass_rate.enabled": "runs the pass-rate filter or not",
}

# The pipeline's release: an upgrade rebuilds what it changed the code of; a checkout's edits do not
# (rebuild one thing by hand with its --restart, or a new run name).
try:
    RELEASE = version("m1-pipeline")
except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing it
    RELEASE = "0+unknown"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested dict as dotted leaves (lists are leaves)."""
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    return {prefix: value}


@functools.cache
def _pattern(prefixes: tuple[str, ...]) -> re.Pattern:
    return (
        re.compile("^(?:" + "|".join(map(re.escape, prefixes)) + r")(?:\.|$)")
        if prefixes
        else re.compile("$^")
    )


def _under(field: str, prefixes: tuple[str, ...]) -> bool:
    return bool(_pattern(prefixes).match(field))


def config_inputs(thing: str, config, train=None) -> dict[str, Any]:
    """The config fields `thing` reads, as ``{"train.rl_lr": 0.0001, ...}``; ``train`` is a stage's
    effective TrainConfig (the config's own otherwise)."""
    sections = {p.split(".")[0] for p in READS[thing]}
    dump = config.model_dump(mode="json", include=sections)
    if train is not None and "train" in sections:
        dump["train"] = train.model_dump(mode="json")
    if thing == "curated" and (config.curate.sources or config.data.input_path):
        # the user's own data: the bundled generator's settings are not read
        dump["data"] = {k: v for k, v in dump["data"].items() if k not in type(config.data).GENERATOR}
    skip = (*NOT_RESULTS, *SWITCHES, *EXCEPT.get(thing, ()))
    return {k: v for k, v in sorted(flatten(dump).items()) if _under(k, READS[thing]) and not _under(k, skip)}


# -- inputs, fingerprints and reasons ------------------------------------------------------------------


def fingerprint(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(key: str, old: Any, new: Any) -> str:
    group, _, name = key.partition(".")
    if group == "datasets":
        return f"{name} {'absent' if old is None else f'v{old}'} -> {'absent' if new is None else f'v{new}'}"
    if group == "files":
        return f"{name} {'added' if old is None else 'removed' if new is None else 'changed'}"
    if group == "start":
        return "start checkpoint replaced"
    if group == "judge":
        return "judge replaced" if old and new else f"judge {'added' if new else 'removed'}"
    if group == "release":
        return f"m1-pipeline {old} -> {new}"
    what = name if group == "config" else f"{group} {name}" if name else group
    field = group == "config" and "[" not in name  # a config field exists on both sides (None is a value)
    was = "absent" if old is None and not field else _short(old)
    now = "absent" if new is None and not field else _short(new)
    return f"{what} {was} -> {now}"


def changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[str]:
    """What differs between recorded inputs and current ones, one phrase per input, in a stable order;
    ``["not built yet"]`` when nothing was recorded."""
    if old is None:
        return ["not built yet"]
    a, b = _leaves(old), _leaves(new)
    return [_describe(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _leaves(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs as comparable leaves: each group's fields one by one (config fields are dotted already), a
    list of tables item by item (``curate.sources[0].mapping.reference``)."""
    out: dict[str, Any] = {}
    for group, value in inputs.items():
        if isinstance(value, Mapping) and value:
            leaves = value if group == "config" else flatten(value)
            for k, v in leaves.items():
                out |= _items(f"{group}.{k}", v)
        else:
            out[group] = value
    return out


def _items(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return {f"{key}[{i}].{k}": v for i, item in enumerate(value) for k, v in flatten(item).items()}
    return {key: value}


def reason(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    """`changes` as one line ("" when nothing changed)."""
    return "; ".join(changes(old, new))


# -- reusing what was built from the same inputs -------------------------------------------------------


def reuse_or_build(store, name: str, writer: str, inputs: dict[str, Any], build, logger) -> dict[str, Any]:
    """`build()`'s result (a flow's result dict with the written dataset's ``manifest``), or, when
    `writer` last wrote `name` from exactly these ``inputs``, that write's recorded result without doing
    the work again, that version becoming the latest again. Either way the result says why the version
    was built (``built_because``) and whether it was reused now."""
    if (record := store.reusable(name, writer, inputs)) is not None:
        store.make_latest(name, record["version"])  # e.g. the pass-rate filter switched off again
        logger.info("%s@v%d unchanged (same inputs as when it was built): reused", name, record["version"])
        return record["result"] | {"tasks": [], "reused": True, "built_because": record["reason"]}
    logger.info("%s: building (%s)", name, store.why_rebuilt(name, writer, inputs))
    result = build()
    kept = {k: v for k, v in result.items() if k != "tasks"}  # Prefect task states: this run's only
    record = store.record_built(name, writer, result["manifest"]["version"], inputs, kept)
    return result | {"reused": False, "built_because": record["reason"]}


# -- files by content ----------------------------------------------------------------------------------


def file_digest(path: str | os.PathLike, cache_dir: Path | None = None) -> str:
    """SHA-256 of a file or folder's contents. With ``cache_dir``, a file's digest is remembered by its
    path, size and modification time, so a large unchanged source is not read again on every rerun."""
    path = Path(path)
    if not path.exists():
        return "missing"
    if path.is_dir():
        h = hashlib.sha256()
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(f"{f.relative_to(path)}:{file_digest(f, cache_dir)}\n".encode())
        return h.hexdigest()
    stat = path.stat()
    key = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    memo = cache_dir / "file-digests.json" if cache_dir else None
    known = _read_json(memo) if memo else {}
    if key in known:
        return known[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    if memo:
        fresh = {k: v for k, v in known.items() if not k.startswith(f"{path.resolve()}:")}
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(memo, json.dumps(fresh | {key: digest}, indent=1, sort_keys=True))
    return digest


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
