#!/usr/bin/env bash
# The arm64 BPF tests on an arm64 kernel (TAP). qemu-user cannot load BPF programs, so
# this boots the arm64 kernel of the cross build's BTF (Debian's, kept by
# tools/cross/kernel-btf.sh as $O/arm64/btf/vmlinux's sibling vmlinuz) in a full-system
# emulator (qemu-system-aarch64, TCG, no disk: an initramfs with busybox, the aarch64
# build of tests/bpf/tracer_test, tests/progs/periodic and their libraries), runs the
# BPF test runner there as root and prints its TAP. The emulated CPU is tens of times
# slower, so the runner checks what the tracer sees but not its timing
# (RIPPLE_BPFTEST_TIMING=0). Skipped (one TAP skip) where qemu-system-aarch64 is missing.
set -uo pipefail
O=${O:-build}
A=$O/arm64
kernel=$A/btf/vmlinux
kernel=${kernel%/*}/vmlinuz
runner=$A/tests/bpf/tracer_test periodic=$A/tests/progs/periodic
VM_TIMEOUT_S=${VM_TIMEOUT_S:-420}
skip() { echo "1..1"; echo "ok 1 - arm64 BPF tests on an arm64 kernel # SKIP $*"; exit 0; }
command -v qemu-system-aarch64 >/dev/null || skip "no qemu-system-aarch64 (qemu-system-arm)"
command -v cpio >/dev/null || skip "no cpio"
for f in "$kernel" "$runner" "$periodic" /lib/ld-linux-aarch64.so.1; do
  [ -r "$f" ] || { echo "1..1"; echo "not ok 1 - arm64 BPF tests: $f missing (make ARCH=arm64)"; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ripple-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,lib/aarch64-linux-gnu,proc,sys,dev,tmp,run,t/tests/bpf,t/tests/progs}

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
cp "$runner" "$root/t/tests/bpf/" && cp "$periodic" "$root/t/tests/progs/"
cp -L /lib/ld-linux-aarch64.so.1 "$root/lib/"
# The runner's libraries, as the aarch64 loader resolves them (binfmt or qemu-user).
libs=$( { /lib/ld-linux-aarch64.so.1 --list "$runner"; /lib/ld-linux-aarch64.so.1 --list "$periodic"; } 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
[ -n "$libs" ] || libs=$(printf '/lib/aarch64-linux-gnu/%s\n' libbpf.so.1 libelf.so.1 libz.so.1 libc.so.6)
for l in $libs; do cp -L "$l" "$root/lib/aarch64-linux-gnu/"; done
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /run
mount -t tracefs tracefs /sys/kernel/tracing; mount -t bpf bpf /sys/fs/bpf
echo "# ripple-vm: $(uname -r) $(uname -m)"
echo "=== ripple-vm: begin"
RIPPLE_BPFTEST_TIMING=0 /t/tests/bpf/tracer_test
echo "=== ripple-vm: exit $?"
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
sed -n '/^=== ripple-vm: begin/,/^=== ripple-vm: exit/p' "$work/console.txt" | sed '1d;$d'
status=$(sed -n 's/^=== ripple-vm: exit \([0-9]*\)$/\1/p' "$work/console.txt")
if [ -z "$status" ]; then
  echo "not ok 999 - the arm64 VM did not finish (qemu exit $rc); console tail:"
  tail -n 15 "$work/console.txt" | sed 's/^/# /'
  exit 1
fi
exit "$status"
