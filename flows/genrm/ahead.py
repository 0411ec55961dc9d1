"""The run's judge trained ahead (`m1 run`): the judge depends on nothing the DAG builds (its labelled
responses come from its own seeds), so it trains in a child process from the start of the run, on the
core that curation, the task producers and the SFT warm start leave idle, and `general_tasks` (after the
warm start) waits for it instead of training it then. One implementation: the child runs `ensure_judges`, the same cached training, into the
same folders (each judge of an ensemble in turn).

The child dies with the run (PR_SET_PDEATHSIG; terminated when the run stops early, Ctrl-C included) and
never writes where the run reads: `general_tasks` looks at the folder only after the child has exited.
When the child fails, `general_tasks` trains the judge itself, which raises the same error in the run,
with the run's own message.

Not a flow: how the pipeline buys the judge's training time back.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.config import PipelineConfig
from flows.genrm.files import judge_dir, user_judge
from flows.genrm.judge_cache import ensure_judges, judge_is_current
from flows.model_settings import use_threads

_AHEAD: dict[Path, _Child] = {}  # the judge folder -> the child training it


@dataclass
class _Child:
    process: Any  # multiprocessing's SpawnProcess
    step: Any  # a shared int: the child's last SFT step


def _train(config_json: str, step) -> None:
    """The child: `ensure_judges` as `general_tasks` would call it, reporting each SFT step."""
    # heavy: torch (the judge's training), in the child alone
    from m1model.rl.distributed import die_with_parent

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's: it stops this child on its way out
    config = PipelineConfig.model_validate_json(config_json)
    use_threads(config.train)  # as general_tasks does

    def on_step(metrics: dict[str, float]) -> None:
        step.value = int(metrics["step"])

    try:
        ensure_judges(config, on_step)
    except Exception:  # quietly: `general_tasks` trains it again and raises the error the run's way
        sys.exit(1)


def wanted(config: PipelineConfig) -> bool:
    """Whether the run trains its own judge and it is not trained from these inputs yet; a judge started
    from another checkpoint (`genrm.judge_init`, the run's SFT policy, say) may depend on the DAG."""
    g = config.genrm
    return g.enabled and not g.judge_init and user_judge(config) is None and not judge_is_current(config)


@contextmanager
def judge_ahead(config: PipelineConfig) -> Iterator[None]:
    """Train the run's judge in a child process while the body runs (when `wanted`); stops it on the way
    out if it is still running (the run ended early)."""
    if not wanted(config):
        yield
        return
    folder = judge_dir(config).resolve()
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads or locks of this one
    step = ctx.Value("i", 0)
    process = ctx.Process(
        target=_train,
        args=(config.model_dump_json(), step),
        name="m1-judge-ahead",
        daemon=True,
    )
    process.start()
    _AHEAD[folder] = _Child(process, step)
    try:
        yield
    finally:
        _AHEAD.pop(folder, None)
        if process.is_alive():
            process.terminate()
        process.join(timeout=30)


def wait_for_judge(folder: Path, on_step: Callable[[dict[str, float]], None] | None = None) -> bool | None:
    """Wait for the judge training ahead into ``folder``, relaying its SFT steps; whether it succeeded
    (None: none was training ahead)."""
    child = _AHEAD.pop(Path(folder).resolve(), None)
    if child is None:
        return None
    last = 0
    while child.process.is_alive():
        child.process.join(timeout=0.5)
        if on_step is not None and (now := child.step.value) > last:
            last = now
            on_step({"step": float(now)})
    if on_step is not None and child.step.value > last:
        on_step({"step": float(child.step.value)})
    return child.process.exitcode == 0
