#!/usr/bin/env bash
# Brings up a real single-node Kubernetes cluster on this machine: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, and a kubelet with
# containerd and runc. No Docker, no registry, no network beyond loopback:
# every Pod must use hostNetwork, images come from hack/image.sh and run with
# imagePullPolicy: Never. See docs/e2e.md#why-each-setting for why each setting is here.
#
#   hack/node-up.sh            bring the node up, or reuse it when it is up
#   hack/node-up.sh --restart COMPONENT   stop and start one component
#                              (e2e uses this to restart the apiserver mid-run)
#   hack/node-up.sh --status   print up or down; exit 0 when up
#
# Everything lives under $TURNWATCH_NODE_DIR (default ~/.cache/turnwatch/node),
# processes are tracked by pid there, and hack/node-down.sh removes it all.
# The admin kubeconfig's path is printed on the last line.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=node/lib.sh
. "$HERE/node/lib.sh"

T0=$SECONDS
progress() { printf 'node: [%3ss] %s\n' "$((SECONDS - T0))" "$*" >&2; }

# wait_for DESCRIPTION TIMEOUT_S LOGNAME COMMAND...: poll until COMMAND
# succeeds, saying what it waits for every 5 s; on timeout show the log tail.
wait_for() {
  local what=$1 timeout=$2 log=$3 start=$SECONDS next=$((SECONDS + 5))
  shift 3
  until "$@" >/dev/null 2>&1; do
    if [ -n "$log" ] && [ -f "$PIDS/$log.pid" ] && ! pid_of "$log" >/dev/null; then
      say "$log exited while we waited for $what; last lines of $LOGS/$log.log:"
      tail -n 25 "$LOGS/$log.log" >&2 || true
      exit 1
    fi
    if [ $((SECONDS - start)) -ge "$timeout" ]; then
      say "timed out after ${timeout}s waiting for $what"
      [ -z "$log" ] || { say "last lines of $LOGS/$log.log:"; tail -n 25 "$LOGS/$log.log" >&2 || true; }
      exit 1
    fi
    if [ "$SECONDS" -ge "$next" ]; then
      progress "waiting for $what ($((SECONDS - start))s)"
      next=$((SECONDS + 5))
    fi
    sleep 0.3
  done
}

# start NAME BINARY ARGS...: run a component in its own session, logging to
# $LOGS/NAME.log, and record its pid.
start() {
  local name=$1 bin=$2
  shift 2
  # 3>&- .. 9>&-: the component must not inherit (and so hold) a lock: node-up's
  # own (fd 8), nor the one of a caller run under flock(1) (fd 3 as a rule),
  # which a node kept up would otherwise hold for as long as it runs.
  setsid "$bin" "$@" </dev/null >>"$LOGS/$name.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$PIDS/$name.pid"
  readlink -f "$bin" >"$PIDS/$name.exe"
}

kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# --- preflight: fail fast, and say why -------------------------------------

