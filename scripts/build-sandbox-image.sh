#!/usr/bin/env bash
# Build the Docker sandbox's base image without any image registry: debootstrap a minimal Debian
# (python3 with venv and pytest, GNU time, git, optionally g++) into a folder and `docker import` it.
# pytest runs the code verifier's pytest-style tests (verifiers/code_programs.py).
# git and python3-venv serve the SWE layers (sandboxes/swe_images.py): an environment is a venv
# filled from a wheelhouse, an instance a git checkout that patches are applied to.
#   usage: scripts/build-sandbox-image.sh TAG [--cpp]
# Called by sandboxes/images.py when the image is missing (then cached by tag in the engine).
set -euo pipefail

TAG=${1:?usage: build-sandbox-image.sh TAG [--cpp]}
SUITE=${M1_SANDBOX_SUITE:-bookworm}
MIRROR=${M1_SANDBOX_MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3,python3-venv,python3-pytest,time,git
[ "${2:-}" = "--cpp" ] && PACKAGES=$PACKAGES,g++

command -v debootstrap >/dev/null || {
    echo "build-sandbox-image: debootstrap missing (run scripts/docker-engine.sh)" >&2; exit 1; }

ROOTFS=$(mktemp -d /var/tmp/m1-sandbox-rootfs.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT

echo "build-sandbox-image: debootstrap $SUITE with $PACKAGES (a few minutes)" >&2
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 || {
    tail -20 "$ROOTFS.log" >&2; rm -f "$ROOTFS.log"; exit 1; }
rm -f "$ROOTFS.log"

# Nothing the sandboxed programs need: package caches, docs, manuals, locales other than C.
rm -rf "$ROOTFS"/var/cache/apt/* "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/usr/share/doc/* \
       "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* "$ROOTFS"/var/log/*
mkdir -p "$ROOTFS/work" "$ROOTFS/run/m1"

tar --numeric-owner -C "$ROOTFS" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8' \
    --change 'WORKDIR /work' \
    --message "m1 sandbox base: debian $SUITE minbase + $PACKAGES" \
    - "$TAG" >/dev/null
echo "build-sandbox-image: built $TAG" >&2
