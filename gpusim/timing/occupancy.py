"""Theoretical occupancy: how many blocks of a kernel one SM holds at once.

Models the rules of `cudaOccupancyMaxActiveBlocksPerMultiprocessor` (the CUDA
Occupancy Calculator), each limit a block count, the answer their minimum:

- warps: `warps/block = ceil(threads / 32)`; blocks = max warps per SM // warps/block;
  a block over `max_threads_per_block` gets 0 (the launch fails).
- blocks: `max_blocks_per_sm`.
- registers: registers are allocated per warp, `regs/thread * 32` rounded up to the
  register allocation unit (256). They live in the register file of one SM
  sub-partition, so the warps an SM holds are
  `(registers_per_sm / G) // regs_per_warp * G` with G the warp allocation
  granularity (4: the SMSPs), and blocks = that // warps/block. The launch fails
  (0 blocks) when `regs/thread > max_registers_per_thread`, or when the block's
  registers, with its warp count rounded up to G (the hardware check), exceed the
  registers one block may use (`registers_per_sm`: 64 Ki on every preset).
- shared memory: per block `static + dynamic + reserved` (1 KiB for system use on
  CC >= 8.0, 0 before), rounded up to the shared allocation unit (128 B; 256 B on
  CC 7.x); blocks = carve-out // that. The carve-out is the largest one,
  `shared_memory_per_sm_bytes`: with the default carve-out preference CUDA sizes
  the shared part of L1 for the most shared memory (`cudaOccSMemPreferenceVoltaPlus`
  maps the default preference to `sharedMemPerMultiprocessor`), so a kernel whose
  blocks need less still reports occupancy against the maximum, as CUDA does. A
  block over the opt-in per-block maximum plus the reserve fails (0 blocks); we
  assume the kernel opted in (`cudaFuncAttributeMaxDynamicSharedMemorySize`) when it
  asks for more than the 48 KiB default.

`limiter` names the binding limit; where several tie it is the first of warps,
blocks, registers, shared (`limiters` lists all of them, like CUDA's
`limitingFactors` bit mask). Occupancy is active warps / max warps per SM.

Checked against NVIDIA's `cuda_occupancy.h` (CUDA 13.4) on random launches
(tests/timing/test_occupancy.py): blocks and every per-limit count agree. One
difference: the header lets a thread have 256 registers on CC >= 7.0; we keep the
spec's 255 (ptxas never allocates more).

Does not model: the block-barrier limit of CC >= 9.0 named barriers (Numba kernels
use one barrier), partitioned global caching (CC 6.x only), clusters, a user carve-out
preference, or `maxrregcount`/launch bounds (the register count given is what the
kernel uses).

Sources: CUDA 13.4 `cuda_occupancy.h` (`cudaOccMaxBlocksPerSMRegsLimit`,
`cudaOccMaxBlocksPerSMSmemLimit`, `cudaOccMaxBlocksPerSMWarpsLimit`,
`cudaOccSMemPerBlock`, `cudaOccSMemPreferenceVoltaPlus`); CUDA Occupancy Calculator
(DA-05679-001) and Nsight Compute "Occupancy Calculator"; CUDA C++ Programming Guide,
"Technical Specifications per Compute Capability".
"""
from __future__ import annotations

from dataclasses import dataclass

from gpusim.errors import LaunchError
from gpusim.specs.gpu import GPUSpec

LIMIT_ORDER = ("warps", "blocks", "registers", "shared")   # tie order for `limiter`


