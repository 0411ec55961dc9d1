"""SWE task images in SWE-bench's three layers, built locally and offline, each tagged by a content hash.

- **base** (`m1-swe-base`): the sandbox's debootstrap image (python3 with venv, git, GNU time; see
  scripts/build-sandbox-image.sh) plus system-wide git settings for the unprivileged run user.
- **environment** (`m1-swe-env`): one per repository and dependency set: a venv at /opt/venv filled
  from a host-side wheelhouse (`pip download` on the host, `pip install --no-index` in the build), so
  no build step needs the network; builds run with network mode "none".
- **instance** (`m1-swe-instance`): the repository at the task's commit in /src as a one-commit git
  repository, with the test patch applied where the task has one. A run copies /src into a private
  tmpfs at /testbed (sandboxes/swe_run.py), so the image itself never changes.

A tag is a hash of everything that goes into its layer (the parent's tag, the requirements, the
repository's tree hash, the test patch, the Dockerfile), so an unchanged rebuild finds the image and
does nothing, and any change gets a new tag. Builds of one tag are serialised across processes by a
lock file; distinct images build concurrently up to `workers`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import platform
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes.images import ensure_image

BASE = "m1-swe-base"
ENVIRONMENT = "m1-swe-env"
INSTANCE = "m1-swe-instance"
LAYER_LABEL = "m1.swe.layer"
SRC = "/src"  # the instance's repository inside the image (read-only at run time)
TESTBED = "/testbed"  # where a run works on its own copy of it (tmpfs)
VENV = "/opt/venv"

_BASE_DOCKERFILE = f"""FROM {{parent}}
RUN git config --system user.name m1 && git config --system user.email m1@localhost \\
 && git config --system safe.directory '*' && git config --system init.defaultBranch main \\
 && git config --system advice.detachedHead false && mkdir -p {SRC} {TESTBED} && chmod 1777 {TESTBED}
# A fixed hash seed: test ids built from sets (parametrize) and set-order-dependent results repeat.
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1
LABEL {LAYER_LABEL}=base
"""

_ENV_DOCKERFILE = f"""FROM {{parent}}
COPY wheels /tmp/wheels
RUN python3 -m venv {VENV} \\
 && {VENV}/bin/pip install -q --no-index --find-links /tmp/wheels -r /tmp/wheels/requirements.txt \\
 && rm -rf /tmp/wheels
ENV PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin VIRTUAL_ENV={VENV}
LABEL {LAYER_LABEL}=environment m1.swe.repo={{repo}}
"""

_INSTANCE_DOCKERFILE = f"""FROM {{parent}}
ADD repo.tar {SRC}/
COPY test.patch /tmp/test.patch
RUN cd {SRC} && git init -q && git add -A -f && git commit -q --no-verify -m base \\
 && if [ -s /tmp/test.patch ]; then git apply /tmp/test.patch && git add -A -f \\
    && git commit -q --no-verify -m test_patch; fi \\
 && rm -f /tmp/test.patch && chmod -R a+rX {SRC}
ENV PYTHONPATH={{pythonpath}}
WORKDIR {TESTBED}
LABEL {LAYER_LABEL}=instance m1.swe.instance={{instance}}
"""


class SWEImageError(RuntimeError):
    """An image could not be built (a missing repository or commit, a failed pip download or build)."""


@dataclass(frozen=True)
class EnvSpec:
    """An environment: a repository's name and the pip requirements its tests need."""

    repo: str
    packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class InstanceSpec:
    """An instance: the repository (a git checkout on the host) at a commit, plus the test patch."""

    instance_id: str
    repo: str
    repo_dir: Path
    base_commit: str
    test_patch: str = ""
    packages: tuple[str, ...] = ()

    @property
    def env(self) -> EnvSpec:
        return EnvSpec(self.repo, self.packages)


@dataclass
class Built:
    """One image: its layer, tag, whether this call built it, how long that took, and its size."""

    layer: str
    name: str
    tag: str
    built: bool
    seconds: float
    size_mb: float
    layer_mb: float  # this layer alone (size minus the parent's)


