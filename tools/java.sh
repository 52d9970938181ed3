#!/usr/bin/env bash
# Java side of the generated code: gen/java is a Maven project whose sources
# (gen/java/src/main/java) come from `buf generate` (the java entry of
# buf.gen.yaml); this script compiles them against protobuf-java.
#
#   bash tools/java.sh check    compile gen/java quietly (mvn -q -B compile)
#   bash tools/java.sh protoc   print the path of a protoc that has the java
#                               generator (grpcio-tools' protoc has only
#                               python/pyi), fetching it from Maven Central
#                               (com.google.protobuf:protoc, the version of
#                               protobuf-java in gen/java/pom.xml) if needed
#   bash tools/java.sh grpc-plugin  the same for protoc-gen-grpc-java
#                               (io.grpc:protoc-gen-grpc-java, the grpc.version
#                               of gen/java/pom.xml): the grpc-java service stubs
#   bash tools/java.sh test     build gen/java and clients/java and run the Java
#                               client's tests, the conformance scenario among
#                               them, against a hub they start (needs the venv)
#
# Runs from any directory, with or without a terminal or stdin (CI=true and
# no stdin included). Maven uses the default local repository (~/.m2), so
# the first run downloads protobuf-java and the Maven plugins from Maven
# Central and later runs are offline-fast.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
project="$root/gen/java"

usage() {
  echo "usage: bash tools/java.sh check|protoc|grpc-plugin|test" >&2
  exit 2
}

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "tools/java.sh: '$1' not found; install a JDK (17+) and Maven" >&2
    exit 1
  }
}

# Debian's Maven 3.8.7 still writes bare ANSI resets (ESC[0m) in batch mode:
# strip SGR sequences to keep CI logs clean (pipefail keeps Maven's status).
strip_sgr() { sed -e $'s/\x1b\\[[0-9;]*m//g'; }

check() {
  need java
  need mvn
  if [ -z "$(find "$project/src/main/java" -name '*.java' -print -quit 2>/dev/null)" ]; then
    echo "tools/java.sh: no generated Java sources in gen/java/src/main/java;" \
      "run buf generate first" >&2
    exit 1
  fi
  # -B: batch mode (no prompts, no colour); -ntp: no download progress.
  mvn -q -B -ntp -Dstyle.color=never -f "$project/pom.xml" compile \
    </dev/null 2>&1 | strip_sgr
}

# pom_property NAME: a <NAME> property of gen/java/pom.xml.
pom_property() {
  local value
  value=$(sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$project/pom.xml")
  [ -n "$value" ] || { echo "tools/java.sh: no $1 in gen/java/pom.xml" >&2; exit 1; }
  echo "$value"
}

# maven_exe GROUP ARTIFACT VERSION: print the path of a native executable
# published on Maven Central with an OS-arch classifier, fetching it once.
maven_exe() {
  need mvn
  local group=$1 artifact=$2 version=$3 os arch m2 exe
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=osx ;;
    *) echo "tools/java.sh: no $artifact build for $(uname -s)" >&2; exit 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch_64 ;;
    *) echo "tools/java.sh: no $artifact build for $(uname -m)" >&2; exit 1 ;;
  esac
  # The default local repository (a localRepository set in settings.xml is
  # not followed).
  m2="$HOME/.m2/repository"
  exe="$m2/${group//.//}/$artifact/$version/$artifact-$version-$os-$arch.exe"
  if [ ! -f "$exe" ]; then
    mvn -q -B -ntp -Dstyle.color=never \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get \
      -Dartifact="$group:$artifact:$version:exe:$os-$arch" \
      -Dtransitive=false </dev/null 2>&1 | strip_sgr >&2
  fi
  [ -x "$exe" ] || chmod +x "$exe"
  echo "$exe"
}

protoc() {
  maven_exe com.google.protobuf protoc "$(pom_property protobuf.version)"
}

grpc_plugin() {
  maven_exe io.grpc protoc-gen-grpc-java "$(pom_property grpc.version)"
}

# The generated code goes to the local repository first (the client depends
# on dev.aophub:aophub-proto), then the client is packaged, which runs its
# tests: Surefire's summary and the conformance results are printed.
test_java() {
  need java
  need mvn
  mvn -q -B -ntp -Dstyle.color=never -f "$project/pom.xml" install \
    </dev/null 2>&1 | strip_sgr
  mvn -B -ntp -Dstyle.color=never -f "$root/clients/java/pom.xml" install \
    </dev/null 2>&1 | strip_sgr | grep -Ev '^\[INFO\] (Download|Copying|Installing|Building jar|--- |$)'
}

case "${1:-}" in
  check) check ;;
  protoc) protoc ;;
  grpc-plugin) grpc_plugin ;;
  test) test_java ;;
  *) usage ;;
esac
