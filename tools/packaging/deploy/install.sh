#!/usr/bin/env bash
# `make install` / `make uninstall` (Documentation/deploy.md). The layout (FHS):
#
#   $PREFIX/bin/                 ripple-agent, ripplectl, ripple-run, ripple-profile
#   $PREFIX/lib/                 libripple-cuhook.so (where it was built: needs the CUDA
#                                headers); ripple-run finds it at ../lib/ beside itself
#   $PREFIX/lib/systemd/system/  ripple-agent.service (paths substituted)
#   $SYSCONFDIR/ripple/          ripple.toml, only if there is none (never overwritten)
#   $PREFIX/share/doc/ripple/    README.md, Documentation/*.md, ripple.toml.example
#
# Not installed: ripple-bench (runs from the source tree, it drives the build's programs),
# the robot workloads and ripple-mix (test and benchmark programs; the workloads would
# make OpenCV a dependency of the daemon's package) and the benchmarks.
#
#   O=build PREFIX=/usr/local SYSCONFDIR=/etc DESTDIR= [UNITDIR=$PREFIX/lib/systemd/system] \
#     tools/packaging/deploy/install.sh install|uninstall|list
# (the Debian package sets UNITDIR=/lib/systemd/system, where Debian 12's debhelper looks)
#
# uninstall removes what install put there; the configuration only if it is still the
# shipped example (a sysadmin's edits are kept, and it says so).
set -euo pipefail

src=$(cd "$(dirname "$0")/../../.." && pwd)
O=${O:-$src/build}
PREFIX=${PREFIX:-/usr/local}
SYSCONFDIR=${SYSCONFDIR:-/etc}
DESTDIR=${DESTDIR:-}
bindir=$PREFIX/bin libdir=$PREFIX/lib unitdir=${UNITDIR:-$PREFIX/lib/systemd/system}
docdir=$PREFIX/share/doc/ripple confdir=$SYSCONFDIR/ripple

programs=(ripple-agent ripplectl ripple-run ripple-profile)
docs=("$src/README.md" "$src"/Documentation/*.md)
example=$src/tools/packaging/deploy/ripple.toml

say() { printf '  %-8s %s\n' "$1" "$2"; }

# Every installed path (without DESTDIR) but the configuration, one a line.
list() {
  local p d
  for p in "${programs[@]}"; do echo "$bindir/$p"; done
  [ -e "$O/lib/libripple-cuhook.so" ] && echo "$libdir/libripple-cuhook.so"
  echo "$unitdir/ripple-agent.service"
  for d in "${docs[@]}"; do echo "$docdir/$(basename "$d")"; done
  echo "$docdir/ripple.toml.example"
}

unit() { # the unit with this install's paths
  sed -e "s|@BINDIR@|$bindir|g" -e "s|@SYSCONFDIR@|$SYSCONFDIR|g" -e "s|@DOCDIR@|$docdir|g" \
    "$src/tools/packaging/deploy/ripple-agent.service.in"
}

do_install() {
  local p d
  for p in "${programs[@]}"; do
    [ -x "$O/bin/$p" ] || { echo "install.sh: $O/bin/$p is not built (run make first)" >&2; exit 1; }
  done
  install -d -m 0755 "$DESTDIR$bindir" "$DESTDIR$libdir" "$DESTDIR$unitdir" "$DESTDIR$docdir" "$DESTDIR$confdir"
  for p in "${programs[@]}"; do
    install -m 0755 "$O/bin/$p" "$DESTDIR$bindir/$p" && say INSTALL "$bindir/$p"
  done
  if [ -e "$O/lib/libripple-cuhook.so" ]; then
    install -m 0644 "$O/lib/libripple-cuhook.so" "$DESTDIR$libdir/" && say INSTALL "$libdir/libripple-cuhook.so"
  else
    echo "install.sh: libripple-cuhook.so was not built (no CUDA headers): ripple-run will not work" >&2
  fi
  unit > "$DESTDIR$unitdir/ripple-agent.service.tmp"
  chmod 0644 "$DESTDIR$unitdir/ripple-agent.service.tmp"
  mv -f "$DESTDIR$unitdir/ripple-agent.service.tmp" "$DESTDIR$unitdir/ripple-agent.service"
  say INSTALL "$unitdir/ripple-agent.service"
  for d in "${docs[@]}"; do install -m 0644 "$d" "$DESTDIR$docdir/"; done
  install -m 0644 "$example" "$DESTDIR$docdir/ripple.toml.example"
  say INSTALL "$docdir/ ($(( ${#docs[@]} + 1 )) files)"
  if [ -e "$DESTDIR$confdir/ripple.toml" ]; then
    say KEEP "$confdir/ripple.toml (exists; the shipped example is $docdir/ripple.toml.example)"
  else
    install -m 0644 "$example" "$DESTDIR$confdir/ripple.toml" && say INSTALL "$confdir/ripple.toml"
  fi
}

do_uninstall() {
  local f
  while read -r f; do
    if [ -e "$DESTDIR$f" ] || [ -L "$DESTDIR$f" ]; then rm -f "$DESTDIR$f" && say REMOVE "$f"; fi
  done < <(list; echo "$libdir/libripple-cuhook.so")
  if [ -e "$DESTDIR$confdir/ripple.toml" ]; then
    if cmp -s "$example" "$DESTDIR$confdir/ripple.toml"; then
      rm -f "$DESTDIR$confdir/ripple.toml" && say REMOVE "$confdir/ripple.toml"
    else
      say KEEP "$confdir/ripple.toml (edited; remove it by hand)"
    fi
  fi
  # Only the directories that are ours, and only when empty.
  rmdir "$DESTDIR$docdir" "$DESTDIR$confdir" 2>/dev/null || true
}

case ${1:-} in
  install) do_install ;;
  uninstall) do_uninstall ;;
  list) list ;;
  *) echo "usage: $0 install|uninstall|list" >&2; exit 2 ;;
esac
