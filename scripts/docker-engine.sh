#!/usr/bin/env bash
# Make the local Docker engine available for the Docker sandbox (sandboxes/container.py), on a
# fresh Debian machine with nothing but Python, a VM or a privileged container alike:
#   1. apt-get install docker.io and debootstrap if absent;
#   2. start dockerd in the background if `docker info` does not answer (log: $M1_DOCKERD_LOG);
#   3. build the sandbox base image if the engine lacks it (debootstrap, a few minutes, once).
# Idempotent: a second run with everything up takes well under a second.
# Where the engine cannot run at all, it says why and exits 0: the docker tests then skip with that
# reason. Set M1_REQUIRE_DOCKER=1 to make that an error instead.
set -uo pipefail
source "$(dirname "$0")/apt-install.sh"

LOG=${M1_DOCKERD_LOG:-/var/log/m1-dockerd.log}
PY=${M1_PYTHON:-.venv/bin/python}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

give_up() {
    echo "docker-engine: $*" >&2
    [ "${M1_REQUIRE_DOCKER:-0}" = 1 ] && exit 1
    echo "docker-engine: continuing without Docker; the docker tests will skip" >&2
    exit 0
}

engine_up() { docker info >/dev/null 2>&1; }

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null || ! command -v docker >/dev/null; then
    apt_install docker-engine docker.io debootstrap || give_up "apt-get could not install docker.io debootstrap"
fi

if ! engine_up; then
    # No systemd in a container, so we start dockerd ourselves. The sandbox needs no network:
    # no bridge and no iptables (often missing or forbidden in containers). overlay2 makes a
    # container start cheap; where overlay cannot mount (e.g. nested in overlayfs) vfs still works.
    for driver in overlay2 vfs; do
        echo "docker-engine: starting dockerd (storage driver $driver), log in $LOG" >&2
        $SUDO mkdir -p "$(dirname "$LOG")"
        # setsid: the engine outlives this script and ignores a Ctrl-C meant for `make`.
        $SUDO setsid sh -c "exec dockerd --iptables=false --ip6tables=false --bridge=none \
            --storage-driver=$driver >>'$LOG' 2>&1" </dev/null &
        pid=$!
        for _ in $(seq 60); do
            engine_up && break
            kill -0 "$pid" 2>/dev/null || break  # it died: try the next driver
            sleep 0.5
        done
        engine_up && break
        $SUDO kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    done
    engine_up || give_up "dockerd did not start; last lines of $LOG: $(tail -5 "$LOG" 2>/dev/null)"
fi

if [ -x "$PY" ]; then
    "$PY" -m sandboxes.images >/dev/null || give_up "could not build the sandbox image"
fi
