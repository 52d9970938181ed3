#!/usr/bin/env bash
# Runs the example programs of examples/ against a live hub (`make test-examples`).
#
# One hub is started for all of them by the conformance launcher
# (tests/support/conformance_hub.py: a fresh data directory, a fresh key, the
# built-in echo node "local"); each example_<language> function runs its
# language's example against it with $AOPHUB_URL and $AOPHUB_TOKEN set, and
# fails unless the answer came back. Add a language by adding its function to
# EXAMPLES.
#
# Runnable from any directory; needs the venv of `make install`
# ($AOPHUB_PYTHON overrides which Python runs the hub).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${AOPHUB_PYTHON:-$root/.venv/bin/python}
GO=$(command -v go || echo /usr/local/go/bin/go)
EXAMPLES=(example_go example_ts example_python example_python_connectrpc example_java)

# expect_line PATTERN OUTPUT: fail unless OUTPUT has a line matching PATTERN.
expect_line() {
    if ! grep -Eq -- "$1" <<<"$2"; then
        echo "examples.sh: no line matching '$1' in:" >&2
        echo "$2" >&2
        exit 1
    fi
}

# Go: a first turn in a new session, then a second one resumed from the
# session id and cursor the first run printed.
example_go() {
    local out session cursor
    (cd "$root" && "$GO" build -o "$workdir/example-go" ./examples/go)
    out=$("$workdir/example-go" -server "$AOPHUB_URL" -p "hello from go")
    echo "$out"
    expect_line '^echo: hello from go' "$out"
    expect_line '^\[turn completed\]$' "$out"
    session=$(sed -n 's/^session \([^ ]*\) cursor .*/\1/p' <<<"$out")
    cursor=$(sed -n 's/^session [^ ]* cursor \(.*\)/\1/p' <<<"$out")
    out=$("$workdir/example-go" -server "$AOPHUB_URL" -session "$session" -cursor "$cursor" -p "and again")
    echo "$out"
    expect_line '^echo: and again' "$out"
    expect_line "^session $session cursor " "$out"
}

# TypeScript: the same two runs with examples/ts, built as a user would build
# it: against the npm pack tarball of clients/ts, installed with npm install
# (tools/ts.sh consumer).
example_ts() {
    local out session cursor
    bash "$root/tools/ts.sh" install
    bash "$root/tools/ts.sh" consumer "$workdir/example-ts"
    out=$(node "$workdir/example-ts/dist/main.js" --server "$AOPHUB_URL" -p "hello from ts")
    echo "$out"
    expect_line '^echo: hello from ts' "$out"
    expect_line '^\[turn completed\]$' "$out"
    session=$(sed -n 's/^session \([^ ]*\) cursor .*/\1/p' <<<"$out")
    cursor=$(sed -n 's/^session [^ ]* cursor \(.*\)/\1/p' <<<"$out")
    out=$(node "$workdir/example-ts/dist/main.js" --server "$AOPHUB_URL" --session "$session" --cursor "$cursor" -p "and again")
    echo "$out"
    expect_line '^echo: and again' "$out"
    expect_line "^session $session cursor " "$out"
    # Resumed after the cursor: the first turn's answer is not printed again.
    if grep -q 'hello from ts' <<<"$out"; then
        echo "examples.sh: the resumed run printed the first turn again" >&2
        exit 1
    fi
}

# Python: the same two runs (a turn, then the next one resumed from the printed
# session and cursor) with the client of clients/python.
example_python() {
    local out session cursor
    out=$("$python" "$root/examples/python/client.py" -p "hello from python")
    echo "$out"
    expect_line '^echo: hello from python' "$out"
    expect_line '^\[turn completed\]$' "$out"
    session=$(sed -n 's/^session \([^ ]*\) cursor .*/\1/p' <<<"$out")
    cursor=$(sed -n 's/^session [^ ]* cursor \(.*\)/\1/p' <<<"$out")
    out=$("$python" "$root/examples/python/client.py" --session "$session" --cursor "$cursor" -p "and again")
    echo "$out"
    expect_line '^echo: and again' "$out"
    expect_line "^session $session cursor " "$out"
    PYTHON_SESSION=$session
}

# Python, management API: the sessions, then the events of the session the
# Python example used, as ProtoJSON lines.
example_python_connectrpc() {
    local out
    out=$("$python" "$root/examples/python/connectrpc.py")
    echo "$out"
    expect_line "^\{\"id\": \"$PYTHON_SESSION\"" "$out"
    out=$("$python" "$root/examples/python/connectrpc.py" --session "$PYTHON_SESSION")
    echo "$out"
    expect_line '"turnEnded": \{"stopReason": "completed"' "$out"
}

# Maven in batch mode, quiet, without the bare ANSI resets Debian's Maven 3.8
# still prints (pipefail keeps its status).
mvn_quiet() {
    mvn -q -B -ntp -Dstyle.color=never "$@" </dev/null 2>&1 | sed -e $'s/\x1b\\[[0-9;]*m//g'
}

# Java: the client and the generated code go to the local Maven repository
# (tests skipped: make test-java runs them), then the example is built and run
# the same way as the Go one.
example_java() {
    local out session cursor classpath
    mvn_quiet -f "$root/gen/java/pom.xml" install
    mvn_quiet -f "$root/clients/java/pom.xml" install -DskipTests
    mvn_quiet -f "$root/examples/java/pom.xml" compile dependency:build-classpath \
        -Dmdep.outputFile="$workdir/java-classpath"
    classpath="$root/examples/java/target/classes:$(cat "$workdir/java-classpath")"
    out=$(java -cp "$classpath" example.Turn --server "$AOPHUB_URL" -p "hello from java")
    echo "$out"
    expect_line '^echo: hello from java' "$out"
    expect_line '^\[turn completed\]$' "$out"
    session=$(sed -n 's/^session \([^ ]*\) cursor .*/\1/p' <<<"$out")
    cursor=$(sed -n 's/^session [^ ]* cursor \(.*\)/\1/p' <<<"$out")
    out=$(java -cp "$classpath" example.Turn --server "$AOPHUB_URL" --session "$session" --cursor "$cursor" -p "and again")
    echo "$out"
    expect_line '^echo: and again' "$out"
    expect_line "^session $session cursor " "$out"
}

workdir=$(mktemp -d)
coproc HUB { cd "$root" && exec "$python" -m tests.support.conformance_hub; }
hub_pid=$HUB_PID
stop_hub() {
    exec {HUB[1]}>&- # the launcher stops the hub when its stdin ends
    wait "$hub_pid" || true
    rm -rf "$workdir"
}
trap stop_hub EXIT
read -r ready <&"${HUB[0]}"
AOPHUB_URL=$("$python" -c 'import json, sys; print(json.loads(sys.argv[1])["url"])' "$ready")
AOPHUB_TOKEN=$("$python" -c 'import json, sys; print(json.loads(sys.argv[1])["token"])' "$ready")
export AOPHUB_URL AOPHUB_TOKEN

for example in "${EXAMPLES[@]}"; do
    start=$SECONDS
    echo "== $example"
    "$example"
    echo "== $example passed in $((SECONDS - start)) s"
done
