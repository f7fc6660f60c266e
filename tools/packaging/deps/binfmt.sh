#!/usr/bin/env bash
# Lets this x86_64 kernel run ARCH programs through qemu-user, for the emulated suites
# of `make check` (tests/cross/Build.mk): mounts binfmt_misc if needed and registers
# Debian's qemu-user-static entry (/usr/lib/binfmt.d/qemu-ARCH.conf, flags F: the
# interpreter is opened now, so it works in any mount namespace). The kernel, not a
# wrapper, must do it: the suites start further ARCH programs (the interposer's tests
# exec driver_app, ripple-run, ripple-profile). Quiet when nothing is to be done.
#   tools/packaging/deps/binfmt.sh ARCH          register if needed (root), then check
#   tools/packaging/deps/binfmt.sh --check ARCH  only check; exit 1 with the reason on stderr
# ARCH: arm64. Programs find their libraries through Debian's multiarch paths
# (libc6:arm64 puts the dynamic loader at /lib/ld-linux-aarch64.so.1).
set -u
check_only=0
[ "${1:-}" = --check ] && { check_only=1; shift; }
arch=${1:?usage: binfmt.sh [--check] ARCH}
case $arch in
  arm64) qarch=aarch64 loader=/lib/ld-linux-aarch64.so.1 ;;
  *) echo "binfmt.sh: no emulation set up for $arch" >&2; exit 1 ;;
esac
dir=/proc/sys/fs/binfmt_misc conf=/usr/lib/binfmt.d/qemu-$qarch.conf

runs() { "$loader" --version >/dev/null 2>&1; }   # an $arch ELF, run by the kernel
runs && exit 0
why=
if [ ! -e "$loader" ]; then why="no $arch C library ($loader): tools/packaging/deps/install.sh installs it"
elif [ ! -r "$conf" ]; then why="no $conf: qemu-user-static is not installed"
elif [ "$check_only" = 1 ]; then why="binfmt_misc has no enabled qemu-$qarch entry: run tools/packaging/deps/binfmt.sh $arch as root"
elif [ "$(id -u)" -ne 0 ]; then why="binfmt_misc has no qemu-$qarch entry and not root"
else
  mountpoint -q "$dir" || mount -t binfmt_misc binfmt_misc "$dir" 2>/dev/null ||
    why="cannot mount binfmt_misc at $dir"
  if [ -z "$why" ] && [ ! -e "$dir/qemu-$qarch" ]; then
    grep -v '^#' "$conf" >"$dir/register" 2>/dev/null || why="the kernel refused the qemu-$qarch entry"
  elif [ -z "$why" ]; then
    echo 1 >"$dir/qemu-$qarch"   # registered but disabled
  fi
  if [ -z "$why" ]; then
    runs && exit 0
    why="$arch programs still do not run with qemu-$qarch registered"
  fi
fi
echo "binfmt.sh: $why" >&2
exit 1
