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

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

import flows.genrm.train_judge as train
import verifiers.genrm.evaluate as evaluate
from flows.artifacts import artifact_key, embed_png
from flows.atomic import atomic_write_text
from flows.config import GenRMConfig, PipelineConfig
from flows.datasets import GENERAL, dataset_name
from flows.errors import InputError
from flows.genrm.ahead import wait_for_judge
from flows.genrm.files import genrm_root, judge_dir, judge_dirs, member_hashes, plot_eval, user_judge
from flows.genrm.general import general_items
from flows.genrm.judge_cache import ensure_judges
from flows.genrm.serve import MODEL_NAME, served_judge
from flows.lineage import RELEASE, config_inputs
from flows.model_settings import use_threads
from flows.progress import prefect_progress
from flows.store import DatasetStore
from verifiers.endpoint import EndpointError
from verifiers.genrm.evaluate import JudgeEval

DEFAULT_CONFIG = PipelineConfig()
EXTERNAL_EVAL = "external-eval.json"  # beside the run's judge: the user's judge's measurement
ENSEMBLE_EVAL = "ensemble-eval.json"  # beside the run's judges: their ensemble's measurement
PREREQUISITES = ()  # nothing from the machine (flows/prerequisites.py): the judge is trained and served here


def inputs(config: PipelineConfig) -> dict:
    """What ``{run}-general`` is built from (flows/lineage.py); the judge records its own inputs."""
    return {"config": config_inputs(GENERAL, config), "release": RELEASE}


def general_reusable(config: PipelineConfig) -> bool:
    """Whether ``{run}-general`` was built from these inputs already (`write_general` will reuse it)."""
    name = dataset_name(config.name, GENERAL)
    return DatasetStore(config.home).reusable(name, general_tasks.name, inputs(config)) is not None


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


def general_built_because(config: PipelineConfig, ref: str) -> str:
    """Why ``{run}-general`` at ``ref`` (``name@vN``) was built, as recorded when it was."""
    return DatasetStore(config.home).built_from(ref.rsplit("@v", 1)[0], general_tasks.name)["reason"]


def general_items_line(ref: str, reused: bool, built_because: str) -> str:
    """The log line for ``{run}-general``, one spelling for the pipeline (which writes it ahead of the
    warm start) and the flow."""
    if reused:
        return f"general items: {ref} unchanged (same inputs as when it was built): reused"
    return f"general items: {ref} built (because: {built_because})"


def measured_judge(config: PipelineConfig) -> JudgeEval | None:
    """The evaluation of the judge this run's general stage would train on: the user's judge's, when one
    is set and was measured at that URL (`general_tasks` measures it), else the run's own judge's (when it
    exists); None when that judge has not been measured yet."""
    if user := user_judge(config):
        path = genrm_root(config) / EXTERNAL_EVAL
        saved = json.loads(path.read_text()) if path.is_file() else {}
        if (saved.get("url"), saved.get("model")) != user:
            return None
        return JudgeEval.from_dict(saved["eval"])
    if config.genrm.judges > 1:
        return kept_ensemble_eval(config)
    meta = judge_dir(config) / "training.json"
    if not meta.is_file():
        return None
    summary = json.loads(meta.read_text()).get("judge", {})
    return JudgeEval.from_dict(summary["eval"]) if "eval" in summary else None


def judge_gate(config: PipelineConfig, verifier: str = "genrm") -> str | None:
    """Why the run's judge (its own, or the user's at ``M1_GENRM_URL``) must not score training as
    ``verifier`` (the curriculum's verifier of the general domain: `genrm-grade` is judged on its five-grade
    measures, `genrm`/`genrm-pair` on its pairwise ones): on the balanced measures of its held-out
    evaluation it does not beat the trivial judges by ``genrm.gate_margin`` (`JudgeEval.gate`). None: the
    gate off (genrm.gate), the judge not measured yet (before the general-task flow ran), or a judge that
    beats them."""
    if not config.genrm.gate:
        return None
    result = measured_judge(config)
    kind = evaluate.KINDS.get(verifier, "both")
    return result.gate(config.genrm.gate_margin, kind) if result is not None else None


def heldout_rows(g: GenRMConfig) -> list[dict[str, Any]]:
    """The held-out labelled responses a judge at another endpoint is measured on: the same prompts the
    run's own judge is measured on (`train_judge.datasets`)."""
    return [x.as_row() for x in train.datasets(g)[1]]


def measure_user_judge(config: PipelineConfig, url: str, model: str) -> JudgeEval:
    """`m1 genrm eval`'s measurement of the judge at ``url`` on the held-out labels, kept beside the run's
    own judge (``genrm/external-eval.json``) for `judge_gate`."""
    g = config.genrm
    try:
        result = evaluate.evaluate_judge(url, heldout_rows(g), model=model, k=g.k, seed=g.seed)
    except EndpointError as exc:  # every judgment failed: a wrong URL, a dead server
        raise InputError(f"the judge at M1_GENRM_URL={url}: {exc}") from None
    path = genrm_root(config) / EXTERNAL_EVAL
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"url": url, "model": model, "eval": asdict(result)}, indent=1))
    return result


