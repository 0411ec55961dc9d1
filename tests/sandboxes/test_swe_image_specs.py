"""SWE images without an engine: content-hash tags, build contexts, build arguments, the wheelhouse.

A recording double stands in for docker-py's `images.get/build` and `containers.run`; the builds on a
real engine run in the docker tests (tests/swe -m docker). What is pinned here is what a user relies
on: an unchanged input finds its image (same tag, no build), any change in a layer's inputs gets a new
tag, builds never reach the network, and each layer's build context holds exactly its inputs.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import platform
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import docker.errors
import pytest

from sandboxes import swe_images
from sandboxes.swe_images import (
    _BASE_DOCKERFILE,
    _ENV_DOCKERFILE,
    _INSTANCE_DOCKERFILE,
    Built,
    EnvSpec,
    InstanceSpec,
    SWEImageError,
    SWEImages,
    _context,
    _digest,
    _slug,
    default_cache,
    git,
    pythonpath,
)
from tests.fakes.docker import FakeDocker, FakeImage

PARENT = "m1-sandbox:py-cpp-0123456789ab"


def fake_docker() -> FakeDocker:
    """An engine that has the parent image; built layers get their usual sizes; Python 3.11 inside."""
    sizes = {"m1-swe-base": 150_000_000, "m1-swe-env": 400_000_000}
    return FakeDocker(
        have={PARENT: 100_000_000},
        size_of=lambda tag: sizes.get(tag.split(":")[0], 410_000_000),
        run_output=b"3.11\n",
    )


@pytest.fixture
def client(monkeypatch) -> FakeDocker:
    fake = fake_docker()

    def ensure_image(c, cpp):
        assert c is fake and cpp
        return PARENT

    monkeypatch.setattr(swe_images, "ensure_image", ensure_image)
    return fake


@pytest.fixture
def images(client, tmp_path) -> SWEImages:
    return SWEImages(client=client, cache=str(tmp_path / "cache"))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "__init__.py").write_text("X = 1\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    _git(repo.parent, "init", "-q", str(repo))
    for k, v in (("user.name", "t"), ("user.email", "t@t")):
        _git(repo, "config", k, v)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


def head(repo: Path) -> str:
    return _git(repo, "rev-parse", "HEAD").strip()


def spec(repo_dir: Path, **kw) -> InstanceSpec:
    base = dict(instance_id="Org__Repo-1", repo="org/repo", repo_dir=repo_dir, base_commit=head(repo_dir))
    return InstanceSpec(**{**base, **kw})


# -- names and hashes ---------------------------------------------------------------------------------------


def test_digest_hashes_parts_with_separators():
    expected = hashlib.sha256(b"ab\0c\0").hexdigest()[:16]
    assert _digest("ab", "c") == expected
    assert _digest("a", "bc") != expected  # the parts' boundaries count
    assert len(_digest()) == 16


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("django/django", "django-django"),
        ("Org__Repo-1.2", "org__repo-1.2"),
        ("..a b!!c..", "a-b-c"),
        ("-x-", "x"),
        ("", "x"),
        ("!!!", "x"),
        ("a" * 100, "a" * 80),
    ],
)
def test_slug_is_a_valid_tag_component(name, slug):
    assert _slug(name) == slug


def test_default_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("M1_SWE_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache() == tmp_path / "c"
    monkeypatch.setenv("M1_SWE_CACHE", "")
    assert default_cache() == tmp_path / "xdg" / "m1" / "swe"
    monkeypatch.delenv("M1_SWE_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache() == Path.home() / ".cache" / "m1" / "swe"


def test_git_runs_in_the_repository_and_says_what_failed(repo):
    assert git(repo, "hash-object", "--stdin", input=b"hi\n") == b"45b983be36b73c0788dc9cbcb76cbb80fc7bb057\n"
    assert git(repo, "rev-parse", "--show-toplevel").decode().strip() == str(repo.resolve())
    with pytest.raises(SWEImageError) as err:
        git(repo, "log", "-1", "--format=%H", "nope")
    assert str(err.value).startswith(f"git log -1 --format=%H in {repo}: fatal: ambiguous argument 'nope'")
    assert len(str(err.value)) < 600
    long = "x" * 700  # git's complaint quotes it: only its last 500 characters are kept
    stderr = subprocess.run(["git", "-C", str(repo), "log", long], capture_output=True, text=True).stderr
    with pytest.raises(SWEImageError) as err:
        git(repo, "log", long)
    assert str(err.value) == f"git log {long} in {repo}: {stderr.strip()[-500:]}"


def test_pythonpath_follows_the_src_layout(repo, tmp_path):
    assert pythonpath(repo, head(repo)) == "/testbed/src"
    flat = tmp_path / "flat"
    (flat / "src" / "deep" / "pkg").mkdir(parents=True)
    (flat / "src" / "deep" / "pkg" / "__init__.py").write_text("")
    (flat / "src" / "module.py").write_text("")
    (flat / "pkg").mkdir()
    (flat / "pkg" / "__init__.py").write_text("")
    _git(tmp_path, "init", "-q", str(flat))
    _git(flat, "add", "-A")
    _git(flat, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    assert pythonpath(flat, head(flat)) == "/testbed"


def test_context_is_a_tar_of_files_and_folders(tmp_path):
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a.whl").write_bytes(b"wheel")
    buf = _context({"Dockerfile": b"FROM x\n"}, {"wheels": tmp_path / "wheels"})
    assert buf.tell() == 0  # ready to be read from the start
    with tarfile.open(fileobj=buf) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert tar.extractfile("Dockerfile").read() == b"FROM x\n"
        assert tar.extractfile("wheels/a.whl").read() == b"wheel"
    assert members["Dockerfile"].mode == 0o644 and members["Dockerfile"].size == 7
    assert members["wheels"].isdir()
    with tarfile.open(fileobj=_context({"f": b""})) as tar:
        assert tar.getnames() == ["f"]


# -- tags ---------------------------------------------------------------------------------------------------


def test_base_tag_hashes_parent_and_dockerfile(images):
    assert images.base_tag() == f"m1-swe-base:{_digest(PARENT, _BASE_DOCKERFILE)}"


def test_env_tag_names_the_repo_and_ignores_package_order(images):
    a = images.env_tag(EnvSpec("Org/Repo", ("pytest", "attrs")))
    assert a == images.env_tag(EnvSpec("Org/Repo", ("attrs", "pytest")))
    packages = "attrs\npytest"
    assert a == f"m1-swe-env:org-repo-{_digest(images.base_tag(), 'Org/Repo', packages, _ENV_DOCKERFILE)}"
    assert a != images.env_tag(EnvSpec("Org/Repo", ("pytest",)))
    assert a != images.env_tag(EnvSpec("Org/Other", ("pytest", "attrs")))


def test_instance_tag_changes_with_every_input(images, repo):
    s = spec(repo, test_patch="", packages=("pytest",))
    tag = images.instance_tag(s)
    tree = _git(repo, "rev-parse", "HEAD^{tree}").strip()
    expected = _digest(images.env_tag(s.env), tree, "", _INSTANCE_DOCKERFILE, "/testbed/src")
    assert tag == f"m1-swe-instance:org__repo-1-{expected}"
    assert images.instance_tag(spec(repo, packages=("pytest",))) == tag  # unchanged inputs: same image
    assert images.instance_tag(spec(repo, test_patch="diff", packages=("pytest",))) != tag
    assert images.instance_tag(spec(repo, packages=("pytest", "attrs"))) != tag
    (repo / "new.txt").write_text("x")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")
    assert images.instance_tag(spec(repo, packages=("pytest",))) != tag


def test_instance_spec_env():
    s = InstanceSpec("i", "o/r", Path("."), "c", packages=("a",))
    assert s.env == EnvSpec("o/r", ("a",))
    assert InstanceSpec("i", "o/r", Path("."), "c").test_patch == ""
    assert EnvSpec("o/r").packages == ()


# -- building -----------------------------------------------------------------------------------------------


def test_base_builds_offline_once(images, client):
    built = images.base()
    tag = images.base_tag()
    assert (built.layer, built.name, built.tag, built.built) == ("base", "base", tag, True)
    ((kw, files, _),) = client.builds
    assert kw == {
        "custom_context": True,
        "tag": tag,
        "network_mode": "none",  # nothing in a build reaches the network
        "rm": True,
        "forcerm": True,
        "pull": False,
    }
    assert files == {"Dockerfile": _BASE_DOCKERFILE.format(parent=PARENT).encode()}
    assert files["Dockerfile"].startswith(f"FROM {PARENT}\n".encode())
    assert (built.size_mb, built.layer_mb) == (150.0, 50.0)
    assert built.seconds >= 0
    again = images.base()
    assert len(client.builds) == 1  # found by its tag: not rebuilt
    assert (again.tag, again.built) == (tag, False)
    assert again.seconds == json.loads((images.cache / "build-times.json").read_text())[tag]


def test_environment_context_holds_the_wheelhouse(images, client, monkeypatch, tmp_path):
    wheels = tmp_path / "wh"
    wheels.mkdir()
    (wheels / "requirements.txt").write_text("pytest\n")
    (wheels / "pytest.whl").write_bytes(b"w")
    asked = []
    monkeypatch.setattr(images, "wheelhouse", lambda packages: asked.append(packages) or wheels)
    env = EnvSpec("Org/Repo", ("pytest",))
    built = images.environment(env)
    assert (built.layer, built.name, built.tag) == ("environment", "Org/Repo", images.env_tag(env))
    assert asked == [("pytest",)]
    kw, files, members = client.builds[-1]
    assert kw["tag"] == built.tag and kw["network_mode"] == "none"
    base_tag = images.base_tag()
    assert files["Dockerfile"] == _ENV_DOCKERFILE.format(parent=base_tag, repo="org-repo").encode()
    assert files["wheels/requirements.txt"] == b"pytest\n" and files["wheels/pytest.whl"] == b"w"
    assert (built.size_mb, built.layer_mb) == (400.0, 250.0)
    images.environment(env)
    assert len(client.builds) == 2  # base and environment, each once


def test_instance_context_is_the_commit_and_the_test_patch(images, client, repo, monkeypatch, tmp_path):
    monkeypatch.setattr(images, "wheelhouse", lambda packages: tmp_path)
    commit = head(repo)
    (repo / "untracked.txt").write_text("not in the commit")
    s = spec(repo, test_patch="--- a\n+++ b\n", base_commit=commit)
    built = images.instance(s)
    assert (built.layer, built.name, built.tag) == ("instance", "Org__Repo-1", images.instance_tag(s))
    kw, files, _ = client.builds[-1]
    assert kw["tag"] == built.tag
    env_tag = images.env_tag(s.env)
    assert (
        files["Dockerfile"]
        == _INSTANCE_DOCKERFILE.format(
            parent=env_tag, pythonpath="/testbed/src", instance="org__repo-1"
        ).encode()
    )
    assert files["test.patch"] == b"--- a\n+++ b\n"
    with tarfile.open(fileobj=io.BytesIO(files["repo.tar"])) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
    assert names == {"src/pkg/__init__.py", "tests/test_x.py"}
    assert (built.size_mb, built.layer_mb) == (410.0, 10.0)


def test_instance_needs_a_git_repository(images, tmp_path):
    with pytest.raises(SWEImageError, match=r"^i-1: .*plain is not a git repository"):
        images.instance(InstanceSpec("i-1", "o/r", tmp_path / "plain", "abc"))


def test_a_failed_build_says_why(images, client):
    client.build_error = docker.errors.BuildError(
        "step 2 failed", [{"stream": "Step 1\n"}, {"error": "pip: no such file"}, {"aux": 1}]
    )
    with pytest.raises(SWEImageError) as err:
        images.base()
    assert str(err.value) == f"building {images.base_tag()} failed: step 2 failed\nStep 1\npip: no such file"


def test_a_long_build_log_keeps_its_end(images, client):
    client.build_error = docker.errors.BuildError("x", [{"stream": "a" * 3000}, {"stream": "END"}])
    with pytest.raises(SWEImageError) as err:
        images.base()
    assert str(err.value).endswith("\n" + ("a" * 3000 + "END")[-2000:])


def test_layer_size_never_negative(images, client):
    client.size_of = lambda tag: 1_000_000
    assert images.base().layer_mb == 0.0


def test_ensure_builds_layers_in_order_each_once(images, client, repo, monkeypatch):
    monkeypatch.setattr(images, "wheelhouse", lambda packages: repo)
    a = spec(repo, instance_id="a", packages=("pytest",))
    b = spec(repo, instance_id="b", packages=("pytest",))
    c = spec(repo, instance_id="c", repo="org/other")
    done: list[Built] = []
    out = images.ensure([a, b, c], on_done=done.append)
    assert [(x.layer, x.name) for x in out] == [
        ("base", "base"),
        ("environment", "org/repo"),
        ("environment", "org/other"),
        ("instance", "a"),
        ("instance", "b"),
        ("instance", "c"),
    ]
    assert done == out[1:]
    recorded = json.loads((images.cache / "build-times.json").read_text())
    assert sorted(recorded) == sorted(x.tag for x in out)
    assert images.ensure([a]) == [
        Built(x.layer, x.name, x.tag, False, recorded[x.tag], x.size_mb, x.layer_mb)
        for x in (out[0], out[1], out[3])
    ]


def test_exists(images, client):
    assert images.exists(PARENT)
    assert not images.exists("m1-swe-base:nope")


def test_engine_by_default(monkeypatch):
    from sandboxes import container

    fake = fake_docker()
    monkeypatch.setattr(container, "engine", lambda: fake)
    images = SWEImages()
    assert images.client is fake
    assert images.workers == 2
    assert isinstance(images.cache, Path)


# -- build-time records -----------------------------------------------------------------------------------


def test_build_times_are_recorded_per_tag(images):
    images.cache = images.cache / "not" / "yet" / "made"
    assert math.isnan(images._recorded("t1"))
    images._record("t1", 1.23456)
    images._record("t2", 2.0)
    path = images.cache / "build-times.json"
    assert json.loads(path.read_text()) == {"t1": 1.235, "t2": 2.0}
    assert images._recorded("t1") == 1.235
    assert sorted(p.name for p in images.cache.iterdir()) == ["build-times.json", "build-times.lock"]


def test_unreadable_records_count_as_none(images):
    images.cache.mkdir(parents=True)
    (images.cache / "build-times.json").write_text("{not json")
    assert images._read_records() == {}
    images._record("t", 1.0)
    assert images._read_records() == {"t": 1.0}


# -- the wheelhouse -----------------------------------------------------------------------------------------


def test_python_version_is_the_images_and_asked_once(images, client):
    assert images.python_version() == "3.11"
    assert images.python_version() == "3.11"
    assert client.ran == [
        (
            PARENT,
            ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            {"network_mode": "none", "remove": True},
        )
    ]


def test_wheelhouse_without_packages_needs_no_pip(images, monkeypatch):
    monkeypatch.setattr(swe_images.subprocess, "run", lambda *a, **k: pytest.fail("pip ran"))
    target = images.wheelhouse([])
    assert target == images.cache / "wheelhouse" / _digest("", "3.11", platform.machine())
    assert (target / "requirements.txt").read_text() == ""
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp folder left


def test_wheelhouse_downloads_wheels_for_the_images_python(images, monkeypatch):
    calls = []
    real_run = subprocess.run

    def run(cmd, **kw):
        if cmd[:3] != [sys.executable, "-m", "pip"]:
            return real_run(cmd, **kw)
        calls.append(cmd)
        assert kw == {"capture_output": True, "text": True}
        dest = Path(cmd[cmd.index("--dest") + 1])
        (dest / "b-1.0-py3-none-any.whl").write_bytes(b"w")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(swe_images.subprocess, "run", run)
    empty = images.wheelhouse([])  # the wheelhouse folder exists now: another may join it
    target = images.wheelhouse(["b>=1", "a"])
    requirements = "a\nb>=1\n"
    assert target == images.cache / "wheelhouse" / _digest(requirements, "3.11", platform.machine())
    assert (target / "requirements.txt").read_text() == requirements
    assert (target / "b-1.0-py3-none-any.whl").read_bytes() == b"w"
    (cmd,) = calls
    m = platform.machine()
    tmp = cmd[cmd.index("--dest") + 1]
    assert cmd == [
        sys.executable, "-m", "pip", "download", "-q", "--dest", tmp,
        "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
        "--platform", f"manylinux_2_36_{m}", "--platform", f"manylinux_2_28_{m}",
        "--platform", f"manylinux_2_17_{m}", "-r", f"{tmp}/requirements.txt",
    ]  # fmt: skip
    assert Path(tmp).parent == target.parent and Path(tmp).name.startswith(".wheels-")
    assert images.wheelhouse(["a", "b>=1"]) == target  # kept: no second download
    assert len(calls) == 1
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([target.name, empty.name])


def test_a_failed_download_says_why_and_leaves_nothing(images, monkeypatch):
    real_run = subprocess.run

    def run(cmd, **kw):
        if cmd[0] == "rm":
            return real_run(cmd, **kw)
        return subprocess.CompletedProcess(
            cmd, 1, "", "x" * 2000 + "ERROR: No matching distribution for nope\n"
        )

    monkeypatch.setattr(swe_images.subprocess, "run", run)
    with pytest.raises(SWEImageError) as err:
        images.wheelhouse(["nope", "other"])
    tail = ("x" * 2000 + "ERROR: No matching distribution for nope")[-1500:]
    assert str(err.value) == f"pip download nope other failed: {tail}"
    assert list((images.cache / "wheelhouse").iterdir()) == []


def test_a_concurrent_wheelhouse_wins_the_race(images, monkeypatch):
    target = images.cache / "wheelhouse" / _digest("", "3.11", platform.machine())
    real_rename = os.rename

    def rename(src, dst):
        (Path(dst)).mkdir(parents=True)
        (Path(dst) / "requirements.txt").write_text("theirs")
        return real_rename(src, dst)  # fails: the other process's folder is there

    monkeypatch.setattr(swe_images.os, "rename", rename)
    assert images.wheelhouse([]) == target
    assert (target / "requirements.txt").read_text() == "theirs"
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_tag_lock_is_a_per_tag_file(tmp_path):
    import tempfile

    name = hashlib.sha256(b"some:tag").hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"m1-swe-image-{name}.lock"
    with swe_images._tag_lock("some:tag"):
        assert path.exists()
        probe = subprocess.run(["flock", "-n", str(path), "true"])
        assert probe.returncode != 0  # held while the block runs
    assert subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


def test_build_seconds_are_measured_and_recorded(images, client, monkeypatch):
    class Clock:
        ticks = iter([10.0, 11.23456, 12.5])

        def monotonic(self):
            return next(self.ticks)

    monkeypatch.setattr(swe_images, "time", Clock())
    built = images.base()
    assert built.built and built.seconds == 2.5  # start to the end of the build and its record
    assert images._recorded(built.tag) == 1.235  # the build itself, to the millisecond


def test_an_image_without_a_size_counts_zero(images, client, monkeypatch):
    monkeypatch.setattr(FakeImage, "__init__", lambda self, size: setattr(self, "attrs", {}))
    built = images.base()
    assert (built.size_mb, built.layer_mb) == (0.0, 0.0)


def test_builds_run_at_most_workers_at_a_time(images, client, repo, monkeypatch):
    monkeypatch.setattr(images, "wheelhouse", lambda packages: repo)
    images.workers = 1
    running, most = [0], [0]
    build = client.images.build

    def slow_build(**kw):
        running[0] += 1
        most[0] = max(most[0], running[0])
        time.sleep(0.02)
        try:
            return build(**kw)
        finally:
            running[0] -= 1

    monkeypatch.setattr(client.images, "build", slow_build)
    images.ensure([spec(repo, instance_id=f"i{n}", repo=f"org/r{n}") for n in range(3)])
    assert most[0] == 1 and len(client.builds) == 7  # base, 3 environments, 3 instances
