#!/usr/bin/env bash
# Tears down the local node of hack/node-up.sh and leaves nothing behind:
# stops every component by its recorded pid, kills and deletes containerd's
# tasks, unmounts, removes the kubepods cgroups and the few paths the kubelet
# and containerd hard-code outside the state folder, then the state folder.
# Safe to run twice: with nothing up it says so and exits 0.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=node/lib.sh
. "$HERE/node/lib.sh"

if [ ! -d "$STATE" ]; then
  say "nothing to tear down ($STATE does not exist)"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "tearing down the local node needs root"

# The kubelet first, so it does not restart what we stop next.
stop kubelet

# Kill and delete every task and container while containerd still answers.
if pid_of containerd >/dev/null && [ -S "$SOCK" ]; then
  c() { timeout 20 ctr --address "$SOCK" -n k8s.io "$@"; }
  tasks=$(c tasks ls -q 2>/dev/null || true)
  # --force kills each task with SIGKILL first; then the shims exit.
  [ -z "$tasks" ] || c tasks delete --force $tasks >/dev/null 2>&1 || true
  containers=$(c containers ls -q 2>/dev/null || true)
  [ -z "$containers" ] || c containers delete $containers >/dev/null 2>&1 || true
  [ -z "$tasks" ] || say "deleted $(echo "$tasks" | wc -w) containerd tasks"
fi
stop containerd

# Shims outlive containerd by design; ours are the ones serving our socket.
for p in /proc/[0-9]*; do
  cmd=$( { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null) || continue
  case "$cmd" in
    *containerd-shim*"-address $SOCK "*)
      kill -KILL "${p#/proc/}" 2>/dev/null && say "killed leftover shim ${p#/proc/}" || true ;;
  esac
done

stop kube-scheduler kube-controller-manager kube-apiserver
stop etcd

# Unmount everything below our folders, deepest first.
created=()
[ -f "$STATE/outside-created" ] && mapfile -t created <"$STATE/outside-created"
unmount_under() {
  local root=$1 m
  { awk '{print $5}' /proc/self/mountinfo | grep -E "^$root(/|$)" || true; } | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "could not unmount $m"
  done
}
unmount_under "$STATE"
for p in "${created[@]}"; do unmount_under "$p"; done

# Remove the kubepods cgroups: kill anything still inside, then rmdir
# depth-first (cgroup directories cannot be removed with rm -r).
for top in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods.slice /sys/fs/cgroup/kubepods.slice; do
  [ -d "$top" ] || continue
  { find "$top" -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | sort -u | while read -r pid; do
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  done
  for _ in $(seq 1 20); do
    find "$top" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ -d "$top" ] || break
    sleep 0.2
  done
  [ ! -d "$top" ] || say "could not remove cgroup $top"
done

# Paths outside $STATE: remove the ones we created; in the ones that existed
# before, remove only our entries (links into our pod log folder).
for p in "${created[@]}"; do rm -rf --one-file-system "$p"; done
if [ -d /var/log/containers ]; then
  find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null || true
fi
if [ -d /run/containerd/s ]; then
  # Shim sockets of ours whose shims are gone: dangling sockets nobody listens on.
  for s in /run/containerd/s/*; do
    [ -S "$s" ] || continue
    ss -Hxl src "$s" 2>/dev/null | grep -q . || rm -f "$s"
  done
  rmdir /run/containerd/s /run/containerd 2>/dev/null || true
fi

rm -rf --one-file-system "$STATE"
[ ! -e "$STATE" ] || die "could not remove $STATE (a mount left? see /proc/self/mountinfo)"
say "down: nothing left behind"
