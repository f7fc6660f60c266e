#!/usr/bin/env bash
# Installs the Debian packages listed in tools/packaging/deps/debian-packages.txt that are
# missing, and on an x86_64 (amd64) host those of debian-packages-arm64.txt (the
# aarch64 cross build and its emulated suites; it adds the arm64 architecture to
# dpkg first). Idempotent and quiet when nothing is missing, so `make check` and
# `make demo` call it every time.
#   tools/packaging/deps/install.sh          install what is missing
#   tools/packaging/deps/install.sh --check  only report what is missing (exit 1 if any)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
native=$(dpkg --print-architecture)
lists=("$here/debian-packages.txt")
[ "$native" = amd64 ] && lists+=("$here/debian-packages-arm64.txt")
mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "${lists[@]}" | grep -v '^$')

missing=()
for p in "${pkgs[@]}"; do
  # One line per installed architecture: with arm64 added, an unqualified name also
  # reports the package's arm64 instance, which does not make the native one present.
  want=$native; [[ $p == *:* ]] && want=${p#*:}
  st=$(dpkg-query -W -f='${Architecture} ${db:Status-Status}\n' "$p" 2>/dev/null || true)
  grep -qE "^($want|all) installed$" <<<"$st" || missing+=("$p")
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
for p in "${missing[@]}"; do
  a=${p#*:}
  if [ "$a" != "$p" ] && ! dpkg --print-foreign-architectures | grep -qx "$a"; then
    dpkg --add-architecture "$a"
  fi
done
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
