#!/usr/bin/env bash
# TAP: `make deb` builds ripple_<version>_<arch>.deb with Debian's tooling; the package
# holds the programs, the interposer, the unit and the docs, declares the shared
# libraries the binaries link as Depends (dpkg-shlibdeps), keeps /etc/ripple/ripple.toml
# as a conffile and enables (not starts) the unit. Skipped, counted, without
# dpkg-buildpackage/debhelper. Installing it is in Documentation/deploy.md.
set -u
O=${O:-build}
O=$(cd "$O" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
tmp=$(mktemp -d /tmp/ripple-deb-tap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
plan=7
echo "TAP version 13"
echo "1..$plan"

if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
  for _ in $(seq $plan); do n=$((n + 1)); echo "ok $n # SKIP dpkg-buildpackage or debhelper missing (apt install dpkg-dev debhelper)"; done
  exit 0
fi

if make -s --no-print-directory -C "$src" O="$O" deb >"$tmp/log" 2>&1; then ok "make deb exits 0: $(grep DEB "$tmp/log" | sed 's/^ *//')"
else not_ok "make deb exits 0" "$(tail -8 "$tmp/log")"; fi
deb=$(ls "$O"/deb/ripple_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || deb=/nonexistent

dpkg-deb -c "$deb" >"$tmp/contents" 2>&1
missing=()
for f in ./usr/bin/ripple-agent ./usr/bin/ripplectl ./usr/bin/ripple-run ./usr/bin/ripple-profile \
  ./lib/systemd/system/ripple-agent.service ./etc/ripple/ripple.toml ./usr/share/doc/ripple/deploy.md \
  ./usr/share/doc/ripple/copyright ./usr/share/doc/ripple/ripple.toml.example; do
  grep -q " $f\$" "$tmp/contents" || missing+=("$f")
done
if [ -e "$O/lib/libripple-cuhook.so" ]; then
  grep -q ' ./usr/lib/libripple-cuhook.so$' "$tmp/contents" || missing+=(./usr/lib/libripple-cuhook.so)
fi
if [ ${#missing[@]} -eq 0 ]; then ok "dpkg-deb -c: programs, interposer, unit, configuration and docs"
else not_ok "dpkg-deb -c lists every file" "missing: ${missing[*]}"; fi

if awk '{print $2}' "$tmp/contents" | grep -qv '^root/root$'; then not_ok "every file is root-owned" "$(awk '$2 != "root/root"' "$tmp/contents" | head -3)"
else ok "every file is owned by root/root"; fi

depends=$(dpkg-deb -f "$deb" Depends 2>/dev/null)
# What the binaries really link (their NEEDED sonames), each to its Debian package.
want=()
for b in "$O"/bin/ripple-agent "$O"/bin/ripplectl "$O"/bin/ripple-run "$O"/bin/ripple-profile; do
  for so in $(readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    pkg=$(dpkg -S "*/$so" 2>/dev/null | awk -v so="/$so" -v a=":$(dpkg --print-architecture):" 'index($0, a) && substr($0, length($0) - length(so) + 1) == so {print; exit}' | cut -d: -f1)
    [ -n "$pkg" ] && [[ " ${want[*]} " != *" $pkg "* ]] && want+=("$pkg")
  done
done
absent=()
for p in "${want[@]}"; do [[ ",$depends," == *[\ ,]$p[\ ,]* ]] || absent+=("$p"); done
if [ ${#want[@]} -ge 6 ] && [ ${#absent[@]} -eq 0 ]; then ok "Depends names the ${#want[@]} packages the programs link (${want[*]})"
else not_ok "Depends from the shared libraries" "Depends: $depends" "want: ${want[*]}" "absent: ${absent[*]}"; fi

if [[ "$depends" != *libcuda* && "$depends" != *nvidia* ]]; then ok "no dependency on the CUDA driver (the interposer dlopens it)"
else not_ok "no CUDA driver dependency" "Depends: $depends"; fi

dpkg-deb -e "$deb" "$tmp/ctl" 2>/dev/null
if grep -qx /etc/ripple/ripple.toml "$tmp/ctl/conffiles" 2>/dev/null; then ok "/etc/ripple/ripple.toml is a conffile (an edited one survives upgrades)"
else not_ok "configuration is a conffile" "$(cat "$tmp/ctl/conffiles" 2>&1)"; fi

if grep -q 'deb-systemd-helper.*enable.*ripple-agent.service' "$tmp/ctl/postinst" 2>/dev/null &&
  ! grep -q 'deb-systemd-invoke.*start' "$tmp/ctl/postinst"; then
  ok "postinst enables ripple-agent.service and does not start it"
else not_ok "postinst enables, does not start" "$(grep -n systemd "$tmp/ctl/postinst" 2>&1 | head -5)"; fi
[ "$failed" -eq 0 ]
