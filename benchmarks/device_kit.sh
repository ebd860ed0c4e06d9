#!/usr/bin/env bash
# Build the toolchain kit that lets the GPU machine's 16 CPU cores predict bit-identically to this
# machine (../shared/GPU_NOTES.md): the CUDA 13.5 ptxas, nvdisasm, libNVVM and libdevice of the pip
# packages gpusim installs, the nvidia_nvvm dist-info numba-cuda finds libdevice through, and numpy
# 2.4.x / simpy for the GPU machine's Python 3.12 (its numpy 2.5 breaks numba-cuda; it has no simpy).
#
# A device call carries at most 64 MiB with the working tree (about 36 MB), so the kit is two
# folders, each carried by its own call: .devkit/nvvm (libNVVM, libdevice, simpy; ~22 MB) and
# .devkit/tools (ptxas, nvdisasm, numpy; ~26 MB). On the GPU machine `bash benchmarks/device_setup.sh`
# unpacks whichever is carried into /opt/gpusim-kit, which stays while the machine is held, and
# prints the environment to source. Kernels compiled through NVRTC (CUDA C++) or Triton need only
# .devkit/tools; Numba kernels also need .devkit/nvvm. NVRTC itself (CUDA C++ kernels' PTX: the GPU
# machine's own NVRTC 13.0 gives other PTX than this machine's 13.5, and other predictions) is ~42 MB
# compressed, so it goes in two halves, .devkit/nvrtc1 and .devkit/nvrtc2, a call each; the setup
# joins them once both have come.
#
#   bash benchmarks/device_kit.sh          # here, once: writes .devkit/ (git-ignored through .git/info/exclude)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.devkit/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.devkit/' >> .git/info/exclude; }
SP=$(python -c "import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))")
NVVM_INFO=$(cd "$SP" && ls -d nvidia_nvvm-*.dist-info | head -n 1)
NVRTC_INFO=$(cd "$SP" && ls -d nvidia_cuda_nvrtc-*.dist-info | head -n 1)
rm -rf .devkit && mkdir -p .devkit/nvvm .devkit/tools .devkit/nvrtc1 .devkit/nvrtc2
tar -C "$SP" -cf - nvidia/cu13/lib/libnvvm.so.4 nvidia/cu13/nvvm/libdevice/libdevice.10.bc "$NVVM_INFO" \
    | xz -T0 -9 > .devkit/nvvm/sp.tar.xz
tar -C "$SP" -cf - nvidia/cu13/bin/ptxas nvidia/cu13/bin/nvdisasm | xz -T0 -9 > .devkit/tools/sp.tar.xz
(cd "$SP" && tar -cf - nvidia/cu13/lib/libnvrtc.so.13 nvidia/cu13/lib/libnvrtc-builtins.so.* "$NVRTC_INFO") \
    | xz -T0 -6 > .devkit/nvrtc.tar.xz
half=$(( ($(stat -c %s .devkit/nvrtc.tar.xz) + 1) / 2 ))
head -c "$half" .devkit/nvrtc.tar.xz > .devkit/nvrtc1/part
tail -c +"$(( half + 1 ))" .devkit/nvrtc.tar.xz > .devkit/nvrtc2/part
rm .devkit/nvrtc.tar.xz
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    -d "$tmp" "numpy==$(python -c 'import numpy; print(numpy.__version__)')" "simpy==$(python -c 'import importlib.metadata as m; print(m.version("simpy"))')"
mkdir -p "$tmp/np" "$tmp/simpy"
(cd "$tmp/np" && unzip -q "$tmp"/numpy-*.whl && find . -type d -name tests -prune -exec rm -rf {} + && rm -rf numpy/f2py)
(cd "$tmp/simpy" && unzip -q "$tmp"/simpy-*.whl)
tar -C "$tmp/np" -cf - . | xz -T0 -9 > .devkit/tools/site.tar.xz
tar -C "$tmp/simpy" -cf - . | xz -T0 -9 > .devkit/nvvm/site.tar.xz
python - "$SP" > .devkit/versions.txt <<'PY'
import importlib.metadata as m, sys
for d in ("numpy", "simpy", "nvidia-nvvm", "nvidia-cuda-nvcc", "nvidia-cuda-nvdisasm", "nvidia-cuda-nvrtc"):
    print(d, m.version(d))
PY
cp .devkit/versions.txt .devkit/tools/ && cp .devkit/versions.txt .devkit/nvvm/
du -sh .devkit/*
