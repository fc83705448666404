#!/usr/bin/env bash
# Builds a container image from static binaries with nothing but tar and
# sha256sum (no Docker engine, no registry), as a docker-archive tar, and
# imports it into the local node's containerd when that node is up.
#
#   hack/image.sh [--no-import] [--user UID] NAME BINARY...
#   hack/image.sh [--no-import] [--user UID] --rootfs DIR --entrypoint PATH [--env K=V]... NAME
#
# NAME is the image name without a tag (turnwatch.dev/NAME:dev unless NAME
# holds a '/' or a ':'). The binaries go to /usr/local/bin/; the first one is
# the entrypoint. With --rootfs, DIR is the whole root file system as it is
# (hack/cli-images.sh builds one per agent CLI); /etc/passwd, /etc/group and
# /tmp are added when DIR has none. The archive is deterministic: the same
# files give the same image ID, so re-importing an unchanged image is a no-op
# for pods.
#
# Prints the archive's path on its last line. Env: IMAGE_TAG (default dev),
# TURNWATCH_CACHE (default ~/.cache/turnwatch), TURNWATCH_NODE_DIR (the node's
# state folder, whose containerd socket is used for the import).
set -euo pipefail

CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}
NODE_DIR=${TURNWATCH_NODE_DIR:-$CACHE/node}
SOCK="$NODE_DIR/run/containerd.sock"
TAG=${IMAGE_TAG:-dev}
import=1
user=""
tree=""
entry=""
envs=("PATH=/usr/local/bin:/usr/bin:/bin")

usage() {
  echo "usage: hack/image.sh [--no-import] [--user UID] NAME BINARY..." >&2
  echo "       hack/image.sh [--no-import] [--user UID] --rootfs DIR --entrypoint PATH [--env K=V]... NAME" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --no-import) import=0; shift ;;
    --user) user=$2; shift 2 ;;
    --rootfs) tree=$2; shift 2 ;;
    --entrypoint) entry=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    *) break ;;
  esac
done
if [ -n "$tree" ]; then
  [ $# -eq 1 ] && [ -n "$entry" ] && [ -d "$tree" ] || usage
else
  [ $# -ge 2 ] || usage
fi
name=$1; shift
case "$name" in
  */*|*:*) ref=$name ;;
  *) ref="turnwatch.dev/$name:$TAG" ;;
esac
[[ "$ref" == *:* ]] || ref="$ref:$TAG"

for b in "$@"; do
  [ -f "$b" ] && [ -x "$b" ] || { echo "image: $b is not an executable file" >&2; exit 1; }
  if ! head -c 4 "$b" | grep -q $'\x7fELF'; then echo "image: $b is not an ELF binary" >&2; exit 1; fi
done

out="$CACHE/images"
mkdir -p "$out"
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The root file system: the binaries (or DIR), /tmp, and a passwd naming root
# and nonroot.
if [ -n "$tree" ]; then
  rootfs=$tree
else
  rootfs="$work/rootfs"
  mkdir -p "$rootfs/usr/local/bin"
  for b in "$@"; do install -m 0755 "$b" "$rootfs/usr/local/bin/$(basename "$b")"; done
  chmod 0755 "$rootfs/usr" "$rootfs/usr/local" "$rootfs/usr/local/bin"
  entry="/usr/local/bin/$(basename "$1")"
fi
mkdir -p "$rootfs/etc" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
chmod 0755 "$rootfs" "$rootfs/etc"
if [ ! -e "$rootfs/etc/passwd" ]; then
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
  chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group"
fi

det=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu)
tar "${det[@]}" -C "$rootfs" -cf "$work/layer.tar" .
layer=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)

userfield=""
[ -z "$user" ] || userfield=",\"User\":\"$user\""
envjson=$(printf '"%s",' "${envs[@]}")
cat >"$work/config.json" <<JSON
{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Entrypoint":["$entry"],"Env":[${envjson%,}],"WorkingDir":"/"$userfield},"rootfs":{"type":"layers","diff_ids":["sha256:$layer"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"hack/image.sh"}]}
JSON
# Strip the trailing newline so the config digest does not depend on the heredoc.
printf '%s' "$(cat "$work/config.json")" >"$work/config.min"
config=$(sha256sum "$work/config.min" | cut -d' ' -f1)

arch="$work/archive"
mkdir -p "$arch/$layer"
mv "$work/layer.tar" "$arch/$layer/layer.tar"
mv "$work/config.min" "$arch/$config.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$config" "$ref" "$layer" >"$arch/manifest.json"

file="$out/$(echo "${ref%:*}" | tr '/' '_')-${ref##*:}.tar"
tar "${det[@]}" --mode=u+rwX,go+rX,go-w -C "$arch" -cf "$file.tmp" manifest.json "$config.json" "$layer"
mv "$file.tmp" "$file"
echo "image: $ref  id sha256:${config:0:12}  ($(du -h "$file" | cut -f1))" >&2

if [ "$import" = 1 ]; then
  if [ -S "$SOCK" ]; then
    ctr --address "$SOCK" -n k8s.io images import "$file" >/dev/null
    echo "image: imported $ref into the node's containerd" >&2
  else
    echo "image: node not up ($SOCK missing): built only" >&2
  fi
fi
echo "$file"
