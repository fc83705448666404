#!/usr/bin/env bash
# Builds the agent-sandbox controller (sigs.k8s.io/agent-sandbox, the project
# that defines the Sandbox kind) from the Go module proxy, with its CRDs, and
# caches them by version outside the repo. The attach e2e test runs it as a
# local process against the node (test/e2e/sandbox_test.go), the way
# test/e2e runs the turnwatch manager: no image registry is needed.
#
#   hack/agent-sandbox.sh
#
# Prints on its last line the folder holding the binary agent-sandbox-controller
# and the folder crds/ of its CustomResourceDefinitions. With a warm cache it
# takes well under a second; a cold build takes a few minutes and keeps Go's
# download and build output in a log file whose path it prints.
set -euo pipefail

AGENT_SANDBOX_VERSION=${AGENT_SANDBOX_VERSION:-v1.0.1}
MODULE=sigs.k8s.io/agent-sandbox
CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}
BIN="$CACHE/bin/agent-sandbox-$AGENT_SANDBOX_VERSION"
LOG="$CACHE/bin/agent-sandbox.log"

say() { echo "agent-sandbox: $*" >&2; }
ready() { [ -x "$BIN/agent-sandbox-controller" ] && [ -f "$BIN/crds/agents.x-k8s.io_sandboxes.yaml" ]; }

mkdir -p "$CACHE/bin"
if ready; then echo "$BIN"; exit 0; fi
# One build at a time: a second caller waits for the first and then finds the cache warm.
exec 9>"$CACHE/bin/.agent-sandbox.lock"
flock 9
if ready; then echo "$BIN"; exit 0; fi

# build: the controller as its module pins it (go install PKG@VERSION reads the
# module's own go.mod, so its dependencies are the ones upstream released with),
# stamped with its version; the CRDs from the same module's k8s/crds.
build() {
  local dir
  # Outside any module, so no go.mod or go.work around the caller interferes.
  dir=$(cd "$tmp" && GOWORK=off go mod download -json "$MODULE@$AGENT_SANDBOX_VERSION" |
    sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir/k8s/crds" ] || { echo "no k8s/crds in $dir"; return 1; }
  mkdir -p "$tmp/crds"
  cp "$dir"/k8s/crds/*.yaml "$tmp/crds/"
  (cd "$tmp" && GOWORK=off GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X $MODULE/internal/version.gitVersion=$AGENT_SANDBOX_VERSION" \
    "$MODULE/cmd/agent-sandbox-controller@$AGENT_SANDBOX_VERSION")
  rm -rf "$BIN"
  mkdir -p "$BIN"
  mv "$tmp/crds" "$BIN/crds"
  mv "$tmp/agent-sandbox-controller" "$BIN/agent-sandbox-controller"
}

start=$SECONDS
tmp=$(mktemp -d "$CACHE/bin/.agent-sandbox-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "building $MODULE $AGENT_SANDBOX_VERSION into $BIN (first run: a few minutes; cached after)"
say "Go's download and build output: $LOG"
echo "=== $MODULE $AGENT_SANDBOX_VERSION $(date -u +%FT%TZ)" >"$LOG"
if ! build >>"$LOG" 2>&1; then
  say "building failed; last lines of $LOG:"
  tail -n 30 "$LOG" >&2
  exit 1
fi
say "built in $((SECONDS - start)) s"
echo "$BIN"
