#!/usr/bin/env bash
# Builds Jaeger all-in-one (cmd/jaeger of the module pinned in go.mod here)
# for the tracing integration tests, once per go.mod and go.sum: the binary
# is kept in a cache outside the work tree (a rebuild takes minutes) and
# linked to bin/jaeger. Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)"
cache="${RULEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ruleagent}"
bin="$cache/jaeger-$key"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  echo "building Jaeger ($(grep -o 'jaegertracing/jaeger v[0-9.]*' "$here/go.mod" | head -1)) into $bin: this takes several minutes once" >&2
  (cd "$here" && go build -trimpath -o "$bin.tmp.$$" github.com/jaegertracing/jaeger/cmd/jaeger)
  mv "$bin.tmp.$$" "$bin"
fi
mkdir -p "$root/bin"
ln -sfn "$bin" "$root/bin/jaeger"
echo "$bin"
