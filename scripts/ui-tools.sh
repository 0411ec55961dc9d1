#!/usr/bin/env bash
# What the browser test of the Prefect UI (tests/ui/) needs: Debian's Chromium, Node + npm, and
# playwright-core from npm (pinned in tests/ui/package.json). playwright-core drives the system
# Chromium, so no browser is downloaded (`npx playwright install` is never run).
# Idempotent and quick when everything is there. Needs root (or sudo) only to install.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "ui-tools: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f tests/ui/node_modules/playwright-core/package.json ]; then
    echo "ui-tools: installing playwright-core into tests/ui/node_modules"
    # npm ci when a lockfile pins the whole tree; otherwise npm install (which writes one).
    if [ -f tests/ui/package-lock.json ]; then
        npm ci --prefix tests/ui --no-audit --no-fund --loglevel=error
    else
        npm install --prefix tests/ui --no-audit --no-fund --loglevel=error
    fi
fi
