"""What the sandboxes need from the machine, declared once: for each prerequisite, how to tell whether this
machine has it and the one script that installs it.

Whoever runs code that needs a prerequisite declares it by name (each producer flow of `m1 run` has a
``PREREQUISITES`` tuple), so a run can check all of them before it starts: on a bare machine `m1 run` fails
in its first seconds with the command that installs what is missing, never minutes into the run
(flows/prerequisites.py). The code paths that need one report each use (sandboxes/needs.py: `use`, and
`watch`, which collects those reports and is how the tests hold every producer to its declaration).

A check is a real trial, not a look along PATH: the process sandbox runs ``python3 -c 'import pytest'``
(bubblewrap, prlimit, GNU time, user namespaces, python3 and pytest at once), the Docker check pings the
engine and looks for the base image or the debootstrap that builds it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sandboxes.needs import DOCKER_ENGINE, PROCESS_SANDBOX


@dataclass(frozen=True)
class Prerequisite:
    name: str
    what: str  # for people: "the process sandbox (bubblewrap, ...)"
    script: str  # installs it, idempotent; relative to the checkout
    probe: Callable[[], str | None]  # why this machine lacks it, or None when it is there

    @property
    def command(self) -> str:
        return f"bash {self.script}"


def _process_sandbox() -> str | None:
    from sandboxes.base import SandboxUnavailable
    from sandboxes.limits import Limits
    from sandboxes.process import ProcessSandbox

    try:
        sandbox = ProcessSandbox()  # not get_sandbox: a check is not a use
    except SandboxUnavailable as exc:
        return (
            str(exc).split(":")[0].removeprefix("process sandbox ")
        )  # "needs bwrap"; the fix is ours to say
    run = sandbox.run(["python3", "-c", "import pytest"], limits=Limits(cpu_s=10, wall_s=30))
    if run.ok:
        return None
    said = (run.stderr or run.stdout).decode(errors="replace").strip().splitlines()
    return f"a trial run of `python3 -c 'import pytest'` in it ended {run.status}" + (
        f" ({said[-1][:200]})" if said else ""
    )


def _docker_engine() -> str | None:
    from sandboxes.base import SandboxUnavailable
    from sandboxes.container import connect
    from sandboxes.images import image_tag

    try:
        client = connect()
    except SandboxUnavailable as exc:
        return str(exc).split("; start it")[0]
    except ImportError:
        return "the docker SDK is not installed (pip install 'm1-pipeline[swe]')"
    import docker.errors

    try:
        client.images.get(image_tag())
        return None
    except docker.errors.ImageNotFound:
        if shutil.which("debootstrap") is None:
            return (
                f"the sandbox image {image_tag()} is not built and debootstrap, which builds it, is missing"
            )
        return None  # built on first use, offline, in a few minutes
    finally:
        client.close()


PREREQUISITES: dict[str, Prerequisite] = {
    p.name: p
    for p in (
        Prerequisite(
            PROCESS_SANDBOX,
            "the process sandbox (bubblewrap, prlimit, GNU time, user namespaces; python3 with pytest)",
            "scripts/sandbox-tools.sh",
            _process_sandbox,
        ),
        Prerequisite(
            DOCKER_ENGINE,
            "the Docker engine (a running dockerd and the sandbox base image)",
            "scripts/docker-engine.sh",
            _docker_engine,
        ),
    )
}


def get(name: str) -> Prerequisite:
    try:
        return PREREQUISITES[name]
    except KeyError:
        raise KeyError(f"unknown prerequisite {name!r} (known: {', '.join(PREREQUISITES)})") from None


def missing(names: Iterable[str]) -> dict[str, str]:
    """Each prerequisite this machine lacks, with why (each checked once, in the order given)."""
    found: dict[str, str] = {}
    for name in dict.fromkeys(names):
        if (why := get(name).probe()) is not None:
            found[name] = why
    return found


def install_command(names: Iterable[str]) -> str:
    """The one command line that installs these prerequisites."""
    return " && ".join(get(name).command for name in dict.fromkeys(names))