def measure_ensemble(config: PipelineConfig) -> JudgeEval:
    """The run's ensemble measured as one judge, on the held-out labels its judges are measured on, through
    their servers (`m1 genrm eval`'s code); kept beside them (``genrm/ensemble-eval.json``, with what each
    judge was trained from) and reused while they are the same."""
    if (kept := kept_ensemble_eval(config)) is not None:
        return kept
    g = config.genrm
    with served_judge(judge_dirs(config), export_env=False) as url:
        result = evaluate.evaluate_judge(
            url,
            heldout_rows(g),
            model=MODEL_NAME,
            k=g.k,
            seed=g.seed,
            max_tokens=g.judge_max_tokens,
            pair_method=g.pair_method,
            grade_views=g.grade_views,
        )
    record = {"members": member_hashes(config), "eval": asdict(result)}
    atomic_write_text(genrm_root(config) / ENSEMBLE_EVAL, json.dumps(record, indent=1))
    return result


def kept_ensemble_eval(config: PipelineConfig) -> JudgeEval | None:
    """The ensemble's kept measurement (``genrm/ensemble-eval.json``) while its judges are the ones it was
    taken of; else None."""
    path = genrm_root(config) / ENSEMBLE_EVAL
    saved = json.loads(path.read_text()) if path.is_file() else {}
    return JudgeEval.from_dict(saved["eval"]) if saved.get("members") == member_hashes(config) else None


def _progress(total: int) -> Callable[[dict[str, float]], None]:
    report = prefect_progress("judge SFT steps done", every=max(1, total // 20))
    return lambda m: report(m["step"], total)


@flow(name="genrm-general", flow_run_name="{config.name}-general", log_prints=True)
def general_tasks(config: PipelineConfig = DEFAULT_CONFIG) -> dict[str, Any]:
    """Write `{run}-general`; train (or reuse) the run's judge, or measure the user's at ``M1_GENRM_URL``;
    publish its evaluation and whether it passes the gate."""
    logger = get_run_logger()
    g = config.genrm
    if not g.enabled:
        logger.info("genrm.enabled is false: no general data, no judge")
        return {"enabled": False}
    use_threads(config.train)
    had = general_reusable(config)
    general = write_general(config)
    built_because = general_built_because(config, general)
    logger.info(general_items_line(general, had, built_because))
    if user := user_judge(config):
        where, trained = f"{user[1]} at {user[0]} (M1_GENRM_URL)", False
        result = measure_user_judge(config, *user)
        logger.info("judge %s: measured on the held-out labels", where)
    else:
        folder = judge_dir(config)
        progress = _progress(g.judge_steps * g.judges)
        ahead = wait_for_judge(folder, progress)  # `m1 run` trains it from the start (flows/genrm/ahead.py)
        if ahead is False:
            logger.warning("judge: its training beside the run failed; training it now")
        summaries, trained = ensure_judges(config, on_step=progress)
        if ahead:
            trained, how = True, "trained beside the run's first flows"
        else:
            how = "trained" if trained else "reused (same inputs)"
        where = f"`{folder}`"
        if g.judges > 1:
            where = f"ensemble of {g.judges} judges, " + ", ".join(f"`{f}`" for f in judge_dirs(config))
        logger.info("judge %s: %s", how, where.replace("`", ""))
        # one judge: measured through its server when it was trained; an ensemble: through theirs, now
        result = JudgeEval.from_dict(summaries[0]["eval"]) if g.judges == 1 else measure_ensemble(config)

    png = plot_eval(result, genrm_root(config) / "eval.png", f"{config.name}: judge on held-out prompts")
    create_table_artifact(
        result.table(), key=artifact_key(config.name, "genrm-eval"), description="judge evaluation"
    )
    verdicts = result.verdicts(g.gate_margin) if g.gate else {}
    markdown = eval_markdown(result, png, where) + gate_markdown(verdicts, g.gate_margin)
    for verifier, why in verdicts.items():  # which one applies is the curriculum's (the plan warns)
        logger.info(
            "as %s the judge is %s", verifier, f"not fit to train on: {why}" if why else "fit to train on"
        )
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
        "reused": had,  # the dataset; the judge's own state is `trained`
        "report": "# Generative reward model\n\n" + markdown,
        "judge": user[0] if user else str(judge_dir(config)),
        "trained": trained,
        "eval": result.table(),
        "plot": str(png),
        "verdicts": verdicts,  # verifier -> why it is not fit to train on, None when it is
    }


def gate_markdown(verdicts: dict[str, str | None], margin: float) -> str:
    """Whether the judge is fit to train on as each verifier; the curriculum's verifier of the general
    domain says which applies (the run report's notes say what was trained)."""
    if not verdicts:
        return "\n**The gate is off** (`genrm.gate = false`): a curriculum trains on this judge as it is.\n"
    lines = [
        f"- as `{v}`: "
        + (
            f"**not fit to train on**: {why}"
            if why
            else f"fit to train on (>= {margin:.2f} above every trivial judge)"
        )
        for v, why in verdicts.items()
    ]
    return (
        "\nBalanced accuracy against the trivial judges (`genrm.gate_margin`), for each way a curriculum can "
        "score its `general` domain with it:\n\n" + "\n".join(lines) + "\n"
    )


def _ref(ref: str) -> tuple[str, int]:
    name, version = ref.rsplit("@v", 1)
    return name, int(version)


def eval_markdown(result, png: Path, where: str) -> str:
    """The judge's evaluation as a report section: what the judge is (``where``: its folder, or the user's
    endpoint), never whether this run trained it (an unchanged rerun writes the same report; the log says
    it was reused)."""
    rows = "\n".join(
        f"| {r['metric']} | {r['value']} | {'' if r['baseline'] is None else r['baseline']} | {r['note']} |"
        for r in result.table()
    )
    return (
        f"## Judge {where}\n\n"
        "| metric | value | baseline | note |\n|---|---|---|---|\n"
        f"{rows}\n\n{embed_png(png, 'judge evaluation')}\n"
    )
