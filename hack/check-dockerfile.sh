#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine (none runs here):
#  1. every COPY source (outside --from stages) exists in the repo;
#  2. the build stage's WORKDIR/COPY/RUN steps run as a script in a scratch
#     folder, so the same commands that build the image build here too.
# The run stage is FROM scratch and copies only the build outputs, which the
# script checks exist after step 2.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-Dockerfile}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
fail() { echo "check-dockerfile: $*" >&2; exit 1; }

stage=0
workdir=/
while read -r instr rest; do
  case "${instr^^}" in
    FROM) stage=$((stage + 1)) ;;
    WORKDIR) workdir=$rest; mkdir -p "$root$workdir" ;;
    COPY)
      [[ $rest == --from=* ]] && { from_outputs+=("${rest#--from=* }"); continue; }
      read -r -a args <<<"$rest"
      dest=${args[-1]}
      for src in "${args[@]:0:${#args[@]}-1}"; do
        compgen -G "$src" >/dev/null || fail "COPY source '$src' does not exist"
        [ "$stage" = 1 ] || continue
        target=$root$workdir/$dest
        [[ $dest == /* ]] && target=$root$dest
        mkdir -p "$(dirname "$target")"
        # Docker copies a directory's contents, and a file into a folder dest ending in '/'.
        if [ -d "$src" ]; then mkdir -p "$target"; cp -r "$src"/. "$target"
        elif [[ $dest == */ ]]; then mkdir -p "$target"; cp "$src" "$target"
        else cp "$src" "$target"; fi
      done ;;
    RUN)
      [ "$stage" = 1 ] || fail "RUN outside the build stage: $rest"
      cmd=${rest// \// $root/}
      echo "check-dockerfile: RUN $rest" >&2
      (cd "$root$workdir" && bash -euo pipefail -c "$cmd") || fail "RUN failed: $rest" ;;
  esac
done < <(sed -e 's/#.*//' -e '/^\s*$/d' "$file")

for line in "${from_outputs[@]}"; do
  read -r -a args <<<"$line"
  for src in "${args[@]:0:${#args[@]}-1}"; do
    [ -e "$root$src" ] || fail "the run stage copies '$src', which the build stage did not produce"
  done
done
echo "check-dockerfile: ok ($file)" >&2