preflight() {
  [ "$(uname -s)" = Linux ] || die "the local node needs Linux (this is $(uname -s))"
  [ "$(id -u)" = 0 ] || die "the local node needs root: the kubelet, containerd and runc create cgroups, mounts and namespaces (run as root, e.g. 'sudo make test-e2e')"
  [ -d /sys/fs/cgroup ] || die "no /sys/fs/cgroup: cgroups are not mounted, the kubelet cannot run pods"
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGROUP=v2
  else
    CGROUP=v1
    local c
    for c in cpu memory pids; do
      [ -d "/sys/fs/cgroup/$c" ] || die "cgroup v1 controller '$c' is not mounted under /sys/fs/cgroup; the kubelet needs cpu, memory and pids"
    done
  fi
  local probe=/sys/fs/cgroup/memory/turnwatch-probe
  [ "$CGROUP" = v1 ] || probe=/sys/fs/cgroup/turnwatch-probe
  mkdir "$probe" 2>/dev/null && rmdir "$probe" ||
    die "cannot create a cgroup under ${probe%/*} (read-only cgroup file system, or not enough privilege): the kubelet cannot run pods here"
  grep -qw overlay /proc/filesystems || die "the kernel has no overlay file system: containerd's overlayfs snapshotter cannot run"
  local t
  for t in openssl tar sha256sum flock setsid go ss curl; do
    command -v "$t" >/dev/null || die "'$t' is missing from PATH"
  done
  if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || ! command -v ctr >/dev/null; then
    command -v apt-get >/dev/null || die "containerd and runc are missing and there is no apt-get to install them (need containerd 1.6 and runc 1.1)"
    progress "installing containerd and runc (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends containerd runc >"$STATE/apt.log" 2>&1 ||
      { apt-get update >>"$STATE/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends containerd runc >>"$STATE/apt.log" 2>&1; } ||
      die "apt-get could not install containerd and runc (see $STATE/apt.log)"
  fi
  local addr
  for addr in "$API_IP:$API_PORT" "127.0.0.1:$ETCD_PORT" "127.0.0.1:$ETCD_PEER_PORT" "127.0.0.1:$KUBELET_PORT" \
    "127.0.0.1:$KUBELET_HEALTHZ_PORT" "127.0.0.1:$SCHEDULER_PORT" "127.0.0.1:$KCM_PORT"; do
    if ss -Hltn "sport = :${addr##*:}" | awk '{print $4}' | grep -qE "^(${addr%:*}|0\.0\.0\.0|\*|\[::\]):${addr##*:}$"; then
      die "$addr is already in use by another process: the local node needs it (ss -ltnp shows who)"
    fi
  done
}

# --- reuse -----------------------------------------------------------------

running() { local c; for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done; }
any_running() { local c; for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null && return 0; done; return 1; }

# --- configuration files ---------------------------------------------------

write_kubeconfig() { # FILE USER CERTNAME
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: turnwatch-node
  cluster:
    server: https://$API_IP:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$3.crt
    client-key: $PKI/$3.key
contexts:
- name: turnwatch-node
  context:
    cluster: turnwatch-node
    user: $2
current-context: turnwatch-node
EOF
}

write_configs() {
  write_kubeconfig "$KUBECONFIG_ADMIN" turnwatch-admin admin
  write_kubeconfig "$STATE/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet
  write_kubeconfig "$STATE/scheduler.kubeconfig" system:kube-scheduler scheduler
  write_kubeconfig "$STATE/controller-manager.kubeconfig" system:kube-controller-manager controller-manager

  mkdir -p "$STATE/cni/bin" "$STATE/cni/net.d"
  install -m 0755 "$BIN/loopback" "$STATE/cni/bin/loopback"
  echo '{"cniVersion":"1.0.0","name":"loopback-only","plugins":[{"type":"loopback"}]}' >"$STATE/cni/net.d/10-loopback.conflist"

  cat >"$STATE/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "turnwatch.dev/pause:dev"
  # The sandbox drops CAP_SYS_RESOURCE: runc cannot set the pause container's
  # oom_score_adj to -998 ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$STATE/cni/bin"
    conf_dir = "$STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$STATE/runc"
EOF

  write_kubelet_config "$STATE/kubelet.yaml"
}

# write_kubelet_config FILE: the kubelet's configuration. A reused node whose
# kubelet runs an older one is restarted with this one (main).
write_kubelet_config() {
  cat >"$1" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
address: 127.0.0.1
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
readOnlyPort: 0
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
# Never collect the locally imported images: nothing could pull them back.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
podLogsDir: $STATE/pod-logs
volumePluginDir: $STATE/kubelet/volume-plugins
serializeImagePulls: false
registerNode: true
# Rotate container logs small and check often: e2e rotates an agent's log
# mid-run (TestSidecarKilledAfterRotation streams several MiB). Every other
# e2e stream is far below 1Mi (docs/e2e.md), so only that test rotates.
containerLogMaxSize: 1Mi
containerLogMaxFiles: 2
containerLogMonitorInterval: 3s
EOF
}

# --- the components --------------------------------------------------------

start_etcd() {
  start etcd "$BIN/etcd" --name default --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls "" --log-level warn
  wait_for "etcd" 60 etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  start kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$API_IP" --secure-port "$API_PORT" --advertise-address "$API_IP" \
    --endpoint-reconciler-type none --service-cluster-ip-range "$SERVICE_CIDR" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types Hostname \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --profiling=false
  wait_for "kube-apiserver" 90 kube-apiserver kubectl get --raw /readyz
}

start_containerd() {
  mkdir -p "$RUN" "$STATE/runc"
  start containerd "$(command -v containerd)" --config "$STATE/containerd.toml"
  wait_for "containerd" 30 containerd ctr --address "$SOCK" version
}

start_kcm() {
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials --leader-elect=false --allocate-node-cidrs=false \
    --flex-volume-plugin-dir "$STATE/kcm-volume-plugins"
}

start_scheduler() {
  start kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false
}

start_kubelet() {
  KUBELET_STARTED=$(date -u +%s)
  start kubelet "$BIN/kubelet" --config "$STATE/kubelet.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
    --hostname-override "$NODE_NAME" --root-dir "$STATE/kubelet"
}

# kubelet_up: start the kubelet and wait until it reports the node Ready.
# containerd answers `ctr version` before its CRI service is initialized; a
# kubelet started in that window exits at once ("server is not initialized
# yet"), which a busy machine hits. So an early exit with that message is
# retried, a few times, instead of failing the node.
kubelet_up() {
  local try
  for try in 1 2 3 4 5; do
    start_kubelet
    if (wait_for "node $NODE_NAME Ready" 120 kubelet node_ready); then return 0; fi
    pid_of kubelet >/dev/null && exit 1
    tail -n 5 "$LOGS/kubelet.log" | grep -q "not initialized yet" || exit 1
    progress "the kubelet started before containerd's CRI service was ready (try $try): starting it again"
    sleep 2
  done
  say "the kubelet kept exiting: containerd's CRI service never became ready (see $LOGS/containerd.log)"
  exit 1
}

# node_ready: the node is Ready by a heartbeat of the kubelet started last.
# A reused etcd still holds the Ready condition of a kubelet that is gone,
# and that condition alone would pass for a kubelet that just crashed.
node_ready() {
  local ready beat
  ready=$(kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null) || return 1
  [ "${ready%% *}" = True ] || return 1
  beat=$(date -u -d "${ready#* }" +%s 2>/dev/null) || return 1
  [ "$beat" -ge "${KUBELET_STARTED:-0}" ]
}
default_sa() { kubectl -n default get serviceaccount default && kubectl -n default get configmap kube-root-ca.crt; }

# restart COMPONENT: used by e2e to restart a component mid-run.
restart() {
  local c=$1
  case " ${COMPONENTS[*]} " in *" $c "*) ;; *) die "unknown component '$c' (one of: ${COMPONENTS[*]})" ;; esac
  running || die "the node is not up"
  BIN=$(cat "$STATE/bin-dir")
  stop "$c"
  case "$c" in
    etcd) start_etcd ;;
    kube-apiserver) start_apiserver ;;
    containerd) start_containerd ;;
    kube-controller-manager) start_kcm ;;
    kube-scheduler) start_scheduler ;;
    kubelet) kubelet_up ;;
  esac
  progress "restarted $c"
}

