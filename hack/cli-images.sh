#!/usr/bin/env bash
# Builds an image of each agent CLI at its pinned version (hack/clis.tsv),
# without Docker, and imports it into the local node's containerd when the
# node is up: agent-<command>:<version>, the image config/samples/cli_*.yaml
# name.
#
#   hack/cli-images.sh [--no-import] [COMMAND...]   (default: all five)
#
# Each image holds the CLI's npm install (hack/clis.sh) under /opt/<command>,
# its command on PATH, node when the command is a node script, a shell and the
# few programs the CLIs and the scripted model's tools call (bash, coreutils,
# grep, sed, find), each with the shared libraries ldd names, copied from
# this machine (a Debian userland). Nothing is fetched here: the CLIs come
# from hack/clis.sh's cache. opencode's plugin SDK is pre-installed in
# /root/.config/opencode, or opencode fetches it at every start.
#
# The archives are cached under ~/.cache/turnwatch/images with a stamp of
# what went in; an unchanged image is neither rebuilt nor re-imported.
# Prints the archives' folder on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}
OUT="$CACHE/images"
NODE_DIR=${TURNWATCH_NODE_DIR:-$CACHE/node}
SOCK="$NODE_DIR/run/containerd.sock"
say() { echo "cli-images: $*" >&2; }

import=1
[ "${1:-}" != --no-import ] || { import=0; shift; }
want=("$@")

# The programs every image gets, beside the CLI (a shell is what each CLI's
# shell tool runs; the rest is what they and the tests' tool calls use).
PROGRAMS=(bash sh dash cat echo env ls sleep head tail grep sed mkdir rm cp mv
  printf true false id uname which sort wc tr cut tee touch date basename
  dirname readlink realpath stat chmod find xargs pwd mktemp ln kill)

bins=$(hack/clis.sh | tail -n1)
mkdir -p "$OUT"

# add copies PATH from this machine into the root file system $root at its
# canonical folder, following symlinks (each link is kept as a link).
add() {
  local p=$1 dir name
  dir=$(readlink -f "$(dirname "$p")")
  name=$(basename "$p")
  [ -e "$root$dir/$name" ] || [ -L "$root$dir/$name" ] && return 0
  mkdir -p "$root$dir"
  cp -a "$dir/$name" "$root$dir/$name"
  if [ -L "$dir/$name" ]; then
    local t
    t=$(readlink "$dir/$name")
    case "$t" in /*) ;; *) t="$dir/$t" ;; esac
    add "$t"
  fi
}

# libs adds the shared libraries ldd finds for the ELF file $1 (none for a
# static or foreign binary; a library this machine lacks is left out, as it
# would be missing on any host).
libs() {
  local l
  for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true); do
    [ -e "$l" ] && add "$l"
  done
}

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = 177ELF ]; }

build() {
  local cmd=$1 pkg=$2 version=$3
  local ref="agent-$cmd:$version" dir exe stamp key file
  dir="$CACHE/clis/$(echo "$pkg@$version" | tr '/@' '__')"
  exe=$(readlink -f "$bins/$cmd")
  file="$OUT/${ref%:*}-${ref##*:}.tar"
  stamp="$file.stamp"
  key="$pkg@$version node=$(node --version) script=$(sha256sum "$0" hack/image.sh | sha256sum | cut -c1-16)"
  if [ -f "$file" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
    say "$ref: cached"
  else
    say "$ref: building from $dir"
    root=$(mktemp -d "$OUT/.rootfs.XXXXXX")
    # A Debian-shaped tree: /bin, /lib, /lib64 and /sbin are links into /usr.
    mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" "$root/opt" "$root/root" "$root/usr/local/bin"
    for l in bin sbin lib lib64; do ln -s "usr/$l" "$root/$l"; done
    chmod 0700 "$root/root"
    for p in "${PROGRAMS[@]}"; do
      local at
      at=$(type -P "$p") || { say "this machine has no $p"; exit 1; }
      add "$at"
      is_elf "$(readlink -f "$at")" && libs "$(readlink -f "$at")"
    done
    add /usr/lib/os-release
    ln -s ../usr/lib/os-release "$root/etc/os-release" 2>/dev/null || { mkdir -p "$root/etc"; ln -s ../usr/lib/os-release "$root/etc/os-release"; }
    # The npm install, linked (not copied) into the tree: tar reads through.
    cp -al "$dir" "$root/opt/$cmd"
    rm -f "$root/opt/$cmd/.installed"
    ln -s "/opt/$cmd/${exe#"$dir"/}" "$root/usr/local/bin/$cmd"
    if [ "$(head -c 2 "$exe")" = '#!' ]; then
      add "$(command -v node)"
      libs "$(readlink -f "$(command -v node)")"
    fi
    # Native parts of the package: its binaries and node addons.
    while IFS= read -r f; do
      is_elf "$f" && libs "$f"
    done < <(find "$dir" -type f \( -name '*.node' -o -name '*.so*' -o -perm -u+x \) -path '*linux*' -o -type f -name '*.exe' -o -type f -path '*/build/Release/*.node')
    if [ "$cmd" = opencode ]; then
      mkdir -p "$root/root/.config"
      cp -al "$(readlink -f "$bins/opencode-config")" "$root/root/.config/opencode"
      rm -f "$root/root/.config/opencode/.installed"
    fi
    printf 'root:x:0:0:root:/root:/bin/bash\nnonroot:x:65532:65532:nonroot:/home/nonroot:/bin/sh\n' >"$root/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
    chmod 0644 "$root/etc/passwd" "$root/etc/group"
    IMAGE_TAG=$version hack/image.sh --no-import --rootfs "$root" --entrypoint "/usr/local/bin/$cmd" \
      --env HOME=/root --env SHELL=/bin/bash "$ref" >/dev/null
    rm -rf "$root"
    echo "$key" >"$stamp"
  fi
  [ "$import" = 1 ] || return 0
  if [ ! -S "$SOCK" ]; then say "node not up ($SOCK missing): $ref built only"; return 0; fi
  # ctr names the image's manifest digest; the last import's is kept beside the archive.
  local listed="docker.io/library/$ref"
  if [ -f "$file.imported" ] && ctr --address "$SOCK" -n k8s.io images ls 2>/dev/null |
      grep -q "^$listed .*$(cat "$file.imported")"; then
    say "$ref: already in the node's containerd"
  else
    ctr --address "$SOCK" -n k8s.io images import "$file" >/dev/null
    ctr --address "$SOCK" -n k8s.io images ls 2>/dev/null | awk -v r="$listed" '$1 == r {print $3}' >"$file.imported"
    say "$ref: imported into the node's containerd"
  fi
}

while IFS=$'\t' read -r cmd pkg version kind; do
  case "$cmd" in ''|'#'*) continue ;; esac
  [ "$kind" != config ] || continue
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " $cmd " ]]; then continue; fi
  build "$cmd" "$pkg" "$version"
done < hack/clis.tsv
echo "$OUT"
