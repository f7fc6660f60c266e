#!/bin/sh
# On the GPU machine: unpacks tools/packaging/gpu/pack.sh's libraries into /tmp/rdeps, keeping only
# those the machine lacks (its own, newer ones win), then
#   export LD_LIBRARY_PATH=/tmp/rdeps/lib PATH=/tmp/rdeps/bin:$PATH PYTHONPATH=/tmp/rdeps/python
# (PYTHONPATH: pure-Python modules the bench needs, e.g. tomli_w)
set -eu
tar xJf "${1:-.devcarry}/deps.tar.xz" -C /tmp
for l in /tmp/rdeps/lib/*; do
  n=$(basename "$l")
  if ldconfig -p | grep -q "^[[:space:]]*$n "; then rm -f "$l"; fi
done
echo "unpack.sh: carried libraries in use: $(ls /tmp/rdeps/lib | tr '\n' ' ')"
