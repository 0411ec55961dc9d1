"""The general-task subflow: everything the `general` curriculum stage needs before it can train.

`general_tasks(config)`:

1. writes ``{run}-general`` (open-ended prompts with references, flows/genrm/general.py) to the dataset
   store, unless its latest version was written with the same parameters;
2. trains the judge (`m1 genrm train-judge`'s code) into ``$M1_HOME/runs/<run>/genrm/judge/``, unless
   the checkpoint there was trained from the same inputs (a hash of the judge settings, the code version
   of the judging data and prompts; kept in its training.json);
3. publishes its evaluation on held-out labelled responses (measured by `m1 genrm eval`'s code through
   the real server when it was trained): a table artifact, a markdown artifact with the Best-of-N and
   confusion PNG;

and returns the judge's checkpoint path with the evaluation. A training stage then wraps itself in
``served_judge(path)``, which also points the `genrm` verifiers at it (``M1_GENRM_URL``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

import flows.genrm.general as general
import flows.genrm.labels as labels
import flows.genrm.train_judge as train
import verifiers.genrm.evaluate as evaluate
import verifiers.genrm.prompts as prompts
from flows.artifacts import artifact_key, embed_png
from flows.config import GenRMConfig, PipelineConfig
from flows.datasets import GENERAL, dataset_name
from flows.genrm.files import SERVED_JUDGE_ENV, genrm_root, judge_dir, plot_eval
from flows.genrm.general import general_items
from flows.lineage import RELEASE, config_inputs
from flows.model_settings import use_threads
from flows.progress import prefect_progress
from flows.store import DatasetStore
from verifiers.genrm.evaluate import JudgeEval

DEFAULT_CONFIG = PipelineConfig()
PREREQUISITES = ()  # nothing from the machine (flows/prerequisites.py): the judge is trained and served here


def inputs(config: PipelineConfig) -> dict:
    """What ``{run}-general`` is built from (flows/lineage.py); the judge records its own inputs."""
    return {"config": config_inputs(GENERAL, config), "release": RELEASE}


def write_general(config: PipelineConfig) -> str:
    """``{run}-general`` at its latest version (``name@vN``), written now only if its inputs changed
    (why it was built is in the store's record, `DatasetStore.built_from`)."""
    store, g = DatasetStore(config.home), config.genrm
    name, wanted = dataset_name(config.name, GENERAL), inputs(config)
    if (record := store.reusable(name, general_tasks.name, wanted)) is None:
        params = {"n": g.general_items, "seed": g.seed, "generator": "flows.genrm.general"}
        manifest = store.write(name, general_items(g.general_items, g.seed), params=params)
        record = store.record_built(name, general_tasks.name, manifest.version, wanted, {})
    store.make_latest(name, record["version"])
    return f"{name}@v{record['version']}"


def judge_inputs_hash(g: GenRMConfig) -> str:
    """What the judge checkpoint depends on: its training settings and the code that makes its data."""
    settings = g.model_dump(
        include={
            "train_prompts",
            "eval_prompts",
            "judge_steps",
            "judge_lr",
            "judge_batch_size",
            "judge_model",
            "seed",
        }
    )
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for module in (general, labels, train, prompts, evaluate):  # evaluate: the summary the gate reads
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def ensure_judge(
    folder: Path, g: GenRMConfig, on_step: Callable[[dict[str, float]], None] | None = None
) -> tuple[dict[str, Any], bool]:
    """(the judge's training summary, whether it was trained now). Cached by `judge_inputs_hash`."""
    digest = judge_inputs_hash(g)
    meta = folder / "training.json"
    if meta.is_file() and (folder / train.HELDOUT).is_file():
        judge = json.loads(meta.read_text()).get("judge", {})
        if judge.get("inputs_hash") == digest:
            return judge, False
    return train.train_judge(folder, g, on_step=on_step, inputs_hash=digest), True


def judge_gate(config: PipelineConfig) -> str | None:
    """Why this run's own judge must not score training (it loses to a constant baseline on its
    held-out labels), or None: the gate off (genrm.gate), no judge yet, a judge the user serves
    (M1_GENRM_URL), or a good one."""
    if not config.genrm.gate:
        return None
    meta = judge_dir(config) / "training.json"
    served_own = os.environ.get(SERVED_JUDGE_ENV) == str(judge_dir(config).resolve())
    if (os.environ.get("M1_GENRM_URL") and not served_own) or not meta.is_file():
        return None
    summary = json.loads(meta.read_text()).get("judge", {})
    return JudgeEval.from_dict(summary["eval"]).gate() if "eval" in summary else None


def _progress(total: int) -> Callable[[dict[str, float]], None]:
    report = prefect_progress("judge SFT steps done", every=max(1, total // 20))
    return lambda m: report(m["step"], total)


@flow(name="genrm-general", flow_run_name="{config.name}-general", log_prints=True)
def general_tasks(config: PipelineConfig = DEFAULT_CONFIG) -> dict[str, Any]:
    """Write `{run}-general`, train (or reuse) the judge, evaluate it; return the judge checkpoint path."""
    logger = get_run_logger()
    g = config.genrm
    if not g.enabled:
        logger.info("genrm.enabled is false: no general data, no judge")
        return {"enabled": False}
    use_threads(config.train)
    had = DatasetStore(config.home).reusable(
        dataset_name(config.name, GENERAL), general_tasks.name, inputs(config)
    )
    general = write_general(config)
    built_because = DatasetStore(config.home).built_from(general.rsplit("@v", 1)[0], general_tasks.name)[
        "reason"
    ]
    logger.info("general items: %s (built because: %s)", general, built_because)
    folder = judge_dir(config)
    summary, trained = ensure_judge(folder, g, on_step=_progress(g.judge_steps))
    logger.info("judge %s: %s", "trained" if trained else "reused (same inputs)", folder)

    result = JudgeEval.from_dict(summary["eval"])  # measured through the server when it was trained
    png = plot_eval(result, genrm_root(config) / "eval.png", f"{config.name}: judge on held-out prompts")
    create_table_artifact(
        result.table(), key=artifact_key(config.name, "genrm-eval"), description="judge evaluation"
    )
    markdown = eval_markdown(result, png, folder)
    if gate := result.gate():
        markdown += (
            f"\n**Not used for training**: {gate}. The `general` stage is switched off (`genrm.gate = false` "
            "trains it anyway).\n"
        )
        logger.warning("the judge loses to a constant baseline (%s): no stage trains on it", gate)
    create_markdown_artifact(
        markdown,
        key=artifact_key(config.name, "genrm-report"),
        description="generative reward model: data, judge, evaluation",
    )
    store = DatasetStore(config.home)
    return {
        "enabled": True,
        "general": general,
        "manifest": json.loads(store.manifest(*_ref(general)).to_json()),
        "built_because": built_because,
        "reused": had is not None and not trained,
        "report": "# Generative reward model\n\n" + markdown,
        "judge": str(folder),
        "trained": trained,
        "eval": result.table(),
        "plot": str(png),
        "gate": result.gate(),
    }


def _ref(ref: str) -> tuple[str, int]:
    name, version = ref.rsplit("@v", 1)
    return name, int(version)


def eval_markdown(result, png: Path, folder: Path) -> str:
    """The judge's evaluation as a report section: what the judge is, never whether this run trained it
    (an unchanged rerun writes the same report; the log says it was reused)."""
    rows = "\n".join(
        f"| {r['metric']} | {r['value']} | {'' if r['baseline'] is None else r['baseline']} | {r['note']} |"
        for r in result.table()
    )
    return (
        f"## Judge `{folder}`\n\n"
        "| metric | value | baseline | note |\n|---|---|---|---|\n"
        f"{rows}\n\n{embed_png(png, 'judge evaluation')}\n"
    )
