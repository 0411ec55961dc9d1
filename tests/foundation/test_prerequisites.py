"""What `m1 run` needs from the machine: checked before the first subflow, exactly what the subflows use,
and what `make run` installs (flows/prerequisites.py, sandboxes/prerequisites.py)."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sandboxes
from flows.config import PipelineConfig
from flows.datasets import KIND_SECTIONS, PRODUCERS, producer
from flows.prerequisites import PrerequisitesMissing, declared, needed
from sandboxes import needs, prerequisites
from sandboxes.prerequisites import DOCKER_ENGINE, PREREQUISITES, PROCESS_SANDBOX

ROOT = Path(__file__).resolve().parents[2]
BOTH = "bash scripts/sandbox-tools.sh && bash scripts/docker-engine.sh"


@pytest.fixture
def bare_machine(monkeypatch, tmp_path):
    """This machine as a fresh one: no bubblewrap or prlimit on PATH, no Docker engine to talk to."""
    real_which = shutil.which
    monkeypatch.setattr(
        shutil,
        "which",
        lambda cmd, *a, **k: None if cmd in ("bwrap", "prlimit") else real_which(cmd, *a, **k),
    )
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.setattr(sandboxes, "_cache", {})  # a sandbox built earlier in this process is not reused


# Small enough for a test to run each producer's flow in seconds.
TINY = {
    "logic": {"n_items": 12},
    "code": {"n_problems": 4, "tests_per_problem": 2},
    "genrm": {"general_items": 24, "train_prompts": 8, "eval_prompts": 4, "judge_steps": 5},
}


def only(kind: str | None) -> PipelineConfig:
    """A tiny config whose only producer is `kind` (None: no producer at all)."""
    data: dict = {"name": "pre"}
    for k, section in KIND_SECTIONS.items():
        data[section] = TINY.get(section, {}) | {"enabled": k == kind}
    return PipelineConfig.model_validate(data)


def test_every_producer_declares_known_prerequisites():
    assert {kind: declared(kind) for kind in PRODUCERS} == {
        "synlogic": (),
        "code": (PROCESS_SANDBOX,),
        "swe": (DOCKER_ENGINE,),
        "general": (),
    }


def test_a_producer_without_a_declaration_is_a_bug_the_preflight_names(monkeypatch):
    module = importlib.import_module(PRODUCERS["synlogic"].split(":")[0])
    monkeypatch.delattr(module, "PREREQUISITES")
    with pytest.raises(TypeError, match=r"flows\.tasks\.logic must declare PREREQUISITES"):
        needed(only("synlogic"))
    monkeypatch.setattr(module, "PREREQUISITES", ("bubblewrap",), raising=False)
    with pytest.raises(KeyError, match="unknown prerequisite 'bubblewrap'"):
        needed(only("synlogic"))


@pytest.mark.parametrize(
    ("kind", "checked"),
    [(None, set()), ("synlogic", set()), ("code", {PROCESS_SANDBOX}), ("swe", {DOCKER_ENGINE})],
)
def test_the_preflight_checks_exactly_what_the_switched_on_producers_declare(monkeypatch, kind, checked):
    from flows.pipeline import preflight

    asked: list[str] = []
    monkeypatch.setattr(prerequisites, "missing", lambda names: asked.extend(names) or {})
    preflight(only(kind))
    assert set(asked) == checked
    asked.clear()
    preflight(PipelineConfig())  # the default DAG: every producer on
    assert set(asked) == {PROCESS_SANDBOX, DOCKER_ENGINE}


def test_a_bare_machine_fails_the_preflight_naming_everything_and_one_command(bare_machine):
    from flows.pipeline import preflight

    start = time.monotonic()
    with pytest.raises(PrerequisitesMissing) as err:
        preflight(PipelineConfig())
    assert time.monotonic() - start < 30  # seconds, not minutes (the limit allows for a loaded machine)
    message = str(err.value)
    assert "\n" not in message
    assert "the process sandbox (bubblewrap, prlimit" in message and "for the code tasks: " in message
    assert "for the code tasks: needs bwrap and prlimit;" in message
    assert (
        "the Docker engine (a running dockerd" in message
        and "for the swe tasks: Docker engine not reachable" in message
    )
    assert f"Install with `{BOTH}`" in message
    assert message.endswith("switch off what needs it: code.enabled=false, swe.enabled=false")


def test_only_what_is_missing_is_named(monkeypatch):
    from flows.pipeline import preflight

    monkeypatch.setitem(
        PREREQUISITES,
        DOCKER_ENGINE,
        PREREQUISITES[DOCKER_ENGINE].__class__(
            DOCKER_ENGINE, "the engine", "scripts/docker-engine.sh", lambda: "simulated"
        ),
    )
    monkeypatch.setitem(
        PREREQUISITES,
        PROCESS_SANDBOX,
        PREREQUISITES[PROCESS_SANDBOX].__class__(
            PROCESS_SANDBOX, "the sandbox", "scripts/sandbox-tools.sh", lambda: None
        ),
    )
    with pytest.raises(PrerequisitesMissing) as err:
        preflight(PipelineConfig())
    assert str(err.value) == (
        "missing on this machine: the engine for the swe tasks: simulated. Install with "
        "`bash scripts/docker-engine.sh` (`make run` does), or switch off what needs it: swe.enabled=false"
    )


def test_a_producer_run_alone_checks_its_own(bare_machine):
    """`m1 tasks code` and the SWE flow call their own preflight first."""
    from flows.swe.flow import preflight as swe_preflight
    from flows.tasks.code import preflight as code_preflight

    with pytest.raises(
        PrerequisitesMissing, match=r"process sandbox .*for the code tasks: .*`bash scripts/sandbox-tools.sh`"
    ):
        code_preflight(only("code"))
    with pytest.raises(
        PrerequisitesMissing, match=r"Docker engine .*for the swe tasks: .*`bash scripts/docker-engine.sh`"
    ):
        swe_preflight(only("swe"))


BARE_M1 = """
import shutil, sys
which = shutil.which
shutil.which = lambda cmd, *a, **k: None if cmd in ("bwrap", "prlimit") else which(cmd, *a, **k)
sys.argv = ["m1", "run"]
from flows.cli import main
main()
"""


def test_m1_run_on_a_bare_machine_exits_2_with_one_line_before_any_subflow(tmp_path, m1_home):
    env = os.environ | {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock", "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", BARE_M1], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    elapsed = time.monotonic() - start
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    (line,) = [x for x in done.stderr.splitlines() if x.strip()]
    assert line.startswith("error: missing on this machine: ") and BOTH in line
    assert not m1_home.exists() or not any(m1_home.iterdir())  # nothing written: no Prefect, no subflow
    assert elapsed < 120  # Python's start and imports on a loaded 2-core machine; no subflow ever starts


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(PRODUCERS))
def test_each_producer_on_a_bare_machine_fails_in_preflight_or_uses_nothing(
    bare_machine, prefect_harness, kind
):
    """What keeps a producer added later honest: run the DAG's start for it alone on a machine without any
    prerequisite. One that declares some must stop in the preflight; one that declares none must run to
    the end without any code path reporting a use (sandboxes.needs.use) of something undeclared."""
    from flows.pipeline import preflight

    config = only(kind)
    with needs.watch() as used:
        if declared(kind):
            with pytest.raises(PrerequisitesMissing):
                preflight(config)
        else:
            preflight(config)
            try:
                producer(kind)(config)
            finally:
                assert not used, (
                    f"{PRODUCERS[kind]} used {sorted(used)} without declaring it in PREREQUISITES"
                )
    assert not used


@pytest.mark.slow
def test_the_code_producer_uses_the_process_sandbox_it_declares(prefect_harness):
    """The other half of "exactly": a declared prerequisite is one the flow really uses."""
    if why := prerequisites.missing([PROCESS_SANDBOX]):
        pytest.skip(f"no process sandbox here: {why}")
    from flows.tasks.code import code_tasks

    with needs.watch() as used:
        code_tasks(only("code"))
    assert used == {PROCESS_SANDBOX}


def run_recipe() -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"run\s*:", line))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_run_installs_exactly_what_the_default_dag_checks_before_running_it():
    recipe = run_recipe()
    scripts = [m.group(1) for line in recipe if (m := re.fullmatch(r"bash (scripts/[\w.-]+\.sh)", line))]
    wanted = {PREREQUISITES[name].script for names in needed(PipelineConfig()).values() for name in names}
    assert set(scripts) == wanted and len(scripts) == len(wanted)
    assert all((ROOT / s).is_file() for s in scripts)
    assert recipe[-1] == "$(M1) run"  # after the installs


def test_every_prerequisite_a_sandbox_reports_is_declared_with_its_check():
    assert tuple(PREREQUISITES) == needs.NAMES and set(needs.BACKENDS.values()) <= set(PREREQUISITES)
