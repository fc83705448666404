#!/usr/bin/env bash
# make demo: builds what it needs, brings up the local single-node cluster
# (hack/node-up.sh), installs the CRDs and the sidecar's admission policy, runs
# the manager as a local process, applies config/samples/demo (a looping agent,
# a whitespace-spiral agent, a silent agent and a healthy agent, all played by
# the scripted fake agent, and the real Claude Code looping against the
# scripted model, which runs as a local process too), waits for them, and
# prints the fault story.
#
#   hack/demo.sh          run the demo
#   hack/demo.sh down     stop the manager and tear down what the demo started
#
# USE_CURRENT_CLUSTER=1 uses the cluster of the current kubeconfig instead of a
# local node. That cluster must run the images turnwatch.dev/fakeagent:dev and
# turnwatch.dev/sidecar:dev with imagePullPolicy Never (load them from
# `make images`' archives under ~/.cache/turnwatch/images), and allow hostNetwork
# (the demo labels its namespace turnwatch.dev/host-network=allowed);
# the claude-looping run needs agent-claude:2.1.328 (hack/cli-images.sh) and its
# Pod on this machine, whose loopback the scripted model listens on
# (127.0.0.1:17863, the address its manifest names).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}
STATE="$CACHE/demo"
NS=turnwatch-demo
RUNS=(looping whitespace-spiral silent healthy claude-looping)
MODEL_ADDR=127.0.0.1:17863 # config/samples/demo/claude-looping.yaml's ANTHROPIC_BASE_URL
TIMEOUT=${DEMO_TIMEOUT:-300}
T0=$SECONDS
step() { printf '\ndemo: [%4ss] %s\n' "$((SECONDS - T0))" "$*" >&2; }

KUBECTL=(kubectl)
k() { "${KUBECTL[@]}" "$@"; }

