"""Theoretical occupancy, one rule per test, values computed by hand from the CUDA
Occupancy Calculator rules (cuda_occupancy.h).

The A100 and V100 SM limits are set here from the CUDA C++ Programming Guide's
"Technical Specifications per Compute Capability" (8.0: 164 KiB shared per SM;
7.0: 96 KiB shared per SM, no per-block reserve, 256-byte shared allocation unit),
so the tests state those GPUs' rules whatever the presets' SM sub-specs hold.
"""
from __future__ import annotations

import random
import shutil
import subprocess
from dataclasses import replace

import pytest

from gpusim.errors import LaunchError
from gpusim.specs import presets
from gpusim.timing.occupancy import occupancy

H100 = presets.H100
A100 = replace(presets.A100, sm=replace(presets.A100.sm, shared_memory_per_sm_bytes=164 * 1024,
                                        reserved_shared_per_block_bytes=1024, shared_allocation_unit_bytes=128))
V100 = replace(presets.V100, sm=replace(presets.V100.sm, shared_memory_per_sm_bytes=96 * 1024,
                                        reserved_shared_per_block_bytes=0, shared_allocation_unit_bytes=256))
KiB = 1024


# ----------------------------------------------------------------------------- H100: warps and registers
def test_h100_256_threads_32_regs_fills_the_sm():
    occ = occupancy(H100, 256, 32, 0)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy_pct) == (8, 64, 100.0)


def test_h100_full_sm_ties_warps_and_registers_and_names_warps():
    occ = occupancy(H100, 256, 32, 0)
    assert (occ.limiter, occ.limiters) == ("warps", ("warps", "registers"))


def test_h100_64_regs_halves_occupancy():
    occ = occupancy(H100, 256, 64, 0)           # 65536 / (2048 * 8) = 4 blocks
    assert (occ.blocks_per_sm, occ.occupancy_pct, occ.limiter) == (4, 50.0, "registers")


def test_h100_1024_threads_64_regs_fits_one_block():
    occ = occupancy(H100, 1024, 64, 0)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (1, 32, "registers")


def test_h100_255_regs_rounds_to_8192_per_warp():
    occ = occupancy(H100, 128, 255, 0)          # 255*32 = 8160 -> 8192; 16384/8192 = 2 warps per SMSP
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy_pct) == (2, 8, 12.5)


def test_h100_registers_allocated_per_sub_partition():
    # 40 regs: 1280 per warp; 16384 // 1280 = 12 warps per SMSP -> 48 warps -> 16 blocks of 3 warps
    # (65536 // (1280 * 3) would say 17)
    occ = occupancy(H100, 96, 40, 0)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy_pct) == (16, 48, 75.0)


def test_h100_block_registers_checked_with_warps_rounded_to_granularity():
    # 80 regs, 25 warps: 2560 * 25 = 64000 <= 65536, but 2560 * 28 > 65536: the launch fails
    occ = occupancy(H100, 800, 80, 0)
    assert (occ.blocks_per_sm, occ.limiter, occ.launchable) == (0, "registers", False)


def test_h100_more_than_255_regs_cannot_launch():
    occ = occupancy(H100, 32, 256, 0)
    assert (occ.blocks_per_sm, occ.limiter) == (0, "registers")


def test_h100_allocated_registers_per_block():
    assert occupancy(H100, 96, 33, 0).registers_per_block == 3 * 1280   # 33*32 = 1056 -> 1280


def test_h100_small_blocks_hit_the_block_slot_limit():
    occ = occupancy(H100, 32, 16, 0)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy_pct, occ.limiter) == (32, 32, 50.0, "blocks")


def test_h100_partial_warp_counts_as_a_warp():
    assert occupancy(H100, 33, 16, 0).warps_per_block == 2


def test_h100_block_over_1024_threads_cannot_launch():
    occ = occupancy(H100, 1025, 16, 0)
    assert (occ.blocks_per_sm, occ.limiter) == (0, "warps")


def test_h100_per_limit_block_counts():
    occ = occupancy(H100, 256, 64, 16 * KiB)    # shared: 233472 // 17408 = 13
    assert (occ.blocks_limit_warps, occ.blocks_limit_blocks, occ.blocks_limit_registers,
            occ.blocks_limit_shared) == (8, 32, 4, 13)


# ----------------------------------------------------------------------------- H100: shared memory
def test_h100_48k_shared_fits_4_blocks():
    occ = occupancy(H100, 256, 32, 48 * KiB)    # 233472 // (49152 + 1024) = 4
    assert (occ.blocks_per_sm, occ.occupancy_pct, occ.limiter) == (4, 50.0, "shared")


def test_h100_reserved_kib_counts_against_the_carveout():
    occ = occupancy(H100, 64, 16, 8 * KiB)      # 233472 // 9216 = 25 (28 without the reserve)
    assert (occ.blocks_per_sm, occ.warps_per_sm) == (25, 50)


def test_h100_shared_rounds_up_to_128_bytes():
    assert occupancy(H100, 64, 16, 100).shared_bytes_per_block == 1152   # 100 + 1024 -> 1152


def test_h100_zero_shared_still_allocates_the_reserve():
    assert occupancy(H100, 64, 16, 0).blocks_limit_shared == 228


def test_h100_227k_shared_fits_one_block():
    occ = occupancy(H100, 128, 32, 227 * KiB)
    assert (occ.blocks_per_sm, occ.limiter) == (1, "shared")


def test_h100_shared_over_optin_cannot_launch():
    occ = occupancy(H100, 128, 32, 227 * KiB + 1)
    assert (occ.blocks_per_sm, occ.limiter, occ.launchable) == (0, "shared", False)


