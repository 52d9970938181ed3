#!/usr/bin/env bash
# Install the PostgreSQL server (Debian's package `postgresql`) when it is missing: the tests of the
# PostgreSQL store start a throwaway server of their own with its initdb and pg_ctl.
#
# As root with apt-get (CI, containers) it installs the package quietly; otherwise it says how to.
# Installed already (a /usr/lib/postgresql/N/bin/pg_ctl, or pg_ctl on $PATH): does nothing. Without
# it those tests are skipped, except where $AOPHUB_REQUIRE_POSTGRES is set (CI), where they fail.
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || command -v pg_ctl >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "postgresql.sh: the PostgreSQL server is missing; install the package 'postgresql' (e.g. sudo apt-get install postgresql)." >&2
    echo "postgresql.sh: without it the PostgreSQL store's tests are skipped." >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "== installing the PostgreSQL server (apt-get)"
if ! apt-get install -y -qq --no-install-recommends postgresql >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null
