"""Serving a judge checkpoint for as long as something needs it (a training stage, an evaluation).

`served_judge` starts `m1 serve model` in a child process on a free loopback port, waits for /health, and
stops it on exit (flows/servers.py); the judge runs on its own core instead of competing with training.
With ``export_env`` it also sets ``M1_GENRM_URL`` (and ``M1_GENRM_MODEL``) for the duration, which is
where the `genrm` verifiers look when a curriculum names them without options.

Not a flow: how the stage and evaluation flows get their judge for as long as they run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from flows.errors import InputError
from flows.genrm.files import SERVED_JUDGE_ENV, judge_dirs
from flows.servers import m1_servers

MODEL_NAME = "judge"
# Inside `run_judge`: starts the run's judge on first use (a rerun whose stages and evaluations are all
# reused starts none), then keeps it for everything else inside.
_SHARED: list[Callable[[], None]] = []


@contextmanager
def served_judge(
    checkpoint: str | Path | Sequence[str | Path],
    *,
    port: int = 0,
    threads: int = 1,
    export_env: bool = True,
    max_tokens: int | None = None,
    pair_method: str | None = None,
    grade_views: str | None = None,
    startup_timeout_s: float = 180.0,
) -> Iterator[str]:
    """Yields the judge's base URL (``http://127.0.0.1:PORT/v1``) while `m1 serve model` serves it; for
    several checkpoints (an ensemble) one server each, started at once, each on its own core where there
    is one, and their URLs comma-separated, which the `genrm` verifiers ask all of
    (verifiers/genrm/calls.py). ``max_tokens``, ``pair_method`` and ``grade_views`` (how this judge was
    trained to judge a pair and a grade) are exported with the URL (``M1_GENRM_MAX_TOKENS``,
    ``M1_GENRM_PAIR_METHOD``, ``M1_GENRM_GRADE_VIEWS``) when given."""
    checkpoints = [checkpoint] if isinstance(checkpoint, str | Path) else list(checkpoint)
    for folder in checkpoints:
        if not (Path(folder) / "config.json").is_file():
            raise InputError(f"{folder}: not a judge checkpoint (no config.json); run `m1 genrm train-judge`")
    args = ["serve", "model", "--model-name", MODEL_NAME, "--threads", str(threads), "--log-level", "warning"]
    ports = [port + i if port else 0 for i in range(len(checkpoints))]
    each = [[*args, "--checkpoint", str(folder)] for folder in checkpoints]
    with m1_servers(each, name="judge server", ports=ports, timeout_s=startup_timeout_s) as bases:
        urls = [f"{base}/v1" for base in bases]
        exported = {
            "M1_GENRM_URL": ",".join(urls),
            "M1_GENRM_MODEL": MODEL_NAME,
            SERVED_JUDGE_ENV: str(Path(checkpoints[0]).resolve()),
        }
        if max_tokens is not None:
            exported["M1_GENRM_MAX_TOKENS"] = str(max_tokens)
        if pair_method is not None:
            exported["M1_GENRM_PAIR_METHOD"] = pair_method
        if grade_views is not None:
            exported["M1_GENRM_GRADE_VIEWS"] = grade_views
        saved = {k: os.environ.get(k) for k in exported}
        try:
            if export_env:
                os.environ.update(exported)
            yield exported["M1_GENRM_URL"]
        finally:
            if export_env:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value


@contextmanager
def judge_for(config, verifier_names) -> Iterator[dict[str, dict]]:
    """Options for the generative judges among ``verifier_names`` (a stage's or an evaluation's), valid
    while the context lasts: a judge the user points at (``M1_GENRM_URL``) as it is, else the run's own
    judge (`m1 run` trains it; `m1 genrm train-judge`) served on a loopback port for the duration."""
    judged = sorted({n for n in verifier_names if n.startswith("genrm")})
    if not judged:
        yield {}
        return
    share_judge()
    g = config.genrm
    options = {"k": g.k, "constraint_weight": g.constraint_weight, "grade_score": g.grade_score}
    if os.environ.get("M1_GENRM_URL"):
        yield {name: options for name in judged}
        return
    folders = judge_dirs(config)
    if not all((folder / "config.json").is_file() for folder in folders):
        raise InputError(
            f"verifier(s) {', '.join(judged)} need a judge: this run has none at {folders[0]} (`m1 run` with "
            "genrm.enabled trains it, or `m1 genrm train-judge`), and M1_GENRM_URL is not set"
        )
    own = {
        "model": MODEL_NAME,
        "max_tokens": config.genrm.judge_max_tokens,
        "pair_method": config.genrm.pair_method,
        "grade_views": config.genrm.grade_views,
    }
    with served_judge(folders, port=config.genrm.port, export_env=False) as url:
        yield {name: options | own | {"url": url} for name in judged}


def share_judge() -> None:
    """Inside `run_judge`: start the run's judge now if it is not up yet (it is exported from then on, also
    to child processes such as a stage's torchrun ranks)."""
    if _SHARED:
        _SHARED[-1]()


@contextmanager
def run_judge(config) -> Iterator[None]:
    """The run's own judge served once, for everything inside (`m1 run`: the evaluations and every stage),
    instead of a server started by each stage and evaluation (seconds each); `judge_for` starts it on
    first use and finds it through the environment afterwards, so nothing starts when nothing inside is
    judged (every stage and evaluation reused). Nothing happens when genrm is off, the run has no judge,
    or ``M1_GENRM_URL`` is set."""
    folders = judge_dirs(config)
    if (
        not config.genrm.enabled
        or os.environ.get("M1_GENRM_URL")
        or not all((folder / "config.json").is_file() for folder in folders)
    ):
        yield
        return
    with ExitStack() as stack:
        started: list[bool] = []

        def start() -> None:
            if not started:
                stack.enter_context(
                    served_judge(
                        folders,
                        port=config.genrm.port,
                        max_tokens=config.genrm.judge_max_tokens,
                        pair_method=config.genrm.pair_method,
                        grade_views=config.genrm.grade_views,
                    )
                )
                started.append(True)

        _SHARED.append(start)
        try:
            yield
        finally:
            _SHARED.remove(start)