# refresh_kubelet: a node brought up by an older node-up runs the kubelet
# configuration of then; restart the kubelet when this script's differs, so
# a reused node behaves as a fresh one (CI starts fresh, local runs reuse).
refresh_kubelet() {
  local next="$STATE/kubelet.yaml.next"
  write_kubelet_config "$next"
  if cmp -s "$next" "$STATE/kubelet.yaml"; then
    rm -f "$next"
    return
  fi
  mv "$next" "$STATE/kubelet.yaml"
  progress "the kubelet configuration changed: restarting the kubelet"
  restart kubelet
}

# healthy: the apiserver answers /readyz with the admin credentials.
healthy() {
  curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://$API_IP:$API_PORT/readyz" >/dev/null 2>&1
}

main() {
  if [ "${1:-}" = --status ]; then
    if running && healthy; then echo up; else echo down; exit 1; fi
    return
  fi
  lock
  if [ "${1:-}" = --restart ]; then
    restart "${2:?--restart needs a component}"
    echo "$KUBECONFIG_ADMIN"
    return
  fi
  mkdir -p "$STATE"
  if running && healthy; then
    progress "already up (state in $STATE)"
    refresh_kubelet
    echo "$KUBECONFIG_ADMIN"
    return
  fi
  if any_running; then
    progress "a previous node is half up: tearing it down first"
    "$ROOT/hack/node-down.sh"
    mkdir -p "$STATE"
  fi
  preflight

  progress "Kubernetes binaries (hack/kube-bins.sh; the first build takes ~15 min, cached after)"
  BIN=$("$ROOT/hack/kube-bins.sh" | tail -n1)
  mkdir -p "$PIDS" "$LOGS" "$RUN" "$STATE/pod-logs"
  echo "$BIN" >"$STATE/bin-dir"
  # Remember which outside paths existed, so node-down removes only ours.
  : >"$STATE/outside-created"
  local p
  for p in "${OUTSIDE_PATHS[@]}"; do [ -e "$p" ] || echo "$p" >>"$STATE/outside-created"; done

  progress "pause image"
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$STATE/pause" ./hack/node/pause)
  "$ROOT/hack/image.sh" --no-import pause "$STATE/pause" >/dev/null 2>&1

  progress "certificates (openssl)"
  "$HERE/node/certs.sh" "$PKI" "$API_IP" "$NODE_NAME"
  write_configs

  progress "etcd"
  start_etcd
  progress "kube-apiserver on https://$API_IP:$API_PORT"
  start_apiserver
  progress "apiserver ready"
  kubectl create clusterrolebinding turnwatch-node:apiserver-kubelet \
    --clusterrole system:kubelet-api-admin --user kube-apiserver-kubelet-client >/dev/null 2>&1 || true

  progress "containerd"
  start_containerd
  "$ROOT/hack/image.sh" pause "$STATE/pause" >/dev/null

  progress "kube-controller-manager, kube-scheduler"
  start_kcm
  start_scheduler
  progress "kubelet"
  kubelet_up
  progress "node Ready"
  wait_for "the default ServiceAccount and kube-root-ca.crt" 60 kube-controller-manager default_sa
  progress "up: export KUBECONFIG=$KUBECONFIG_ADMIN (hack/node-down.sh tears it down)"
  echo "$KUBECONFIG_ADMIN"
}

main "$@"
