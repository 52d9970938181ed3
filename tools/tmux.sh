#!/usr/bin/env bash
# Install tmux, the real terminal the tests of `aophub chat` drive, when it is missing.
#
# As root with apt-get (CI, containers) it installs the Debian package `tmux` quietly; otherwise
# it says how to. Installed already: does nothing. Only the terminal tests of `aophub chat`
# (tests/test_chat_terminal.py) need it; without it they are skipped.
set -euo pipefail

if command -v tmux >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tmux.sh: tmux is missing; install the package 'tmux' (e.g. sudo apt-get install tmux)." >&2
    echo "tmux.sh: without it the terminal tests of aophub chat are skipped." >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "== installing tmux (apt-get)"
if ! apt-get install -y -qq --no-install-recommends tmux >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends tmux >/dev/null
fi
command -v tmux >/dev/null
