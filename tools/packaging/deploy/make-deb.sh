#!/usr/bin/env bash
# `make deb`: packages the built tree with Debian's tooling (dpkg-buildpackage,
# debhelper: dh_shlibdeps computes Depends from the binaries' shared libraries,
# dh_installsystemd adds the unit's enable/disable scripts, /etc files become conffiles).
#
#   O=build RIPPLE_VERSION=... tools/packaging/deploy/make-deb.sh    -> $O/deb/ripple_<version>_<arch>.deb
set -euo pipefail
src=$(cd "$(dirname "$0")/../../.." && pwd)
O=$(cd "${O:-$src/build}" && pwd)
for tool in dpkg-buildpackage dh; do
  command -v "$tool" >/dev/null || { echo "make deb: $tool missing (apt install dpkg-dev debhelper)" >&2; exit 1; }
done
version=${RIPPLE_VERSION:-0.1.0+$(git -C "$src" rev-list --count HEAD 2>/dev/null || echo 0).g$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo 0)}
top=$O/deb
work=$top/ripple-$version
rm -rf "$top"
mkdir -p "$work"
cp -r "$src/tools/packaging/deploy/debian" "$work/debian"
cat >"$work/debian/changelog" <<CHANGELOG
ripple ($version) unstable; urgency=medium

  * Built from $(git -C "$src" describe --always --dirty 2>/dev/null || echo "an unversioned tree").

 -- Ripple developers <ripple@localhost>  $(date -R)
CHANGELOG
cd "$work"
# The outer make's flags and variables (O=, PREFIX=, ...) must not reach the install step.
unset MAKEFLAGS MAKELEVEL MFLAGS
export RIPPLE_SRC=$src RIPPLE_O=$O
if ! dpkg-buildpackage -b -us -uc >"$top/build.log" 2>&1; then
  tail -n 30 "$top/build.log" >&2
  echo "make deb: dpkg-buildpackage failed; the whole log is $top/build.log" >&2
  exit 1
fi
deb=$(ls "$top"/ripple_"$version"_*.deb)
echo "  DEB      ${deb#"$src"/}"
