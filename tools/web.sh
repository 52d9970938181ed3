#!/usr/bin/env bash
# The web console (web/): install, build, type-check, freshness check.
#
#   bash tools/web.sh install   npm ci in web/ from its lockfile (esbuild, playwright-core),
#                               after the TypeScript client's packages (the console's sources
#                               import clients/ts/src and its dependencies)
#   bash tools/web.sh build     bundle web/src into src/aophub/console (what the hub serves)
#                               and print each asset's size and the gzipped first load
#   bash tools/web.sh check     tsc --noEmit over web/src (strict)
#   bash tools/web.sh fresh     build, then fail if src/aophub/console changed: the committed
#                               assets must be what the sources build (like check-gen)
#   bash tools/web.sh latency [ROUNDS]
#                               time to the first streamed token after send: the console in
#                               chromium against the TypeScript client alone (HUB_URL, HUB_TOKEN
#                               name a running hub; see web/test/latency.ts)
#   bash tools/web.sh chromium  install Debian's chromium for the end-to-end tests when it is
#                               missing (as root with apt-get, e.g. CI), else say how
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
web="$root/web"
stamp="$web/node_modules/.aophub-install-stamp"
built="src/aophub/console"

install_key() {
  {
    node --version
    cat "$web/package.json" "$web/package-lock.json"
  } | sha256sum | cut -d' ' -f1
}

cmd_install() {
  bash "$root/tools/ts.sh" install
  local key
  key="$(install_key)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
    echo "web.sh: web/node_modules is up to date with package-lock.json"
    return 0
  fi
  (cd "$web" && npm ci --no-audit --no-fund)
  echo "$key" >"$stamp"
}

need_install() {
  if [[ ! -d "$web/node_modules" || ! -d "$root/clients/ts/node_modules" ]]; then
    cmd_install
  fi
}

cmd_build() {
  need_install
  (cd "$web" && node build.mjs --report)
}

cmd_check() {
  need_install
  (cd "$web" && "$root/clients/ts/node_modules/.bin/tsc" -p tsconfig.json)
  echo "web.sh: tsc --noEmit passed"
}

cmd_fresh() {
  cmd_build >/dev/null
  local changes
  changes=$(cd "$root" && git status --porcelain -- "$built")
  if [[ -n "$changes" ]]; then
    echo "$changes"
    echo "web.sh: the built console is stale: run 'make web' and commit $built" >&2
    exit 1
  fi
  echo "web.sh: $built is what web/ builds"
}

cmd_chromium() {
  if command -v chromium >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "web.sh: chromium is missing; install Debian's package 'chromium' (e.g. sudo apt-get install chromium)." >&2
    echo "web.sh: without it the console's browser tests are skipped." >&2
    return 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "== installing chromium (apt-get) for the web console's browser tests"
  if ! apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  command -v chromium >/dev/null
}

cmd_latency() {
  need_install
  (cd "$root/clients/ts" && node --import tsx "$web/test/latency.ts" "$@")
}

case "${1:-}" in
  install) cmd_install ;;
  build) cmd_build ;;
  check) cmd_check ;;
  fresh) cmd_fresh ;;
  chromium) cmd_chromium ;;
  latency) shift && cmd_latency "$@" ;;
  *)
    echo "usage: bash tools/web.sh install|build|check|fresh|latency|chromium" >&2
    exit 2
    ;;
esac
