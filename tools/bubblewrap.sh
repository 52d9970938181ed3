#!/usr/bin/env bash
# Install bubblewrap (bwrap), the sandbox of the built-in agent's exec tool, when it is missing.
#
# As root with apt-get (CI, containers) it installs the Debian package `bubblewrap` quietly;
# otherwise it says how to. Installed already: does nothing. Without bubblewrap the hub still
# runs, but exec is refused (or runs unsandboxed if the configuration allows it).
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "bubblewrap.sh: bwrap is missing; install the package 'bubblewrap' (e.g. sudo apt-get install bubblewrap)." >&2
    echo "bubblewrap.sh: without it the agent's exec tool is refused and the sandbox tests fail." >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "== installing bubblewrap (apt-get)"
if ! apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
command -v bwrap >/dev/null