# stop_process stops the local process whose pid is in $STATE/$1.pid.
stop_process() {
  [ -f "$STATE/$1.pid" ] || return 0
  local pid
  pid=$(cat "$STATE/$1.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/$1.pid"
}
stop_manager() { stop_process manager; stop_process model; }

down() {
  if [ -f "$STATE/current-cluster" ]; then
    # The runs first, while the manager runs: it releases their finalizers,
    # without which the namespace would stay Terminating.
    k -n "$NS" delete agentruns --all --ignore-not-found --timeout=60s || true
    stop_manager
    k delete namespace "$NS" --ignore-not-found --wait=false || true
  else
    stop_manager
    hack/node-down.sh
  fi
  rm -rf "$STATE"
  echo "demo: down" >&2
}

# first_requests lists the requests of claude-looping's model that opened a
# conversation (step 0: no tool answer yet; side requests, such as a title,
# left out), with how many messages each carried: the same small number for
# the first turn and its reroll means the reroll started fresh.
first_requests() {
  sed 's/,"body".*//' "$STATE/model.log" | grep -v '"side":true' |
    sed -n 's/^{"seq":\([0-9]*\),.*"step":0,"prompts":[0-9]*,"messages":\([0-9]*\),.*/#\1 (\2 messages)/p' | paste -sd' ' -
}

phase_of() { k -n "$NS" get agentrun "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true; }

wait_for_runs() {
  local start=$SECONDS next=0 line done
  while :; do
    line="" done=0
    for r in "${RUNS[@]}"; do
      p=$(phase_of "$r")
      line+=" $r=${p:-Pending}"
      case "$p" in Succeeded|Faulted|Aborted) done=$((done + 1)) ;; esac
    done
    if [ "$SECONDS" -ge "$next" ] || [ "$done" = ${#RUNS[@]} ]; then
      printf 'demo: [%4ss]%s\n' "$((SECONDS - T0))" "$line" >&2
      next=$((SECONDS + 5))
    fi
    [ "$done" = ${#RUNS[@]} ] && return 0
    if [ $((SECONDS - start)) -ge "$TIMEOUT" ]; then
      echo "demo: runs not finished after ${TIMEOUT}s; manager log: $STATE/manager.log" >&2
      tail -n 20 "$STATE/manager.log" >&2 || true
      return 1
    fi
    sleep 1
  done
}

up() {
  mkdir -p "$STATE"
  step "building the Kubernetes binaries (first run: ~15 min on 2 cores, then cached in $CACHE)"
  BINDIR=$(hack/kube-bins.sh | tail -n1)

  if [ "${USE_CURRENT_CLUSTER:-0}" = 1 ]; then
    k version >/dev/null || { echo "demo: the current kubeconfig's cluster is not reachable" >&2; exit 1; }
    touch "$STATE/current-cluster"
    KC=${KUBECONFIG:-$HOME/.kube/config}
    step "using the current cluster ($(k config current-context))"
  else
    step "bringing up the local single-node cluster (hack/node-up.sh)"
    KC=$(hack/node-up.sh | tail -n1)
    KUBECTL=("$BINDIR/kubectl" --kubeconfig "$KC")
  fi

  step "building the manager, the sidecar and the fake agent; packing their images (no Docker)"
  make -s images >/dev/null
  step "Claude Code $(awk '$1 == "claude" {print $3}' hack/clis.tsv) from npm (first run: under a minute), packed as an image (hack/cli-images.sh)"
  hack/cli-images.sh claude >/dev/null

  step "installing the CRDs, the sidecar's ClusterRole and the admission policies"
  k apply --server-side -f config/crd/bases >/dev/null
  # The policies' CRDs too: the limits admission policies take them as parameters.
  for crd in agentruns.turnwatch.dev agentturns.turnwatch.dev turnpolicies.turnwatch.dev clusterturnpolicies.turnwatch.dev; do
    # Polled: `kubectl wait` errors out on a CRD whose status is not written yet,
    # and so does this jsonpath (quietly: it is not a failure, only early).
    for _ in $(seq 120); do
      [ "$(k get crd "$crd" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && break
      sleep 0.5
    done
  done
  k apply --server-side --force-conflicts -k config/sidecar >/dev/null

  step "starting the manager (log: $STATE/manager.log)"
  stop_manager
  # 3>&- .. 9>&-: the manager outlives the demo and must not hold the lock of
  # a flock(1) the demo was run under (the e2e node lock, as a rule).
  KUBECONFIG=$KC setsid bin/images/manager --sidecar-image=turnwatch.dev/sidecar:dev \
    --metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:0 \
    >"$STATE/manager.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$STATE/manager.pid"

  step "starting the scripted model for Claude Code on $MODEL_ADDR, playing identicalLoop (log: $STATE/model.log)"
  setsid bin/images/turnwatch-sidecar model --scenario identicalLoop --listen "$MODEL_ADDR" --log "$STATE/model.log" \
    >"$STATE/model.out" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$STATE/model.pid"
  for _ in $(seq 50); do [ -s "$STATE/model.out" ] && break; sleep 0.1; done
  grep -q '^http://' "$STATE/model.out" || { echo "demo: the scripted model did not start:" >&2; cat "$STATE/model.out" >&2; exit 1; }

  step "applying config/samples/demo: ${RUNS[*]}"
  k create namespace "$NS" --dry-run=client -o yaml | k apply -f - >/dev/null
  # The administrator's consent to the node's network, which every Pod on the
  # local node needs (docs/policies.md#pod-security, docs/e2e.md).
  k label namespace "$NS" turnwatch.dev/host-network=allowed --overwrite >/dev/null
  k -n "$NS" delete agentruns --all --ignore-not-found >/dev/null
  k apply -k config/samples/demo

  step "waiting for the runs (the looping and whitespace agents trip, are rerolled, trip again)"
  wait_for_runs

  step "kubectl get agentruns -n $NS"
  k -n "$NS" get agentruns
  echo
  k -n "$NS" get agentturns
  step "kubectl describe agentrun looping -n $NS"
  k -n "$NS" describe agentrun looping
  step "the real Claude Code, looping against the scripted model: kubectl describe agentrun claude-looping -n $NS"
  k -n "$NS" describe agentrun claude-looping
  step "what the scripted model was told: $(grep -c . "$STATE/model.log") requests; those opening a conversation: $(first_requests)"
  step "the silent agent was nudged, not stopped: kubectl get events --field-selector involvedObject.name=silent -n $NS"
  k -n "$NS" get events --field-selector involvedObject.name=silent
  step "done in $((SECONDS - T0))s. Look around with: export KUBECONFIG=$KC; kubectl -n $NS get agentruns. Tear down: make demo-down"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) echo "usage: hack/demo.sh [up|down]" >&2; exit 2 ;;
esac
