#!/usr/bin/env bash
# The arm64 BPF object, checked statically (TAP). User-mode emulation cannot load BPF
# programs (qemu-user forwards bpf(2) to this x86_64 kernel), so `make check` checks
# what it can without an arm64 kernel: the object of the cross build ($O/arm64) is
# read by llvm-objdump and bpftool, every CO-RE relocation resolves against the BTF of
# Debian's arm64 kernel (libbpf's own matching, through bpftool gen min_core_btf -d),
# every tp_btf hook exists there, and every period-wait kind has a syscall that the
# target's headers define. Documentation/results/aarch64.md.
set -uo pipefail
O=${O:-build}
A=$O/arm64 obj=$O/arm64/bpf/tracer.bpf.o btf=$O/arm64/btf/vmlinux
src=$(dirname "$0")/../../include/ripple/bpf/tracer.h   # RIPPLE_WAIT_SYSCALLS, the one list
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift; for l in "$@"; do sed 's/^/# /' <<<"$l"; done; }
echo "TAP version 13"
echo "1..5"
if [ ! -r "$obj" ] || [ ! -r "$btf" ]; then
  for t in objdump btf core tp_btf syscalls; do not_ok "$t: no arm64 build ($obj, $btf): make ARCH=arm64 O=$A"; done
  exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# 1. An eBPF ELF object that llvm-objdump reads, with the programs in it.
fmt=$(llvm-objdump -f "$obj" 2>&1 | awk '/file format/ { print $NF }')
progs=$(llvm-objdump -h "$obj" | awk '$2 ~ /^(tp_btf|tracepoint|uprobe|uretprobe)/ { print $2 }')
if [ "$fmt" = elf64-bpf ] && [ -n "$progs" ]; then ok "llvm-objdump reads $obj: $fmt, $(wc -l <<<"$progs") programs"
else not_ok "llvm-objdump reads $obj" "format '$fmt'"; fi

# 2. Its BTF parses.
if bpftool btf dump file "$obj" >"$tmp/obj.btf" 2>&1 && grep -q "STRUCT 'ripple_pt_config'" "$tmp/obj.btf"
then ok "bpftool reads its BTF ($(wc -l <"$tmp/obj.btf") lines, struct ripple_pt_config)"
else not_ok "bpftool reads its BTF" "$(head -3 "$tmp/obj.btf")"; fi

# 3. Every CO-RE relocation matches a type of the arm64 kernel (libbpf's matching).
bpftool -d gen min_core_btf "$btf" "$tmp/min.btf" "$obj" >"$tmp/core.log" 2>&1
relos=$(grep -cE "relo #[0-9]+: <" "$tmp/core.log")
# Relocations that matched nothing, by kind. An existence check (bpf_core_field_exists)
# may find nothing and is only reported; any other kind is a failure.
unmatched=$(awk '/relo #[0-9]+: </ { match($0, /prog .*relo #[0-9]+:/); key = substr($0, RSTART, RLENGTH)
                                    match($0, /<[a-z_]+>/); kind[key] = substr($0, RSTART, RLENGTH) }
                 /no matching targets found/ { match($0, /prog .*relo #[0-9]+:/); print kind[substr($0, RSTART, RLENGTH)], $0 }' \
                "$tmp/core.log")
bad=$(grep -vE '^<(field|type|enumval)_exists>' <<<"$unmatched" | grep . || true)
absent_ok=$(grep -cE '^<(field|type|enumval)_exists>' <<<"$unmatched")
if [ "$relos" -gt 0 ] && [ -z "$bad" ]; then
  types=$(bpftool btf dump file "$tmp/min.btf" | awk '$2 == "STRUCT" { print $3 }' | tr -d "'" | grep -vx '(anon)' | sort -u)
  ok "$relos CO-RE relocations resolve against arm64 BTF ($(cat "$btf.version" 2>/dev/null)), $absent_ok existence checks false: $(echo $types)"
else
  not_ok "CO-RE relocations resolve against arm64 BTF" "$relos relocations; unmatched:" "$(head -12 <<<"$bad")"
fi

# 4. Every tp_btf hook is a raw tracepoint of the arm64 kernel (libbpf attaches tp_btf/X to
#    the kernel's btf_trace_X).
bpftool btf dump file "$btf" >"$tmp/vmlinux.txt"
absent=()
for tp in $(grep '^tp_btf/' <<<"$progs" | sed 's|^tp_btf/||' | sort -u); do
  grep -q "TYPEDEF 'btf_trace_$tp' " "$tmp/vmlinux.txt" || absent+=("$tp")
done
if [ ${#absent[@]} -eq 0 ]; then ok "every tp_btf hook exists in arm64 BTF: $(grep '^tp_btf/' <<<"$progs" | sed 's|^tp_btf/||' | sort -u | tr '\n' ' ')"
else not_ok "every tp_btf hook exists in arm64 BTF" "absent: ${absent[*]}"; fi

# 5. Every period-wait kind has a syscall in the target's table (aarch64 <asm/unistd.h>);
#    the loader leaves unloaded the programs of syscalls the kernel lacks.
nrs=$("$CROSS_CC" -dM -E -include sys/syscall.h - </dev/null | awk '/^#define __NR_/ { sub(/^__NR_/, "", $2); print $2 }')
declare -A kind_ok=() kind_seen=()
lacks=()
while read -r sc bit; do
  kind_seen[$bit]=1
  if grep -qx "$sc" <<<"$nrs"; then kind_ok[$bit]=1; else lacks+=("$sc"); fi
done < <(sed -nE 's/^[[:space:]]*XF?\(([a-z0-9_]+), (RIPPLE_WAIT_[A-Z_]+)\).*/\1 \2/p' "$src")
uncovered=()
for k in "${!kind_seen[@]}"; do [ -n "${kind_ok[$k]:-}" ] || uncovered+=("$k"); done
if [ ${#kind_seen[@]} -ge 5 ] && [ ${#uncovered[@]} -eq 0 ]; then
  ok "each of ${#kind_seen[@]} period-wait kinds has an arm64 syscall; not on arm64 (left unloaded): ${lacks[*]:-none}"
else not_ok "each period-wait kind has an arm64 syscall" "without one: ${uncovered[*]:-?} (kinds seen: ${!kind_seen[*]})"; fi
exit $failed
