#!/usr/bin/env bash
# TAP: `make install` into a DESTDIR puts every file where Documentation/deploy.md
# says, with a usable configuration and a unit naming the installed binary; a second
# install keeps an edited configuration; `make uninstall` removes every installed file
# and leaves the edited configuration alone. No root needed.
set -u
O=${O:-build}
O=$(cd "$O" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }
tmp=$(mktemp -d /tmp/ripple-install-tap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mk() { make -s --no-print-directory -C "$src" O="$O" "$@"; }

echo "TAP version 13"
echo "1..12"
root=$tmp/root
if mk install DESTDIR="$root" PREFIX=/usr >"$tmp/log" 2>&1; then ok "make install DESTDIR=... PREFIX=/usr exits 0"
else not_ok "make install DESTDIR=... PREFIX=/usr exits 0" "$(tail -5 "$tmp/log")"; fi

mapfile -t files < <(O=$O PREFIX=/usr "$src/tools/packaging/deploy/install.sh" list)
missing=()
for f in "${files[@]}"; do [ -f "$root$f" ] || missing+=("$f"); done
if [ ${#missing[@]} -eq 0 ] && [ ${#files[@]} -ge 10 ]; then ok "all ${#files[@]} listed files installed"
else not_ok "all listed files installed" "missing: ${missing[*]}"; fi

bad=()
for p in ripple-agent ripplectl ripple-run ripple-profile; do
  [ -x "$root/usr/bin/$p" ] && [ "$(stat -c %a "$root/usr/bin/$p")" = 755 ] || bad+=("$p")
done
if [ ${#bad[@]} -eq 0 ]; then ok "the four programs are in usr/bin, mode 0755"; else not_ok "programs in usr/bin" "${bad[*]}"; fi

if [ -e "$O/lib/libripple-cuhook.so" ]; then
  # ripple-run looks for the interposer at ../lib beside itself.
  check "usr/lib/libripple-cuhook.so is where ripple-run looks (../lib), mode 0644" \
    test "$(stat -c %a "$root/usr/bin/../lib/libripple-cuhook.so" 2>/dev/null)" = 644
else
  n=$((n + 1)); echo "ok $n # SKIP libripple-cuhook.so not built here (no CUDA headers)"
fi

unit=$root/usr/lib/systemd/system/ripple-agent.service
if grep -qx 'ExecStart=/usr/bin/ripple-agent --config /etc/ripple/ripple.toml' "$unit" && ! grep -qE '@[A-Z]+@' "$unit"; then
  ok "the unit starts /usr/bin/ripple-agent with /etc/ripple/ripple.toml, no placeholder left"
else not_ok "unit paths substituted" "$(grep -nE 'Exec|@[A-Z]+@' "$unit")"; fi

conf=$root/etc/ripple/ripple.toml
if cmp -s "$conf" "$src/tools/packaging/deploy/ripple.toml" && "$root/usr/bin/ripple-agent" --check -c "$conf" >"$tmp/check" 2>&1; then
  ok "etc/ripple/ripple.toml is the example and the installed agent accepts it: $(cat "$tmp/check")"
else not_ok "configuration installed and valid" "$(cat "$tmp/check")"; fi

echo '# edited by the sysadmin' >>"$conf"
mk install DESTDIR="$root" PREFIX=/usr >"$tmp/log2" 2>&1
if grep -q 'edited by the sysadmin' "$conf" && grep -q 'KEEP.*ripple.toml' "$tmp/log2"; then
  ok "a second install keeps an existing configuration and says so"
else not_ok "second install keeps the configuration" "$(tail -3 "$tmp/log2")"; fi

check "installed docs include deploy.md and the pristine example" \
  test -f "$root/usr/share/doc/ripple/deploy.md" -a -f "$root/usr/share/doc/ripple/ripple.toml.example"

mk uninstall DESTDIR="$root" PREFIX=/usr >"$tmp/log3" 2>&1
left=()
for f in "${files[@]}"; do [ -e "$root$f" ] && left+=("$f"); done
if [ ${#left[@]} -eq 0 ]; then ok "make uninstall removes all ${#files[@]} installed files"
else not_ok "uninstall removes every file" "left: ${left[*]}"; fi

if [ -f "$conf" ] && grep -q 'KEEP.*edited' "$tmp/log3"; then ok "make uninstall keeps the edited configuration and says so"
else not_ok "uninstall keeps an edited configuration" "$(cat "$tmp/log3")"; fi

# An unedited configuration goes with the rest, and so do our now-empty directories.
cp "$src/tools/packaging/deploy/ripple.toml" "$conf"
mk uninstall DESTDIR="$root" PREFIX=/usr >"$tmp/log4" 2>&1
if [ ! -e "$conf" ] && [ ! -d "$root/etc/ripple" ] && [ ! -d "$root/usr/share/doc/ripple" ]; then
  ok "an unedited configuration and the empty etc/ripple and share/doc/ripple are removed"
else not_ok "unedited configuration removed" "$(find "$root" -type f | head)"; fi

# The default prefix.
mk install DESTDIR="$tmp/local" >"$tmp/log5" 2>&1
if [ -x "$tmp/local/usr/local/bin/ripple-agent" ] &&
  grep -qx 'ExecStart=/usr/local/bin/ripple-agent --config /etc/ripple/ripple.toml' \
    "$tmp/local/usr/local/lib/systemd/system/ripple-agent.service" && [ -f "$tmp/local/etc/ripple/ripple.toml" ]; then
  ok "the default PREFIX is /usr/local; the configuration is still in /etc/ripple"
else not_ok "default PREFIX" "$(tail -3 "$tmp/log5")"; fi
[ "$failed" -eq 0 ]
