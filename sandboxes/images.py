"""The Docker sandbox's base image, built locally when missing (no registry is needed or used).

The tag names the content: it hashes the build script, so editing the script yields a new image and an
unchanged script reuses the cached one. Concurrent callers (test workers, pool processes) build once.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import subprocess
import tempfile
from pathlib import Path

from sandboxes.base import SandboxUnavailable

BUILD_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "build-sandbox-image.sh"
REPOSITORY = "m1-sandbox"


def image_tag(cpp: bool = True) -> str:
    if not BUILD_SCRIPT.exists():
        raise SandboxUnavailable(
            f"{BUILD_SCRIPT} not found: the Docker sandbox builds its image from a source checkout"
        )
    digest = hashlib.sha256(BUILD_SCRIPT.read_bytes()).hexdigest()[:12]
    return f"{REPOSITORY}:{'py-cpp' if cpp else 'py'}-{digest}"


def ensure_image(client, cpp: bool = True) -> str:
    """Return the tag of the base image, building it first if the engine lacks it (minutes, once)."""
    import docker.errors

    tag = image_tag(cpp)
    with open(Path(tempfile.gettempdir()) / "m1-sandbox-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others find the image afterwards
        try:
            client.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        args = ["bash", str(BUILD_SCRIPT), tag, *(["--cpp"] if cpp else [])]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise SandboxUnavailable(
                f"building the sandbox image {tag} failed: {done.stderr.strip()[-2000:]}"
            )
    return tag


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the Docker sandbox base image if missing.")
    parser.add_argument("--no-cpp", action="store_true", help="leave g++ out (smaller, faster to build)")
    cpp = not parser.parse_args().no_cpp
    import docker

    print(ensure_image(docker.from_env(), cpp=cpp))


if __name__ == "__main__":
    main()
