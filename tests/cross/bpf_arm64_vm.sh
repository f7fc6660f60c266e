#!/usr/bin/env bash
# The arm64 BPF tests on an arm64 kernel (TAP). qemu-user cannot load BPF programs, so
# this boots the arm64 kernel of the cross build's BTF (Debian's, kept by
# tools/packaging/cross/kernel-btf.sh beside $O/arm64/btf/vmlinux as vmlinuz) in a full-system
# emulator (qemu-system-aarch64, TCG, no disk: an initramfs with busybox, the aarch64
# builds of tests/bpf/tracer_test, tests/integration/tracer_test, tests/progs/periodic
# and their libraries), runs both as root and reports their cases as one TAP stream
# (bpf/… from the kselftest runner, integration/… from GoogleTest). The emulated CPU is
# tens of times slower, so they check what the tracer sees but not its timing
# (RIPPLE_BPFTEST_TIMING=0). Skipped (one TAP skip) where qemu-system-aarch64 is missing.
set -uo pipefail
O=${O:-build}
A=$O/arm64
kernel=$A/btf/vmlinux
kernel=${kernel%/*}/vmlinuz
runner=$A/tests/bpf/tracer_test it=$A/tests/integration/tracer_test periodic=$A/tests/progs/periodic
VM_TIMEOUT_S=${VM_TIMEOUT_S:-420}
skip() { echo "1..1"; echo "ok 1 - arm64 BPF tests on an arm64 kernel # SKIP $*"; exit 0; }
command -v qemu-system-aarch64 >/dev/null || skip "no qemu-system-aarch64 (qemu-system-arm)"
command -v cpio >/dev/null || skip "no cpio"
for f in "$kernel" "$runner" "$it" "$periodic" /lib/ld-linux-aarch64.so.1; do
  [ -r "$f" ] || { echo "1..1"; echo "not ok 1 - arm64 BPF tests: $f missing (make ARCH=arm64)"; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ripple-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,lib/aarch64-linux-gnu,proc,sys,dev,tmp,run,t/tests/bpf,t/tests/integration,t/tests/progs}

# busybox (static, arm64) from Debian, downloaded once per build directory.
bb=$A/vm/busybox
if [ ! -x "$bb" ]; then
  mkdir -p "$A/vm"
  (cd "$work" && apt-get download -qq busybox-static:arm64 2>&1 | grep -v 'unsandboxed' >&2 || true)
  deb=$(ls "$work"/busybox-static_*.deb 2>/dev/null | head -n1)
  [ -n "$deb" ] || skip "apt-get download busybox-static:arm64 failed"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" ./bin/busybox && mv "$work/bin/busybox" "$bb"
fi
cp "$bb" "$root/bin/busybox"
cp "$runner" "$root/t/tests/bpf/" && cp "$it" "$root/t/tests/integration/" && cp "$periodic" "$root/t/tests/progs/"
cp -L /lib/ld-linux-aarch64.so.1 "$root/lib/"
# The runner's libraries, as the aarch64 loader resolves them (binfmt or qemu-user).
libs=$(for p in "$runner" "$it" "$periodic"; do /lib/ld-linux-aarch64.so.1 --list "$p"; done 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
[ -n "$libs" ] || { echo "1..1"; echo "not ok 1 - cannot list the runners' aarch64 libraries (tools/packaging/deps/binfmt.sh arm64)"; exit 1; }
for l in $libs; do cp -L "$l" "$root/lib/aarch64-linux-gnu/"; done
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /run
mount -t tracefs tracefs /sys/kernel/tracing; mount -t bpf bpf /sys/fs/bpf
echo "# ripple-vm: $(uname -r) $(uname -m)"
export RIPPLE_BPFTEST_TIMING=0
echo "=== ripple-vm: bpf"
/t/tests/bpf/tracer_test
echo "=== ripple-vm: bpf exit $?"
echo "=== ripple-vm: integration"
/t/tests/integration/tracer_test --gtest_color=no
echo "=== ripple-vm: integration exit $?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

timeout -k 10 "$VM_TIMEOUT_S" qemu-system-aarch64 -M virt -cpu max -smp 2 -m 1024 -nographic \
  -no-reboot -net none -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyAMA0 quiet panic=-1" </dev/null >"$work/console.log" 2>&1
rc=$?
tr -d '\r' <"$work/console.log" >"$work/console.txt"
echo "# $(grep -m1 '^# ripple-vm:' "$work/console.txt" | sed 's/^# //') ($(head -c 200 "$O/arm64/btf/vmlinux.version" 2>/dev/null))"
# One TAP stream: each runner's output as comments, its cases renumbered.
awk -v rc="$rc" '
  function emit(ok, name, directive) { n++; printf "%s %d - %s%s\n", ok ? "ok" : "not ok", n, name, directive; if (!ok) bad = 1 }
  /^=== ripple-vm: (bpf|integration)$/ { part = $3; seen[part] = 1; next }
  /^=== ripple-vm: (bpf|integration) exit / { status[$3] = $5; if ($5 != 0) exited_bad = 1; part = ""; next }
  part == "" { next }
  { print "# " $0 }
  part == "bpf" && /^(not )?ok [0-9]+ / {
    ok = ($1 == "ok"); name = ok ? $3 : $4; d = ""
    if (match($0, /# *[Ss][Kk][Ii][Pp].*/)) d = " " substr($0, RSTART)
    emit(ok, "bpf/" name, d) }
  part == "integration" && /^\[       OK \] [^ ]+ \(/ { emit(1, "integration/" $4, "") }
  part == "integration" && /^\[  FAILED  \] [^ ]+ \(/ { emit(0, "integration/" $4, "") }
  part == "integration" && /^\[  SKIPPED \] [^ ]+ \(/ { emit(1, "integration/" $4, " # SKIP") }
  END {
    if (!seen["bpf"] || !("bpf" in status)) emit(0, "bpf runner finished in the arm64 VM (qemu exit " rc ")", "")
    if (!seen["integration"] || !("integration" in status)) emit(0, "integration runner finished in the arm64 VM (qemu exit " rc ")", "")
    printf "1..%d\n", n
    exit (bad || exited_bad) ? 1 : 0
  }' "$work/console.txt"
status=$?
[ "$status" -eq 0 ] || tail -n 15 "$work/console.txt" | sed 's/^/# console: /'
exit "$status"