# ----------------------------------------------------------------------------- A100 (CC 8.0)
def test_a100_48k_shared_fits_3_blocks():
    occ = occupancy(A100, 256, 32, 48 * KiB)    # 167936 // 50176 = 3
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy_pct) == (3, 24, 37.5)


def test_a100_163k_shared_fits_one_block():
    assert occupancy(A100, 128, 32, 163 * KiB).blocks_per_sm == 1


def test_a100_shared_over_163k_cannot_launch():
    assert occupancy(A100, 128, 32, 163 * KiB + 1).blocks_per_sm == 0


def test_a100_64_regs_halves_occupancy():
    assert occupancy(A100, 256, 64, 0).occupancy_pct == 50.0


# ----------------------------------------------------------------------------- V100 (CC 7.0)
def test_v100_48k_shared_fits_2_blocks():
    occ = occupancy(V100, 256, 32, 48 * KiB)    # no reserve: 98304 // 49152 = 2
    assert (occ.blocks_per_sm, occ.occupancy_pct, occ.limiter) == (2, 25.0, "shared")


def test_v100_shared_rounds_up_to_256_bytes():
    assert occupancy(V100, 64, 16, 100).shared_bytes_per_block == 256


def test_v100_no_shared_is_no_limit():
    assert occupancy(V100, 64, 16, 0).blocks_limit_shared is None


# ----------------------------------------------------------------------------- input
def test_zero_threads_is_a_launch_error():
    with pytest.raises(LaunchError, match="threads_per_block"):
        occupancy(H100, 0, 32, 0)


# ----------------------------------------------------------------------------- against NVIDIA's own rules
_HARNESS = r"""
#include <cstdio>
#include "cuda_occupancy.h"
int main() {   // per line: major minor smem_per_sm optin reserved threads regs smem -> blocks and limits
  int ma, mi, t, r; long sm, opt, res, s;
  while (scanf("%d %d %ld %ld %ld %d %d %ld", &ma, &mi, &sm, &opt, &res, &t, &r, &s) == 8) {
    cudaOccDeviceProp p; p.computeMajor = ma; p.computeMinor = mi; p.maxThreadsPerBlock = 1024;
    p.maxThreadsPerMultiprocessor = 2048; p.regsPerBlock = 65536; p.regsPerMultiprocessor = 65536; p.warpSize = 32;
    p.sharedMemPerBlock = 48 * 1024; p.sharedMemPerMultiprocessor = sm; p.numSms = 1;
    p.sharedMemPerBlockOptin = opt; p.reservedSharedMemPerBlock = res;
    cudaOccFuncAttributes a; a.maxThreadsPerBlock = 1024; a.numRegs = r; a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    a.maxDynamicSharedSizeBytes = opt; a.numBlockBarriers = 1;
    cudaOccDeviceState st; cudaOccResult o;
    int e = cudaOccMaxActiveBlocksPerMultiprocessor(&o, &p, &a, &st, t, s);
    printf("%d %d %d %d %d %d\n", e, o.activeBlocksPerMultiprocessor, o.blockLimitWarps, o.blockLimitBlocks,
           o.blockLimitRegs, o.blockLimitSharedMem);
  }
}
"""


def _occupancy_header_dir():
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        return find_nvidia_header_directory("cudart")
    except Exception:
        return None


def test_agrees_with_cuda_occupancy_h_on_3000_random_launches(tmp_path):
    """Blocks and every per-limit count equal NVIDIA's cuda_occupancy.h (the code behind
    cudaOccupancyMaxActiveBlocksPerMultiprocessor) for H100, A100 and V100."""
    inc = _occupancy_header_dir()
    if shutil.which("g++") is None or inc is None:
        pytest.skip("g++ or cuda_occupancy.h (nvidia-cuda-runtime wheel) not installed")
    src, exe = tmp_path / "occ.cpp", tmp_path / "occ"
    src.write_text(_HARNESS)
    subprocess.run(["g++", "-O1", f"-I{inc}", str(src), "-o", str(exe)], check=True, capture_output=True)
    rng = random.Random(7)
    cases = []
    for _ in range(3000):
        g = rng.choice((H100, A100, V100))
        t = rng.choice((rng.randint(1, 1100), 32 * rng.randint(1, 32)))
        r = rng.choice((rng.randint(0, 255), rng.randint(16, 128)))
        s = rng.choice((0, rng.randint(0, g.limits.max_shared_bytes_per_block_optin + 2000), KiB * rng.randint(0, 64)))
        cases.append((g, t, r, s))
    stdin = "".join(f"{g.compute_capability[0]} {g.compute_capability[1]} {g.sm.shared_memory_per_sm_bytes} "
                    f"{g.limits.max_shared_bytes_per_block_optin} {g.sm.reserved_shared_per_block_bytes} {t} {r} {s}\n"
                    for g, t, r, s in cases)
    lines = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True).stdout.splitlines()
    unlimited = 2**31 - 1
    mismatches = []
    for (g, t, r, s), line in zip(cases, lines, strict=True):
        occ = occupancy(g, t, r, s)
        mine = (0, occ.blocks_per_sm, occ.blocks_limit_warps, occ.blocks_limit_blocks,
                unlimited if occ.blocks_limit_registers is None else occ.blocks_limit_registers,
                unlimited if occ.blocks_limit_shared is None else occ.blocks_limit_shared)
        if tuple(map(int, line.split())) != mine:
            mismatches.append((g.name, t, r, s, line, mine))
    assert mismatches == []
