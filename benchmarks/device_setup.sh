#!/usr/bin/env bash
# On the GPU machine: unpack the kit folders of benchmarks/device_kit.sh that this call carries
# into /opt/gpusim-kit (kept while the machine is held) and write /opt/gpusim-kit/env.sh, which
# puts the kit's site-packages first for cuda.pathfinder (a sitecustomize.py: pathfinder looks in
# site.getsitepackages(), which PYTHONPATH does not change) and the kit's numpy/simpy on PYTHONPATH.
#
#   bash benchmarks/device_setup.sh && source /opt/gpusim-kit/env.sh && python3 -m validate compare ...
#
# A kit folder's two archives may also come in two calls (carry `.devkit/tools/sp.tar.xz`, then
# `.devkit/tools/site.tar.xz`): the working tree and a whole `tools` folder came to more than the
# 64 MiB a call carries on 2026-11-26 (40.4 MB of tracked files and 26.0 MB of tools).
set -euo pipefail
cd "$(dirname "$0")/.."
K=/opt/gpusim-kit
mkdir -p "$K/sp" "$K/site"
for part in nvvm tools; do
  [ -d ".devkit/$part" ] || continue
  for arc in sp site; do                          # each archive that came (both, or one in each of two calls)
    if [ -f ".devkit/$part/$arc.tar.xz" ]; then
      xz -dc ".devkit/$part/$arc.tar.xz" | tar -C "$K/$arc" -xf -
      touch "$K/have_${part}_$arc"
    fi
  done
  if [ -f "$K/have_${part}_sp" ] && [ -f "$K/have_${part}_site" ]; then touch "$K/have_$part"; fi
done
for lib in nvrtc nvjitlink; do                    # NVRTC and nvJitLink in two halves each (device_kit.sh),
  for half in "${lib}1" "${lib}2"; do             # each pair joined when both came
    if [ -f ".devkit/$half/part" ]; then cp ".devkit/$half/part" "$K/$half.part"; fi
  done
  if [ -f "$K/${lib}1.part" ] && [ -f "$K/${lib}2.part" ] && [ ! -f "$K/have_$lib" ]; then
    cat "$K/${lib}1.part" "$K/${lib}2.part" | xz -dc | tar -C "$K/sp" -xf -
    rm -f "$K/${lib}1.part" "$K/${lib}2.part"
    touch "$K/have_$lib"
  fi
done
cat > "$K/site/sitecustomize.py" <<'PY'
"""gpusim's device kit: its site-packages come first for cuda.pathfinder (site.getsitepackages)."""
import site

_KIT = "/opt/gpusim-kit/sp"
_original = site.getsitepackages


def getsitepackages(prefixes=None):
    found = _original(prefixes)
    return found if prefixes is not None else [_KIT] + [p for p in found if p != _KIT]


site.getsitepackages = getsitepackages
PY
cat > "$K/env.sh" <<SH
export PYTHONPATH=$K/site:$K/sp:$PWD\${PYTHONPATH:+:\$PYTHONPATH}
export PATH=$K/sp/nvidia/cu13/bin:\$PATH
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1
SH
# shellcheck disable=SC1091
. "$K/env.sh"
ls "$K"/have_* >&2
python3 - <<'PY' >&2 || true
import numpy, importlib
print("numpy", numpy.__version__, numpy.__file__)
try:
    import simpy; print("simpy", simpy.__version__)
except Exception as e: print("simpy missing", e)
from cuda.pathfinder import find_nvidia_binary_utility
print("ptxas", find_nvidia_binary_utility("ptxas"))
try:
    from cuda.bindings import nvrtc
    print("nvrtc", nvrtc.nvrtcVersion()[1:])
except Exception as e: print("nvrtc:", type(e).__name__, e)
try:
    from numba.cuda.cudadrv.nvvm import NVVM
    print("nvvm", NVVM().get_version())
except Exception as e: print("nvvm:", type(e).__name__, e)
try:
    from cuda.bindings import nvjitlink
    from cuda.pathfinder import load_nvidia_dynamic_lib
    print("nvjitlink", nvjitlink.version(), load_nvidia_dynamic_lib("nvJitLink").abs_path)
except Exception as e: print("nvjitlink:", type(e).__name__, e)
PY
