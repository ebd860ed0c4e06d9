#!/usr/bin/env bash
# Build the toolchain kit that lets the GPU machine's 16 CPU cores predict bit-identically to this
# machine (../shared/GPU_NOTES.md): the CUDA 13.0.88 ptxas, libNVVM, libdevice, nvJitLink and NVRTC
# of the pip packages gpusim installs (pyproject.toml pins 13.0, the measured machines' own CUDA), the
# nvdisasm they come with (13.5: no 13.0 wheel exists; it only prints the SASS), the nvidia_nvvm
# dist-info numba-cuda finds libdevice through, and numpy 2.4.x / simpy for the GPU machine's Python
# 3.12 (its numpy 2.5 breaks numba-cuda; it has no simpy).
#
# A device call carries at most 64 MiB with the working tree (about 40 MB), so the kit is several
# folders, each carried by its own call: .devkit/nvvm (libNVVM, libdevice, simpy; ~22 MB) and
# .devkit/tools (ptxas, nvdisasm, numpy; ~26 MB, or its two archives in two calls). On the GPU
# machine `bash benchmarks/device_setup.sh` unpacks whichever is carried into /opt/gpusim-kit, which
# stays while the machine is held, and prints the environment to source. NVRTC (CUDA C++ kernels'
# PTX) and nvJitLink (Numba kernels are linked by it, with link-time optimisation, as numba-cuda
# builds them: gpusim/frontend/numbacompile.py) are ~40 and ~29 MB compressed, so each goes in two
# halves, .devkit/nvrtc1 / nvrtc2 and .devkit/nvjitlink1 / nvjitlink2, a call each; the setup joins
# each pair once both have come.
#
#   bash benchmarks/device_kit.sh          # here, once: writes .devkit/ (git-ignored through .git/info/exclude)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.devkit/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.devkit/' >> .git/info/exclude; }
SP=$(python -c "import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))")
NVVM_INFO=$(cd "$SP" && ls -d nvidia_nvvm-*.dist-info | head -n 1)
NVRTC_INFO=$(cd "$SP" && ls -d nvidia_cuda_nvrtc-*.dist-info | head -n 1)
rm -rf .devkit && mkdir -p .devkit/nvvm .devkit/tools .devkit/nvrtc1 .devkit/nvrtc2 .devkit/nvjitlink1 .devkit/nvjitlink2
tar -C "$SP" -cf - nvidia/cu13/lib/libnvvm.so.4 nvidia/cu13/nvvm/libdevice/libdevice.10.bc "$NVVM_INFO" \
    | xz -T0 -9 > .devkit/nvvm/sp.tar.xz
tar -C "$SP" -cf - nvidia/cu13/bin/ptxas nvidia/cu13/bin/nvdisasm | xz -T0 -9 > .devkit/tools/sp.tar.xz
(cd "$SP" && tar -cf - nvidia/cu13/lib/libnvrtc.so.13 nvidia/cu13/lib/libnvrtc-builtins.so.* "$NVRTC_INFO") \
    | xz -T0 -6 > .devkit/nvrtc.tar.xz
half=$(( ($(stat -c %s .devkit/nvrtc.tar.xz) + 1) / 2 ))
head -c "$half" .devkit/nvrtc.tar.xz > .devkit/nvrtc1/part
tail -c +"$(( half + 1 ))" .devkit/nvrtc.tar.xz > .devkit/nvrtc2/part
rm .devkit/nvrtc.tar.xz
JITLINK_INFO=$(cd "$SP" && ls -d nvidia_nvjitlink-*.dist-info | head -n 1)
(cd "$SP" && tar -cf - nvidia/cu13/lib/libnvJitLink.so.13 "$JITLINK_INFO") | xz -T0 -6 > .devkit/nvjitlink.tar.xz
half=$(( ($(stat -c %s .devkit/nvjitlink.tar.xz) + 1) / 2 ))
head -c "$half" .devkit/nvjitlink.tar.xz > .devkit/nvjitlink1/part
tail -c +"$(( half + 1 ))" .devkit/nvjitlink.tar.xz > .devkit/nvjitlink2/part
rm .devkit/nvjitlink.tar.xz
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
for d in ("numpy", "simpy", "nvidia-nvvm", "nvidia-cuda-nvcc", "nvidia-cuda-nvdisasm", "nvidia-cuda-nvrtc",
          "nvidia-nvjitlink"):
    print(d, m.version(d))
PY
cp .devkit/versions.txt .devkit/tools/ && cp .devkit/versions.txt .devkit/nvvm/
du -sh .devkit/*
