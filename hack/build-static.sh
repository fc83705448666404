#!/usr/bin/env bash
# Builds turnwatch's static binaries (manager, sidecar, turnwatch-hook, the kubectl plugin
# kubectl-turnwatch; with WITH_FAKEAGENT=1 also
# the scripted fake agent of the e2e tests and the demo) into OUT.
# The Dockerfile's build stage and the local images of hack/image.sh both run
# this script, so the image and the e2e/demo images come from the same build.
#
#   hack/build-static.sh OUT
set -euo pipefail
out=${1:?usage: build-static.sh OUT}
mkdir -p "$out"
export CGO_ENABLED=0
flags=(-trimpath -ldflags "-s -w")
go build "${flags[@]}" -o "$out/manager" ./cmd/manager
go build "${flags[@]}" -o "$out/turnwatch-sidecar" ./cmd/turnwatch-sidecar
# The nudge hook the sidecar copies into the volume it shares with the agent.
go build "${flags[@]}" -o "$out/turnwatch-hook" ./cmd/turnwatch-hook
go build "${flags[@]}" -o "$out/kubectl-turnwatch" ./cmd/kubectl-turnwatch
if [ "${WITH_FAKEAGENT:-0}" = 1 ]; then
  go build "${flags[@]}" -o "$out/fakeagent" ./test/fakeagent
fi
