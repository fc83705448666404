# Shared by hack/node-up.sh and hack/node-down.sh (sourced, not run).
# Everything the local node owns lives under $STATE; the few paths that cannot
# be moved there are listed in OUTSIDE_PATHS and cleaned by node-down.

CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}
STATE=${TURNWATCH_NODE_DIR:-$CACHE/node}
PIDS="$STATE/pids"
LOGS="$STATE/logs"
PKI="$STATE/pki"
RUN="$STATE/run"
SOCK="$RUN/containerd.sock"
KUBECONFIG_ADMIN="$STATE/admin.kubeconfig"
NODE_NAME=localhost

# Addresses: all loopback. The apiserver sits on the first address of the
# service range, so the `kubernetes` Service points straight at it.
API_IP=127.0.100.1
API_PORT=443
SERVICE_CIDR=127.0.100.0/24
ETCD_PORT=23790
ETCD_PEER_PORT=23800
KUBELET_PORT=10250
KUBELET_HEALTHZ_PORT=10248
SCHEDULER_PORT=10259
KCM_PORT=10257

# Paths outside $STATE that the kubelet or containerd hard-code.
# (Both flex-volume folders are moved by flags; /usr/libexec/kubernetes is
# listed in case a component creates it anyway.)
OUTSIDE_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /var/lib/cni /usr/libexec/kubernetes)

# The processes, in start order; node-down stops them in reverse.
COMPONENTS=(etcd kube-apiserver containerd kube-controller-manager kube-scheduler kubelet)

say() { printf 'node: %s\n' "$*" >&2; }
die() { printf 'node: error: %s\n' "$*" >&2; exit 1; }

# pid_of NAME prints the recorded pid of NAME if that process is still alive.
pid_of() {
  local f="$PIDS/$1.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: the process must still run our binary.
  if [ -f "$PIDS/$1.exe" ]; then
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(cat "$PIDS/$1.exe")" ] || return 1
  fi
  echo "$pid"
}

# stop NAME...: TERM them all at once, wait up to 10 s, then KILL the rest.
# Quiet for the ones not running.
stop() {
  local name pid i left
  local -a names=() pids=()
  for name in "$@"; do
    if pid=$(pid_of "$name"); then
      kill -TERM "$pid" 2>/dev/null || true
      names+=("$name") pids+=("$pid")
    fi
    rm -f "$PIDS/$name.pid" "$PIDS/$name.exe"
  done
  for i in $(seq 1 100); do
    left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 1 ] || break
    sleep 0.1
  done
  for i in "${!pids[@]}"; do
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      say "${names[$i]} (pid ${pids[$i]}) ignored SIGTERM for 10s: killing"
      kill -KILL "${pids[$i]}" 2>/dev/null || true
    fi
    say "stopped ${names[$i]} (pid ${pids[$i]})"
  done
}
