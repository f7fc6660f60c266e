#!/usr/bin/env bash
# Mounts what the tracer needs and a fresh machine may lack: tracefs at
# /sys/kernel/tracing and bpffs at /sys/fs/bpf. Quiet when both are there;
# a non-root user gets a warning (the BPF suites then report what is missing).
set -u
need=()
mountpoint -q /sys/kernel/tracing || need+=(tracefs)
mountpoint -q /sys/fs/bpf || need+=(bpffs)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "mount-fs.sh: ${need[*]} not mounted and not root; the BPF tests will fail" >&2
  exit 0
fi
for fs in "${need[@]}"; do
  case $fs in
    tracefs) mount -t tracefs tracefs /sys/kernel/tracing ;;
    bpffs) mount -t bpf bpf /sys/fs/bpf ;;
  esac
done
