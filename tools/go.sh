#!/usr/bin/env bash
# Go side of aophub: the buf plugins that generate gen/go, the build check of
# the Go module (github.com/aophub/aophub, go.mod at the repository root:
# the generated code in gen/go, the client in clients/go, the example in
# examples/go), the golden wire-vector test and the client's conformance test.
#
#   tools/go.sh install  install the pinned protoc-gen-go and
#                        protoc-gen-connect-go into .tools/bin
#   tools/go.sh check    go build and go vet every package, gofmt, go mod tidy,
#                        and the consumer check below for the last commit
#   tools/go.sh test     the golden wire-vector test (tests/golden/go) and the
#                        client conformance scenario (clients/go), which starts
#                        a hub with the venv's Python (`make install` first)
#   tools/go.sh consumer [REF]
#                        prove that a program outside the repository can depend
#                        on the module with a plain `go get` and no replace line:
#                        the commit REF (default HEAD) is served as version
#                        v0.0.1 of github.com/aophub/aophub by a file-based
#                        module proxy (as the Go proxy would serve a tag), and a
#                        new module runs `go get .../clients/go@v0.0.1` and builds
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
    echo "usage: $0 {install|check|test|consumer [REF]}" >&2
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
    cmd_consumer HEAD
}

cmd_test() {
    cd "$root"
    # -count=1: always run the tests rather than report a cached result, so
    # that every invocation really re-reads testdata/golden and starts a hub.
    "$GO" test -count=1 -v ./tests/golden/go/... ./clients/go/...
}

cmd_consumer() ( # a subshell: its EXIT trap cleans up on failure too
    ref=${1:-HEAD} version=v0.0.1
    tmp=$(mktemp -d)
    # The private module cache is read-only once filled; make it removable.
    trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
    module_dir="$tmp/proxy/github.com/aophub/aophub/@v"
    mkdir -p "$module_dir" "$tmp/consumer"
    # As the Go proxy does, leave out directories that are modules of their own.
    nested=()
    while read -r gomod; do
        nested+=(":(exclude)$(dirname "$gomod")")
    done < <(git -C "$root" ls-tree -r --name-only "$ref" | grep '/go\.mod$' || true)
    git -C "$root" archive --format=zip --prefix="github.com/aophub/aophub@$version/" "$ref" -- . "${nested[@]}" \
        >"$module_dir/$version.zip"
    if ! git -C "$root" show "$ref:go.mod" >"$module_dir/$version.mod" 2>/dev/null; then
        echo "module github.com/aophub/aophub" >"$module_dir/$version.mod" # what Go assumes without one
    fi
    echo "{\"Version\":\"$version\"}" >"$module_dir/$version.info"
    echo "$version" >"$module_dir/list"
    cat >"$tmp/consumer/main.go" <<'GO'
package main

import (
	"fmt"

	aophub "github.com/aophub/aophub/clients/go"
	"github.com/aophub/aophub/gen/go/aop"
)

func main() { fmt.Println(aophub.Text(&aop.Message{}), aophub.DefaultMaxFrameBytes) }
GO
    downloads="$("$GO" env GOMODCACHE)/cache/download"
    (
        cd "$tmp/consumer"
        export GOMODCACHE="$tmp/modcache" GOSUMDB=off GOFLAGS=-mod=mod GOWORK=off
        # The dependencies come from this machine's module cache: no network needed.
        export GOPROXY="file://$tmp/proxy,file://$downloads"
        "$GO" mod init example.com/consumer >/dev/null 2>&1
        "$GO" get "github.com/aophub/aophub/clients/go@$version"
        "$GO" build -o "$tmp/consumer-bin" .
        if grep -q replace go.mod; then
            echo "go.sh: the consumer needed a replace line" >&2
            exit 1
        fi
    )
    echo "a new module depends on github.com/aophub/aophub/clients/go@$version ($ref) with go get alone"
)

[ $# -ge 1 ] || usage
case "$1" in
    install) cmd_install ;;
    check) cmd_check ;;
    test) cmd_test ;;
    consumer) cmd_consumer "${2:-HEAD}" ;;
    *) usage ;;
esac
