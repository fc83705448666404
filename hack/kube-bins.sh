#!/usr/bin/env bash
# Builds the Kubernetes and etcd binaries that envtest, e2e and the demo share,
# from the Go module proxy, and caches them by version outside the repo.
#
#   hack/kube-bins.sh [BINARY...]   (default: all of them)
#
# Prints the folder holding the binaries on its last line. With a warm cache it
# takes well under a second. A cold build says which binary it builds (n of the
# ones missing), how long it has run so far (every 30 s while one builds), and
# keeps Go's download and build output in a log file whose path it prints.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
STAGING_VERSION=${STAGING_VERSION:-v0.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
CNI_VERSION=${CNI_VERSION:-v1.9.1}
CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
SRC="$CACHE/src"
ALL=(etcd kube-apiserver kubectl kube-scheduler kube-controller-manager kubelet loopback)
WANT=("$@")
[ ${#WANT[@]} -gt 0 ] || WANT=("${ALL[@]}")

say() { echo "kube-bins: $*" >&2; }
mkdir -p "$BIN"
LOG="$CACHE/bin/kube-bins.log"
# Warm cache: answer without the lock, so callers that only need the folder
# (node-up, envtest) never wait behind someone else's build of other binaries.
all_there=1
for b in "${WANT[@]}"; do [ -x "$BIN/$b" ] || all_there=0; done
if [ "$all_there" = 1 ]; then echo "$BIN"; exit 0; fi
# One build at a time: a second caller waits for the first and then finds the cache warm.
exec 9>"$CACHE/bin/.lock"
flock 9

missing() {
  local out=()
  for b in "$@"; do [ -x "$BIN/$b" ] || out+=("$b"); done
  echo "${out[@]:-}"
}

build_etcd() {
  local dir="$SRC/etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  cat >"$dir/main.go" <<'GO'
// Command etcd is etcd's server, built from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$dir" && { [ -f go.mod ] || go mod init turnwatch.local/etcd; } &&
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" &&
    go mod tidy &&
    CGO_ENABLED=0 go build -trimpath -o "$BIN/etcd" .)
}

write_main() { # dir import call
  mkdir -p "$1"
  cat >"$1/main.go" <<GO
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	app "$2"
)

var _ = context.Background

func main() { os.Exit(cli.$4(app.$3)) }
GO
}

# kubectl's cli.RunNoErrOutput returns an error (not an exit code) that
# kubectl prints itself, the way upstream cmd/kubectl does.
write_kubectl_main() {
  mkdir -p "$1"
  cat >"$1/main.go" <<'GO'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
	os.Exit(0)
}
GO
}

# prepare_kube: the wrapper module of the Kubernetes binaries (resolved once).
prepare_kube() {
  local dir="$SRC/kube-$K8S_VERSION"
  mkdir -p "$dir"
  write_main "$dir/cmd/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver/app "NewAPIServerCommand()" Run
  write_main "$dir/cmd/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler/app "NewSchedulerCommand()" Run
  write_main "$dir/cmd/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager/app "NewControllerManagerCommand()" Run
  write_main "$dir/cmd/kubelet" k8s.io/kubernetes/cmd/kubelet/app "NewKubeletCommand(context.Background())" Run
  write_kubectl_main "$dir/cmd/kubectl"
  if [ ! -f "$dir/go.sum" ]; then
    echo "resolving k8s.io/kubernetes $K8S_VERSION (staging modules at $STAGING_VERSION)"
    (cd "$dir" && rm -f go.mod && go mod init turnwatch.local/kube
     go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
     gomod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
     args=(-require="k8s.io/kubernetes@$K8S_VERSION")
     for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9.-]*\) => ./staging/.*#\1#p' "$gomod"); do
       args+=(-replace="$m=$m@$STAGING_VERSION")
     done
     go mod edit "${args[@]}"
     go mod tidy)
  fi
}

# build_kube BINARY: one binary of the wrapper module. Built one at a time so
# the progress can name it; the first pays for the shared packages, the others
# reuse Go's build cache.
build_kube() {
  local dir="$SRC/kube-$K8S_VERSION"
  # Stamp the version: kubectl refuses an apiserver that says v0.0.0-master.
  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$BIN/" "./cmd/$1")
}

build_loopback() {
  GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath \
    "github.com/containernetworking/plugins/plugins/main/loopback@$CNI_VERSION"
}

elapsed() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# heartbeat WHAT: every 30 s, say what is still building and for how long, so a
# cold build (minutes per binary) never looks hung. Killed by the caller; it
# takes its sleep with it, so no stray sleep holds the caller's pipe or lock.
heartbeat() {
  local s=""
  trap 'kill $s 2>/dev/null; exit 0' TERM
  while :; do
    sleep "${KUBE_BINS_HEARTBEAT:-30}" &
    s=$!
    wait "$s"
    say "  ... still building $1 ($(elapsed) so far)"
  done
}

# step LABEL NAME FUNCTION ARGS...: one build step, its output in $LOG.
step() {
  local label=$1 name=$2 hb rc=0
  shift 2
  say "$label $name ($(elapsed) so far)"
  echo "=== $label $name $(date -u +%FT%TZ)" >>"$LOG"
  heartbeat "$name" </dev/null >/dev/null 9>&- &
  hb=$!
  "$@" >>"$LOG" 2>&1 || rc=$?
  kill "$hb" 2>/dev/null || true
  wait "$hb" 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    say "building $name failed; last lines of $LOG:"
    tail -n 30 "$LOG" >&2
    exit "$rc"
  fi
}

read -r -a need <<<"$(missing "${WANT[@]}")"
if [ ${#need[@]} -gt 0 ] && [ -n "${need[0]}" ]; then
  start=$SECONDS
  : >"$LOG"
  say "building ${need[*]} into $BIN (first run: up to ~15 min on 2 cores; cached after)"
  say "Go's download and build output: $LOG"
  n=0 kube_ready=0
  for b in "${need[@]}"; do
    n=$((n + 1))
    case "$b" in
      etcd) step "[$n/${#need[@]}]" "etcd $ETCD_VERSION" build_etcd ;;
      loopback) step "[$n/${#need[@]}]" "CNI loopback $CNI_VERSION" build_loopback ;;
      *)
        if [ "$kube_ready" = 0 ]; then
          step "[$n/${#need[@]}]" "(modules of k8s.io/kubernetes $K8S_VERSION)" prepare_kube
          kube_ready=1
        fi
        step "[$n/${#need[@]}]" "$b $K8S_VERSION" build_kube "$b"
        ;;
    esac
  done
  say "built ${#need[@]} binaries in $(elapsed) (log: $LOG)"
fi
echo "$BIN"
