#!/usr/bin/env bash
# Writes the BTF of Debian's current kernel for ARCH (a foreign architecture) to OUT,
# as raw BTF that bpftool reads like /sys/kernel/btf/vmlinux. The cross build makes
# its vmlinux.h from it (Makefile, Documentation/build.md).
#
#   tools/packaging/cross/kernel-btf.sh ARCH OUT        ARCH: arm64
#
# How: the linux-image-ARCH metapackage names the current kernel ABI; apt-get download
# fetches that kernel's -unsigned image package (nothing is installed), and the kernel
# image in it, built with CONFIG_DEBUG_INFO_BTF=y, carries its .BTF section verbatim
# (between __start_BTF and __stop_BTF). The blob is found by its header (magic 0xeB9F,
# version 1, 24-byte header, types then strings) and checked by letting bpftool parse it.
# OUT.version records which kernel package it came from; the kernel image is kept
# beside OUT as vmlinuz (tests/cross/bpf_arm64_vm.sh boots it).
set -euo pipefail
arch=${1:?usage: kernel-btf.sh ARCH OUT} out=${2:?usage: kernel-btf.sh ARCH OUT}
die() { echo "kernel-btf.sh: $*" >&2; exit 1; }

meta="linux-image-$arch:$arch"
image=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/ { sub(/:.*/, "", $2); print $2; exit }')
[ -n "$image" ] || die "apt knows no $meta: run tools/packaging/deps/install.sh as root (it adds the $arch architecture), or set VMLINUX_BTF=path/to/btf"

work=$(mktemp -d "${TMPDIR:-/tmp}/kernel-btf.XXXXXX")
trap 'rm -rf "$work"' EXIT
for try in 1 2 3; do   # a mirror's hiccup is not a build failure
  (cd "$work" && apt-get download -qq "$image-unsigned:$arch" 2>&1 |
    grep -v '^W: Download is performed unsandboxed' >&2 || true)
  ls "$work"/*.deb >/dev/null 2>&1 && break
  sleep $((try * 5))
done
deb=$(ls "$work"/*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || die "apt-get download $image-unsigned:$arch fetched nothing"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
vmlinuz=$(ls "$work"/boot/vmlinuz-* | head -n1)

python3 - "$vmlinuz" "$out" <<'PY'
import gzip, struct, sys
data = open(sys.argv[1], "rb").read()
if data[:2] == b"\x1f\x8b":            # a gzip-compressed Image (other configs)
    data = gzip.decompress(data)
head = b"\x9f\xeb\x01\x00\x18\x00\x00\x00"   # magic 0xeB9F LE, version 1, flags 0, hdr_len 24
i = data.find(head)
while i >= 0:
    type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, i + 8)
    end = i + 24 + str_off + str_len
    if type_off == 0 and str_off == type_len and type_len > 1 << 20 and end <= len(data) \
            and data[i + 24 + str_off] == 0:       # the string section starts with ""
        open(sys.argv[2], "wb").write(data[i:end])
        sys.exit(0)
    i = data.find(head, i + 1)
sys.exit("kernel-btf.sh: no BTF blob in " + sys.argv[1])
PY
bpftool btf dump file "$out" >/dev/null || die "bpftool cannot read the BTF taken from $vmlinuz"
echo "$(basename "$deb")" > "$out.version"
# The kernel itself, for tests/cross/bpf_arm64_vm.sh (the same kernel as the BTF).
cp "$vmlinuz" "$(dirname "$out")/vmlinuz"
