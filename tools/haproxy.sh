#!/usr/bin/env bash
# Install HAProxy (Debian's package `haproxy`, 2.6 on bookworm) when it is missing: `make run-cluster`
# puts it in front of the hub replicas, and the cluster's tests route through it.
#
# As root with apt-get (CI, containers) it installs the package quietly; otherwise it says how to.
# Installed already (haproxy on $PATH or in /usr/sbin): does nothing. The package's own service is
# not used (run-cluster starts haproxy with a configuration of its own, in the foreground).
set -euo pipefail

if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "haproxy.sh: HAProxy is missing; install the package 'haproxy' (e.g. sudo apt-get install haproxy)." >&2
    echo "haproxy.sh: without it \`make run-cluster\` cannot start its load balancer." >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "== installing HAProxy (apt-get)"
# The package may try to start its service; without an init system that fails quietly and is not needed.
if ! apt-get install -y -qq --no-install-recommends haproxy >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends haproxy >/dev/null
fi
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]
