"""The one fake Docker client of the tests: what the project asks of docker-py's `DockerClient`
(``containers.create/run/list``, ``images.get/build``, ``ping``), recorded, with its answers set by the
test. A container "runs" as the process sandbox's wrapper would: it reads its stdin file and writes the
usage report (sandboxes/container.py). ``FakeDocker(refuse=True)`` fails the test at the first use, for
paths that must be decided before the engine is needed.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker

from sandboxes import container


class FakeResponse:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.reason = "fake"
        self.url = "http://engine"


def api_error(status: int, cls=docker.errors.APIError):
    """An engine error with an HTTP status, as docker-py raises them."""
    return cls(f"status {status}", response=FakeResponse(status))


class FakeContainer:
    """One container as docker-py returns it; the client's attributes say what the "program" does."""

    def __init__(self, client: FakeDocker, image, command, kwargs) -> None:
        self.client = client
        self.id = f"c{len(client.created)}"
        self.image, self.command, self.kwargs = image, command, kwargs
        self.calls: list[tuple] = []
        self.attrs = {"State": {"OOMKilled": client.oom_killed}}
        self.labels = kwargs.get("labels", {})
        self.stdin_seen: bytes | None = None
        self.live_at_start = False

    # the host paths of the container's mounts
    def host(self, inside: str) -> Path:
        for host, spec in self.kwargs["volumes"].items():
            if inside.startswith(spec["bind"] + "/"):
                return Path(host) / inside[len(spec["bind"]) + 1 :]
        raise AssertionError(f"{inside} is not on a mount")

    def attach(self, **kw):
        self.calls.append(("attach", kw))
        return iter(self.client.chunks)

    def start(self):
        self.calls.append(("start",))
        self.live_at_start = container._live.get(self.id) is self
        shell = self.command[self.command.index("-c") + 1]
        stdin_inside = shell.rsplit("< ", 1)[1]
        self.stdin_seen = self.host(stdin_inside).read_bytes()
        if self.client.report is not None:
            report_inside = self.command[self.command.index("-o") + 1]
            report = self.client.report
            self.host(report_inside).write_bytes(report if isinstance(report, bytes) else report.encode())

    def wait(self, timeout=None):
        self.calls.append(("wait", timeout))
        if self.client.wait_errors:
            raise self.client.wait_errors.pop(0)
        return {"StatusCode": 0}

    def reload(self):
        self.calls.append(("reload",))
        if self.client.reload_error:
            raise self.client.reload_error

    def kill(self):
        self.calls.append(("kill",))
        if self.client.kill_error:
            raise self.client.kill_error

    def remove(self, force=False):
        self.calls.append(("remove", force))
        if self.client.remove_error:
            raise self.client.remove_error


class FakeContainers:
    def __init__(self, client: FakeDocker) -> None:
        self.client = client

    def create(self, image, command, **kwargs):
        if self.client.create_error:
            raise self.client.create_error
        c = FakeContainer(self.client, image, command, kwargs)
        self.client.created.append(c)
        return c

    def run(self, image, command, **kwargs):
        self.client.ran.append((image, command, kwargs))
        return self.client.run_output

    def list(self, **kwargs):
        self.client.listed.append(kwargs)
        return self.client.listing


class FakeImage:
    def __init__(self, size: int) -> None:
        self.attrs = {"Size": size}


class FakeImages:
    def __init__(self, client: FakeDocker) -> None:
        self.client = client

    def get(self, tag):
        self.client.got.append(tag)
        if tag not in self.client.have:
            raise docker.errors.ImageNotFound(tag)
        return FakeImage(self.client.have[tag])

    def build(self, **kw):
        """Records (the build's arguments, its context's files by name, the tar members); the image then
        exists with the size `size_of(tag)` gives."""
        fileobj = kw.pop("fileobj")
        with tarfile.open(fileobj=fileobj) as tar:
            members = {m.name: m for m in tar.getmembers()}
            files = {n: tar.extractfile(m).read() for n, m in members.items() if m.isfile()}
        self.client.builds.append((kw, files, members))
        if self.client.build_error:
            raise self.client.build_error
        self.client.have[kw["tag"]] = self.client.size_of(kw["tag"])
        return FakeImage(0), []


class FakeDocker:
    """Attributes the test may set (keywords of the constructor): ``chunks`` (the attached output),
    ``report`` (the usage report a container writes; None: none), ``wait_errors``, ``oom_killed``,
    ``create_error``, ``reload_error``, ``kill_error``, ``remove_error``, ``run_output`` (what
    ``containers.run`` returns), ``listing`` (what ``containers.list`` returns), ``have`` (image tag ->
    size), ``size_of`` (the size of a built image, by tag), ``build_error``, ``ping_error``. What it was
    asked: ``created``, ``ran``, ``listed``, ``got``, ``builds``, ``pings``."""

    def __init__(self, *, refuse: bool = False, **kw: Any) -> None:
        self.refuse = refuse
        self.created: list[FakeContainer] = []
        self.ran: list[tuple] = []
        self.listed: list[dict] = []
        self.listing: list = []
        self.chunks: list[tuple] = []
        self.report: str | bytes | None = "m1-usage 0 0.25 0.05 10240\n"
        self.wait_errors: list[Exception] = []
        self.oom_killed = False
        self.create_error = self.reload_error = self.kill_error = self.remove_error = None
        self.run_output = b""
        self.have: dict[str, int] = {}
        self.size_of: Callable[[str], int] = lambda tag: 0
        self.got: list[str] = []
        self.builds: list = []
        self.build_error: Exception | None = None
        self.pings = 0
        self.ping_error: Exception | None = None
        self._containers, self._images = FakeContainers(self), FakeImages(self)
        for k, v in kw.items():
            if not hasattr(self, k):
                raise TypeError(f"FakeDocker has no setting {k!r}")
            setattr(self, k, v)

    def _use(self, what: str) -> None:
        if self.refuse:
            raise AssertionError(f"the Docker engine was used (.{what})")

    @property
    def containers(self) -> FakeContainers:
        self._use("containers")
        return self._containers

    @property
    def images(self) -> FakeImages:
        self._use("images")
        return self._images

    def ping(self) -> bool:
        self._use("ping")
        self.pings += 1
        if self.ping_error:
            raise self.ping_error
        return True