def default_cache() -> Path:
    """Where sdists and wheelhouses are kept between runs: $M1_SWE_CACHE, else ~/.cache/m1/swe."""
    if os.environ.get("M1_SWE_CACHE"):
        return Path(os.environ["M1_SWE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "m1" / "swe"


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _slug(name: str) -> str:
    """A Docker tag component: lowercase letters, digits, '.', '_', '-' (at most 80 characters)."""
    return re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip(".-")[:80] or "x"


def git(repo_dir: Path, *args: str, input: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo_dir), *args], input=input, capture_output=True)
    if done.returncode != 0:
        raise SWEImageError(f"git {' '.join(args[:3])} in {repo_dir}: {done.stderr.decode().strip()[-500:]}")
    return done.stdout


def pythonpath(repo_dir: Path, commit: str) -> str:
    """/testbed/src for a src layout (a package under src/), else /testbed."""
    listing = git(repo_dir, "ls-tree", "-r", "--name-only", commit, "--", "src").decode().splitlines()
    has_src_package = any(re.fullmatch(r"src/[^/]+/__init__\.py", path) for path in listing)
    return f"{TESTBED}/src" if has_src_package else TESTBED


@contextlib.contextmanager
def _tag_lock(tag: str) -> Iterator[None]:
    name = hashlib.sha256(tag.encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"m1-swe-image-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _context(files: dict[str, bytes], dirs: dict[str, Path] | None = None) -> io.BytesIO:
    """A docker build context as an in-memory tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, path in (dirs or {}).items():
            tar.add(path, arcname=name)
    buf.seek(0)
    return buf


@dataclass
class SWEImages:
    """Builds (when missing) and names the three layers on one engine.

    `cache` keeps wheelhouses per environment; `workers` bounds concurrent builds in `ensure`."""

    client: object = None
    cache: Path = field(default_factory=default_cache)
    workers: int = 2
    _python: str | None = None
    _records: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.client is None:
            from sandboxes.container import engine

            self.client = engine()
        self.cache = Path(self.cache)

    # -- tags: content hashes, computed without building anything ------------------------------------

    def base_tag(self) -> str:
        parent = ensure_image(self.client, cpp=True)
        return f"{BASE}:{_digest(parent, _BASE_DOCKERFILE)}"

    def env_tag(self, spec: EnvSpec) -> str:
        packages = "\n".join(sorted(spec.packages))
        return f"{ENVIRONMENT}:{_slug(spec.repo)}-{_digest(self.base_tag(), spec.repo, packages, _ENV_DOCKERFILE)}"

    def instance_tag(self, spec: InstanceSpec) -> str:
        tree = git(spec.repo_dir, "rev-parse", f"{spec.base_commit}^{{tree}}").decode().strip()
        return f"{INSTANCE}:{_slug(spec.instance_id)}-" + _digest(
            self.env_tag(spec.env),
            tree,
            spec.test_patch,
            _INSTANCE_DOCKERFILE,
            pythonpath(spec.repo_dir, tree),
        )

    # -- the layers -------------------------------------------------------------------------------------

    def base(self) -> Built:
        parent = ensure_image(self.client, cpp=True)
        dockerfile = _BASE_DOCKERFILE.format(parent=parent)
        context = _context({"Dockerfile": dockerfile.encode()})
        return self._build("base", "base", self.base_tag(), parent, lambda: context)

    def environment(self, spec: EnvSpec) -> Built:
        parent = self.base().tag
        tag = self.env_tag(spec)

        def context() -> io.BytesIO:
            wheels = self.wheelhouse(spec.packages)
            dockerfile = _ENV_DOCKERFILE.format(parent=parent, repo=_slug(spec.repo))
            return _context({"Dockerfile": dockerfile.encode()}, {"wheels": wheels})

        return self._build("environment", spec.repo, tag, parent, context)

    def instance(self, spec: InstanceSpec) -> Built:
        if not (spec.repo_dir / ".git").exists():
            raise SWEImageError(f"{spec.instance_id}: {spec.repo_dir} is not a git repository")
        parent = self.environment(spec.env).tag
        tag = self.instance_tag(spec)

        def context() -> io.BytesIO:
            dockerfile = _INSTANCE_DOCKERFILE.format(
                parent=parent,
                pythonpath=pythonpath(spec.repo_dir, spec.base_commit),
                instance=_slug(spec.instance_id),
            )
            files = {
                "Dockerfile": dockerfile.encode(),
                "repo.tar": git(spec.repo_dir, "archive", "--format=tar", spec.base_commit),
                "test.patch": spec.test_patch.encode(),
            }
            return _context(files)

        return self._build("instance", spec.instance_id, tag, parent, context)

    def ensure(
        self, specs: Sequence[InstanceSpec], on_done: Callable[[Built], None] | None = None
    ) -> list[Built]:
        """Every image the instances need (base, environments, instances), building what is missing,
        `workers` at a time; returns them in that order, each layer's images once."""
        out: list[Built] = [self.base()]
        envs = list(dict.fromkeys(s.env for s in specs))
        with ThreadPoolExecutor(self.workers) as pool:
            for stage, items in (("environment", envs), ("instance", list(specs))):
                build = self.environment if stage == "environment" else self.instance
                for built in pool.map(build, items):
                    out.append(built)
                    if on_done:
                        on_done(built)
        return out

    def exists(self, tag: str) -> bool:
        import docker.errors

        try:
            self.client.images.get(tag)
            return True
        except docker.errors.ImageNotFound:
            return False

    # -- building -----------------------------------------------------------------------------------

    def _build(
        self, layer: str, name: str, tag: str, parent: str, context: Callable[[], io.BytesIO]
    ) -> Built:
        import docker.errors

        with _tag_lock(tag):
            start = time.monotonic()
            built = not self.exists(tag)
            if built:
                try:
                    self.client.images.build(
                        fileobj=context(),
                        custom_context=True,
                        tag=tag,
                        network_mode="none",  # nothing in a build reaches the network
                        rm=True,
                        forcerm=True,
                        pull=False,
                    )
                except docker.errors.BuildError as exc:
                    log = "".join(
                        str(chunk.get("stream") or chunk.get("error") or "") for chunk in exc.build_log
                    )
                    raise SWEImageError(f"building {tag} failed: {exc.msg}\n{log[-2000:]}") from None
                self._record(tag, time.monotonic() - start)
        seconds = time.monotonic() - start if built else self._recorded(tag)
        size = self.client.images.get(tag).attrs.get("Size", 0)
        parent_size = self.client.images.get(parent).attrs.get("Size", 0)
        return Built(layer, name, tag, built, seconds, size / 1e6, max(size - parent_size, 0) / 1e6)

    def _records_path(self) -> Path:
        return self.cache / "build-times.json"

    def _record(self, tag: str, seconds: float) -> None:
        """Remember how long a build took, so later tables can say it for cached images too."""
        path = self._records_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._records, open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            records = self._read_records()
            records[tag] = round(seconds, 3)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(records, indent=1, sort_keys=True))
            os.replace(tmp, path)

    def _read_records(self) -> dict[str, float]:
        try:
            return json.loads(self._records_path().read_text())
        except (OSError, ValueError):
            return {}

    def _recorded(self, tag: str) -> float:
        return float(self._read_records().get(tag, float("nan")))

    # -- the wheelhouse ------------------------------------------------------------------------------

    def python_version(self) -> str:
        """The base image's Python (major.minor): the wheels are chosen for it, not for the host."""
        if self._python is None:
            out = self.client.containers.run(
                ensure_image(self.client, cpp=True),
                ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                network_mode="none",
                remove=True,
            )
            self._python = out.decode().strip()
        return self._python

    def wheelhouse(self, packages: Sequence[str]) -> Path:
        """A folder of wheels for `packages` (and their dependencies) plus requirements.txt, downloaded
        once on the host with pip (its HTTP cache helps) and kept under the cache folder."""
        requirements = "".join(f"{p}\n" for p in sorted(packages))
        version = self.python_version()
        target = self.cache / "wheelhouse" / _digest(requirements, version, platform.machine())
        if (target / "requirements.txt").exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".wheels-", dir=target.parent))
        try:
            (tmp / "requirements.txt").write_text(requirements)
            if packages:
                machine = platform.machine()
                platforms = [f"manylinux_2_{minor}_{machine}" for minor in (36, 28, 17)]
                cmd = [sys.executable, "-m", "pip", "download", "-q", "--dest", str(tmp),
                       "--only-binary=:all:", "--python-version", version, "--implementation", "cp",
                       *[arg for p in platforms for arg in ("--platform", p)], "-r", str(tmp / "requirements.txt")]  # fmt: skip
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SWEImageError(
                        f"pip download {' '.join(packages)} failed: {done.stderr.strip()[-1500:]}"
                    )
            with contextlib.suppress(OSError):
                os.rename(tmp, target)  # another process may have won the race: use its folder
        finally:
            if tmp.exists():
                subprocess.run(["rm", "-rf", str(tmp)], check=False)
        return target
