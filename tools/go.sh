#!/usr/bin/env bash
# Go side of aophub: the buf plugins that generate gen/go, the build check of
# the Go module (github.com/aophub/aophub, go.mod at the repository root:
# the generated code in gen/go, the client in clients/go, the example in
# examples/go), the golden wire-vector test and the client's conformance test.
#
#   tools/go.sh install  install the pinned protoc-gen-go and
#                        protoc-gen-connect-go into .tools/bin
#   tools/go.sh check    go build and go vet every package, gofmt, go mod tidy
#   tools/go.sh test     the golden wire-vector test (tests/golden/go) and the
#                        client conformance scenario (clients/go), which starts
#                        a hub with the venv's Python (`make install` first)
#
# Runnable from any directory; paths are relative to the repository root.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_CONNECT_GO_VERSION=v1.21.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="$root/.tools/bin"

# Use the go on PATH, else the toolchain's default install location.
if command -v go >/dev/null 2>&1; then
    GO=$(command -v go)
elif [ -x /usr/local/go/bin/go ]; then
    GO=/usr/local/go/bin/go
else
    echo "go.sh: no go toolchain found (need go on PATH or /usr/local/go/bin/go)" >&2
    exit 1
fi

usage() {
    echo "usage: $0 {install|check|test}" >&2
    exit 2
}

# install_plugin NAME PACKAGE VERSION: go install PACKAGE@VERSION into
# .tools/bin unless .tools/bin/NAME already reports VERSION. protoc-gen-go
# prints "protoc-gen-go v1.36.12", protoc-gen-connect-go prints "1.21.1", so
# the version is compared with its leading "v" stripped.
install_plugin() {
    local name=$1 pkg=$2 version=$3
    local want=${version#v} have=""
    if [ -x "$bin/$name" ]; then
        have=$("$bin/$name" --version 2>/dev/null | awk '{print $NF}' || true)
        have=${have#v}
    fi
    if [ "$have" = "$want" ]; then
        echo "$name $version already installed in .tools/bin"
        return
    fi
    echo "installing $pkg@$version into .tools/bin"
    mkdir -p "$bin"
    GOBIN="$bin" "$GO" install "$pkg@$version"
    have=$("$bin/$name" --version | awk '{print $NF}')
    if [ "${have#v}" != "$want" ]; then
        echo "go.sh: $name reports version $have after install, want $version" >&2
        exit 1
    fi
}

cmd_install() {
    install_plugin protoc-gen-go \
        google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
    install_plugin protoc-gen-connect-go \
        connectrpc.com/connect/cmd/protoc-gen-connect-go "$PROTOC_GEN_CONNECT_GO_VERSION"
}

# The module's packages. Not ./...: that would also walk clients/ts/node_modules.
PACKAGES=(./gen/go/... ./clients/go/... ./examples/go/... ./tests/golden/go/...)
HAND_WRITTEN=(clients/go examples/go tests/golden/go)

cmd_check() {
    cd "$root"
    "$GO" build "${PACKAGES[@]}"
    "$GO" vet "${PACKAGES[@]}"
    echo "go build and go vet passed"
    unformatted=$(gofmt -l "${HAND_WRITTEN[@]}")
    if [ -n "$unformatted" ]; then
        echo "not gofmt-formatted: $unformatted" >&2
        exit 1
    fi
    if ! "$GO" mod tidy -diff; then
        echo "go.mod or go.sum is not tidy: run 'go mod tidy' at the repository root" >&2
        exit 1
    fi
}

cmd_test() {
    cd "$root"
    # -count=1: always run the tests rather than report a cached result, so
    # that every invocation really re-reads testdata/golden and starts a hub.
    "$GO" test -count=1 -v ./tests/golden/go/... ./clients/go/...
}

[ $# -eq 1 ] || usage
case "$1" in
    install) cmd_install ;;
    check) cmd_check ;;
    test) cmd_test ;;
    *) usage ;;
esac
