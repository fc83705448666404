#!/usr/bin/env bash
# Prints, on its last line, the folder holding envtest's etcd, kube-apiserver and
# kubectl, building them from the Go module proxy on the first run (hack/kube-bins.sh).
set -euo pipefail
exec "$(dirname "$0")/kube-bins.sh" etcd kube-apiserver kubectl
