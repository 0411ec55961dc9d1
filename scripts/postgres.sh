#!/usr/bin/env bash
# PostgreSQL for the test of the Prefect server on PostgreSQL (tests/scale/test_postgres.py): Debian's
# server binaries (initdb, pg_ctl), and as root a system user to run them as (PostgreSQL refuses root).
# No cluster is started here: the test makes a throwaway one on a free port and removes it after.
# Idempotent: with everything there it takes well under a second.
# Where it cannot install, it says why and exits 0: the test then skips with that reason.
# Set M1_REQUIRE_POSTGRES=1 (CI does) to make that an error instead.
set -uo pipefail
source "$(dirname "$0")/apt-install.sh"

give_up() {
    echo "postgres: $*" >&2
    [ "${M1_REQUIRE_POSTGRES:-0}" = 1 ] && exit 1
    echo "postgres: continuing without PostgreSQL; the PostgreSQL test will skip" >&2
    exit 0
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

if [ -z "$(pg_bin)" ]; then
    apt_install postgres postgresql || give_up "apt-get could not install postgresql"
    [ -n "$(pg_bin)" ] || give_up "postgresql installed, but no /usr/lib/postgresql/*/bin"
fi

# Debian's package runs the server as `postgres`; where that user is missing, a system user of ours.
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1 && ! id m1-postgres >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
        m1-postgres || give_up "could not create the system user m1-postgres to run PostgreSQL as"
fi
