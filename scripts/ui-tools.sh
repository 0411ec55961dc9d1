#!/usr/bin/env bash
# What the browser test of the Prefect UI (tests/ui/) needs: Debian's Chromium, Node + npm, and
# playwright-core from npm (pinned in tests/ui/package.json). playwright-core drives the system
# Chromium, so no browser is downloaded (`npx playwright install` is never run).
# Idempotent and quick when everything is there. Needs root (or sudo) only to install. Exits 1 with the
# reason when something cannot be installed or Chromium does not start.
set -euo pipefail
source "$(dirname "$0")/apt-install.sh"
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

[ ${#missing[@]} -eq 0 ] || apt_install ui-tools "${missing[@]}"

# playwright-core 1.65 needs Node 20+; Debian 12's own nodejs is 18.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
    echo "ui-tools: Node.js $(node --version) is too old for playwright-core: install Node.js 20 or newer" >&2
    exit 1
fi

if [ ! -f tests/ui/node_modules/playwright-core/package.json ]; then
    echo "ui-tools: installing playwright-core into tests/ui/node_modules"
    npm ci --prefix tests/ui --no-audit --no-fund --loglevel=error  # exactly tests/ui/package-lock.json
fi

# Installed is not enough: a missing library or a locked-down kernel shows only when Chromium starts.
if ! out=$(timeout 60 /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --dump-dom 'data:text/html,<p>m1-browser-ok</p>' 2>&1) || [[ $out != *m1-browser-ok* ]]; then
    echo "ui-tools: Chromium does not start: $(tail -3 <<<"$out")" >&2
    exit 1
fi
