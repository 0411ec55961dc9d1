"""The judge tools' files: the labels and candidates they read (JSONL), the evaluation's plot.

Not a flow: `m1 genrm eval`, `m1 genrm swiss` and the general-task flow (flows/genrm/flow.py) share these,
and they live with the flows because a bad file is the user's mistake (an InputError: one line from the CLI)
and the plot is an artifact. What is computed from the files is library code: verifiers/genrm/evaluate.py
(`evaluate_judge`, `JudgeEval`) and verifiers/genrm/swiss.py (`run_swiss`). Where a run keeps its judge
(`judge_dir`, `judge_dirs` for an ensemble) is here too: the flow writes it, the judge's server (flows/genrm/serve.py) reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from flows.artifacts import save_png
from flows.config import PipelineConfig
from flows.errors import InputError
from flows.genrm.labels import LABEL_FIELDS
from flows.jsonl import read_jsonl
from flows.store import DatasetStore
from verifiers.genrm.evaluate import JudgeEval
from verifiers.genrm.swiss import Player, Tournament

# Set beside M1_GENRM_URL while the run's own judge is served (flows/genrm/serve.py): the URL is then the
# run's judge, which its gate still applies to, not one the user points at.
SERVED_JUDGE_ENV = "M1_GENRM_SERVED_CHECKPOINT"


def genrm_root(config: PipelineConfig) -> Path:
    return DatasetStore(config.home).root / "runs" / config.name / "genrm"


def judge_dir(config: PipelineConfig) -> Path:
    """The run's judge (the first of its ensemble, `judge_dirs`)."""
    return genrm_root(config) / "judge"


def judge_dirs(config: PipelineConfig) -> list[Path]:
    """The run's judges, one folder each: ``judge/`` (the one judge of the default), then ``judge-1/``,
    ``judge-2/``... for an ensemble (`genrm.judges`); judge i trains from `GenRMConfig.member(i)`."""
    return [judge_dir(config)] + [genrm_root(config) / f"judge-{i}" for i in range(1, config.genrm.judges)]


def member_hashes(config: PipelineConfig) -> list[str | None]:
    """What each of the run's judges was trained from, as its training.json records it (None: untrained);
    the ensemble's identity."""
    out = []
    for folder in judge_dirs(config):
        meta = folder / "training.json"
        out.append(
            json.loads(meta.read_text()).get("judge", {}).get("inputs_hash") if meta.is_file() else None
        )
    return out


def user_judge(config: PipelineConfig) -> tuple[str, str] | None:
    """(url, model) of a judge the user points at (``M1_GENRM_URL``, ``M1_GENRM_MODEL``), or None when
    none is set or the URL is this run's own judge, served by `served_judge`."""
    url = os.environ.get("M1_GENRM_URL")
    if not url or os.environ.get(SERVED_JUDGE_ENV) == str(judge_dir(config).resolve()):
        return None
    return url, os.environ.get("M1_GENRM_MODEL") or "default"


def read_labels(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, rejected rows with a ``reason``) of a labels file; an unreadable file is an InputError."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: labels file not found")
    rows, bad = [], []
    for line in read_jsonl(path):
        n, row = line.number, line.value
        if line.error is not None:
            bad.append({"line": n, "reason": f"not JSON: {line.reason}"})
            continue
        missing = [k for k in LABEL_FIELDS if not isinstance(row, dict) or k not in row]
        if missing:
            bad.append({"line": n, "reason": f"missing {', '.join(missing)}"})
        elif not isinstance(row["grade"], int) or not 1 <= row["grade"] <= 5:
            bad.append({"line": n, "reason": f"grade {row['grade']!r} is not an integer 1-5"})
        else:
            rows.append(row)
    if not rows:
        raise InputError(f"{path}: no usable labelled rows ({len(bad)} rejected)")
    return rows, bad


def read_candidates(path: str | Path) -> list[Tournament]:
    """JSONL: ``{"id"?, "prompt", "candidates": [text, ...]}`` per line (at least two candidates)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: candidates file not found")
    out = []
    for line in read_jsonl(path):
        n, row = line.number, line.value
        if line.error is not None:
            raise InputError(f"{path}:{n}: not JSON ({line.reason})")
        cands = row.get("candidates") if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise InputError(f'{path}:{n}: expected {{"prompt": ..., "candidates": [...]}}')
        if not isinstance(cands, list) or len(cands) < 2 or not all(isinstance(c, str) for c in cands):
            raise InputError(f"{path}:{n}: `candidates` must be a list of at least two strings")
        players = [Player(i, c) for i, c in enumerate(cands)]
        out.append(Tournament(str(row.get("id", n)), row["prompt"], players))
    if not out:
        raise InputError(f"{path}: no prompts")
    return out


def plot_eval(result: JudgeEval, path: str | Path, title: str = "judge evaluation") -> Path:
    """Best-of-N vs pass@N vs random (left) and the grade confusion matrix (right), as a PNG."""
    import matplotlib  # heavy: imported only when a plot is drawn

    matplotlib.use("Agg")
    # heavy: matplotlib
    import matplotlib.pyplot as plt

    fig, (ax, cm) = plt.subplots(1, 2, figsize=(10, 3.8))
    ns = [b["n"] for b in result.best_of_n]
    for key, label, style in (
        ("pass", "pass@N (ceiling)", "--"),
        ("judge", "judge's Best-of-N", "-"),
        ("random", "random pick (floor)", ":"),
    ):
        ax.plot(ns, [b[key] for b in result.best_of_n], style, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("N responses per prompt")
    ax.set_ylabel("accuracy of the chosen response")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("Best-of-N", fontsize=10)
    cols = ["1", "2", "3", "4", "5", "fail"]
    grades = sorted(result.confusion)
    matrix = np.array([[result.confusion[t].get(c, 0) for c in cols] for t in grades])
    cm.imshow(matrix, cmap="Blues")
    for i in range(len(grades)):
        for j in range(len(cols)):
            cm.text(j, i, str(matrix[i, j]), ha="center", va="center", fontsize=8)
    cm.set_xticks(range(len(cols)), cols)
    cm.set_yticks(range(len(grades)), [str(g) for g in grades])
    cm.set_xlabel("judge's grade")
    cm.set_ylabel("true grade")
    cm.set_title(
        f"grades: accuracy {result.accuracy:.2f} (majority {result.majority_baseline:.2f})", fontsize=10
    )
    fig.suptitle(title)
    fig.tight_layout()
    return save_png(fig, path, dpi=100)
