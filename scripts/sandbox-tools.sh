#!/usr/bin/env bash
# Tools of the process sandbox (sandboxes/process.py): bubblewrap (namespaces), util-linux prlimit
# (rlimits) and GNU time (exit status and usage of the program inside the pid namespace); and pytest
# for the system python3 the sandbox sees (the code verifier's pytest-style tests run with it).
# Idempotent and quick when everything is there. Needs root (or sudo) only to install.
set -euo pipefail
source "$(dirname "$0")/apt-install.sh"

missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v prlimit >/dev/null || missing+=(util-linux)
[ -x /usr/bin/time ] || missing+=(time)
PATH=/usr/local/bin:/usr/bin:/bin python3 -c 'import pytest' 2>/dev/null || missing+=(python3-pytest)

[ ${#missing[@]} -eq 0 ] || apt_install sandbox-tools "${missing[@]}"

# bwrap runs unprivileged and needs user namespaces; some distributions switch them off.
AS_USER=()
[ "$(id -u)" -ne 0 ] || AS_USER=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! "${AS_USER[@]}" bwrap --unshare-all --unshare-user --ro-bind / / true 2>/tmp/m1-bwrap-check.log; then
    echo "sandbox-tools: bwrap cannot create user namespaces here: $(cat /tmp/m1-bwrap-check.log)" >&2
    echo "  enable them: sysctl -w kernel.unprivileged_userns_clone=1 (Debian) or" >&2
    echo "  sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+)" >&2
    exit 1
fi
