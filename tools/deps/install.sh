#!/usr/bin/env bash
# Installs the Debian packages listed in tools/deps/debian-packages.txt that are
# missing. Idempotent and quiet when nothing is missing, so `make check` and
# `make demo` call it every time.
#   tools/deps/install.sh          install what is missing
#   tools/deps/install.sh --check  only report what is missing (exit 1 if any)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here/debian-packages.txt" | grep -v '^$')

missing=()
for p in "${pkgs[@]}"; do
  # One line per installed architecture (a multiarch machine may also hold the arm64 one).
  st=$(dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -m1 -x installed || true)
  [ "$st" = installed ] || missing+=("$p")
done

[ ${#missing[@]} -eq 0 ] && exit 0
if [ "${1:-}" = --check ]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: missing packages (${missing[*]}) and not root; run: sudo $0" >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