@dataclass(frozen=True)
class Occupancy:
    """Blocks and warps of one kernel resident on one SM, and what limits them."""
    blocks_per_sm: int                   # active blocks per SM (0: the launch would fail)
    warps_per_sm: int                    # active warps per SM
    occupancy_pct: float                 # active warps / max warps per SM, in percent
    limiter: str                         # binding limit: 'warps', 'blocks', 'registers' or 'shared'
    limiters: tuple[str, ...]            # every limit equal to blocks_per_sm, in LIMIT_ORDER
    blocks_limit_warps: int              # blocks allowed by warp slots (and max threads per block)
    blocks_limit_blocks: int             # blocks allowed by the per-SM block slots
    blocks_limit_registers: int | None   # blocks allowed by the register file; None: no registers used
    blocks_limit_shared: int | None      # blocks allowed by the shared carve-out; None: no shared memory used
    warps_per_block: int
    registers_per_block: int             # allocated: per-warp rounding applied
    shared_bytes_per_block: int          # allocated: reserve added, rounded to the allocation unit
    max_warps_per_sm: int

    @property
    def launchable(self) -> bool:
        """False when not even one block fits (CUDA refuses the launch)."""
        return self.blocks_per_sm > 0

    @property
    def active_threads_per_sm(self) -> int:
        return self.warps_per_sm * 32


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(spec: GPUSpec, threads_per_block: int, registers_per_thread: int,
              shared_bytes_per_block: int) -> Occupancy:
    """Theoretical occupancy of blocks of `threads_per_block` threads, each thread using
    `registers_per_thread` registers (ptxas' count) and each block
    `shared_bytes_per_block` bytes of shared memory (static + dynamic)."""
    for name, v, lo in (("threads_per_block", threads_per_block, 1),
                        ("registers_per_thread", registers_per_thread, 0),
                        ("shared_bytes_per_block", shared_bytes_per_block, 0)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise LaunchError(f"occupancy: {name} must be an integer >= {lo}, got {v!r}")
    sm, warp = spec.sm, spec.limits.warp_size_threads
    max_warps = min(sm.max_warps_per_sm, sm.max_threads_per_sm // warp)
    warps_per_block = -(-threads_per_block // warp)

    # warps (a block over the per-block thread limit cannot launch)
    by_warps = 0 if threads_per_block > spec.limits.max_threads_per_block else max_warps // warps_per_block
    by_blocks = sm.max_blocks_per_sm

    # registers: per warp, rounded to the allocation unit, per sub-partition
    gran = sm.warp_allocation_granularity
    regs_per_warp = _round_up(registers_per_thread * warp, sm.register_allocation_unit)
    regs_per_block = regs_per_warp * warps_per_block
    by_regs: int | None
    if registers_per_thread > sm.max_registers_per_thread or \
            regs_per_warp * _round_up(warps_per_block, gran) > sm.registers_per_sm or \
            regs_per_block > sm.registers_per_sm:
        by_regs = 0
    elif regs_per_warp == 0:
        by_regs = None
    else:
        warps_by_regs = (sm.registers_per_sm // gran) // regs_per_warp * gran
        by_regs = warps_by_regs // warps_per_block

    # shared memory: reserve added, rounded up, against the largest carve-out
    smem = _round_up(shared_bytes_per_block + sm.reserved_shared_per_block_bytes, sm.shared_allocation_unit_bytes)
    per_block_max = spec.limits.max_shared_bytes_per_block_optin + sm.reserved_shared_per_block_bytes
    by_shared: int | None
    if smem > per_block_max or smem > sm.shared_memory_per_sm_bytes:
        by_shared = 0
    elif smem == 0:
        by_shared = None
    else:
        by_shared = sm.shared_memory_per_sm_bytes // smem

    limits = {"warps": by_warps, "blocks": by_blocks, "registers": by_regs, "shared": by_shared}
    blocks = min(v for v in limits.values() if v is not None)
    tied = tuple(k for k in LIMIT_ORDER if limits[k] == blocks)
    warps = min(blocks * warps_per_block, max_warps)
    return Occupancy(
        blocks_per_sm=blocks, warps_per_sm=warps, occupancy_pct=100.0 * warps / max_warps,
        limiter=tied[0], limiters=tied,
        blocks_limit_warps=by_warps, blocks_limit_blocks=by_blocks,
        blocks_limit_registers=by_regs, blocks_limit_shared=by_shared,
        warps_per_block=warps_per_block, registers_per_block=regs_per_block,
        shared_bytes_per_block=smem, max_warps_per_sm=max_warps,
    )
