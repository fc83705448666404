#!/usr/bin/env bash
# Installs the five agent CLIs at their pinned versions (hack/clis.tsv) with
# npm, each into its own folder under ~/.cache/turnwatch/clis (never into the
# repo), and links their commands into one folder, whose path it prints on its
# last line. A warm cache answers in well under a second.
#
#   hack/clis.sh [COMMAND...]   (default: all five)
#
# npm's lifecycle scripts fetch the native binaries of claude, codex and
# opencode (platform packages); gemini and pi run on the machine's node.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${TURNWATCH_CACHE:-$HOME/.cache/turnwatch}/clis
BIN="$CACHE/bin"
say() { echo "clis: $*" >&2; }
mkdir -p "$BIN"
exec 9>"$CACHE/.lock"
flock 9

want=("$@")
while IFS=$'\t' read -r cmd pkg version kind; do
  case "$cmd" in ''|'#'*) continue ;; esac
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " $cmd " ]]; then continue; fi
  dir="$CACHE/$(echo "$pkg@$version" | tr '/@' '__')"
  exe="$dir/node_modules/.bin/$cmd"
  if [ ! -e "$dir/.installed" ]; then
    command -v npm >/dev/null || { say "npm is needed to install $pkg (apt-get install npm)"; exit 1; }
    say "installing $pkg@$version"
    rm -rf "$dir" && mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$pkg@$version" >"$dir.log" 2>&1 \
      || { say "npm install $pkg@$version failed; see $dir.log"; tail -n 20 "$dir.log" >&2; exit 1; }
    touch "$dir/.installed"
  fi
  if [ "$kind" = config ]; then
    # Not a command: a folder to copy where the CLI keeps its config.
    ln -sfn "$dir" "$BIN/$cmd"
  else
    ln -sfn "$exe" "$BIN/$cmd"
  fi
done < hack/clis.tsv
echo "$BIN"
