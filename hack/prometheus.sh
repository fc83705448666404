#!/usr/bin/env bash
# Makes sure a Prometheus server binary is installed (Debian's `prometheus`
# package) and prints its path on the last line. The e2e's metrics test runs
# it on loopback against the manager; nothing here starts a service: the
# package's own service start is refused while it installs (policy-rc.d), so
# no Prometheus listens on the machine's addresses.
#
#   hack/prometheus.sh        install when missing (as root, with apt-get)
set -euo pipefail

if command -v prometheus >/dev/null; then command -v prometheus; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "prometheus: not installed, and installing needs root (apt-get install prometheus)" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "prometheus: not installed and there is no apt-get" >&2; exit 1; }
log=$(mktemp /tmp/turnwatch-prometheus-apt.XXXXXX)
echo "prometheus: installing Debian's prometheus package (log: $log)" >&2
# Refuse service starts during the install unless a policy is already there.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && made_policy=1
fi
trap '[ "$made_policy" = 0 ] || rm -f "$policy"' EXIT
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >>"$log" 2>&1; }
install || { apt-get update >>"$log" 2>&1 && install; } || { echo "prometheus: apt-get failed; last lines of $log:" >&2; tail -n 20 "$log" >&2; exit 1; }
command -v prometheus
