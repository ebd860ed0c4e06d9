"""Cooperative groups: `cuda.cg.this_grid()` and `grid.sync()`, and the cooperative launch.

numba-cuda lowers `cuda.cg.this_grid()` to a call of `cudaCGGetIntrinsicHandle(1)`
and `g.sync()` to `cudaCGSynchronize(handle, 0)`, two functions of NVIDIA's device
runtime (cudadevrt) that Numba links in; a kernel that uses them is *cooperative*
(numba-cuda `dispatcher.py`: `cooperative = lib.use_cooperative`) and is launched
with `cuLaunchCooperativeKernel`, which refuses a grid whose blocks cannot all be
resident at once (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).

Here:
- `instrument(ptx)` replaces the two `.extern` declarations with PTX definitions:
  the handle is a constant (there is one grid), and the sync is the simulator's grid
  barrier, `barrier.sync GRID_BARRIER_ID` (`gpusim/functional/ops.py`), which the
  functional core releases once every block of the launch waits at it
  (`gpusim/functional/collectives.py`); it returns 0 (cudaSuccess);
- `uses_grid_group(ptx)` is Numba's `cooperative` flag;
- `max_cooperative_grid_blocks(compiled, spec, blockdim, dynsmem)` is what numba-cuda
  computes, the occupancy calculator's blocks per SM times the SM count
  (`cuOccupancyMaxActiveBlocksPerMultiprocessor` x `multiProcessorCount`), with
  registers from ptxas where installed (`registers`);
- `check_cooperative_launch` refuses a cooperative launch of more blocks than that,
  naming kernel, grid, block and the limit, as CUDA's cooperative launch does.
A cooperative launch executes its whole grid as one batch, so every block runs up to
a grid barrier and resumes after it (`PreparedLaunch.blocks_per_batch`).

Does not model: multi-grid groups (`cudaCGGetIntrinsicHandle` scope 2; Numba exposes
only `this_grid`), the timing of a grid barrier (timing such a launch is refused,
`gpusim.api`).

Sources: numba-cuda 0.30 `cudaimpl.py` (`cg.this_grid`, `GridGroup.sync` lowering),
`dispatcher.py` (`_Kernel.max_cooperative_grid_blocks`, cooperative launch); CUDA
Runtime API "cudaLaunchCooperativeKernel"; CUDA C++ Programming Guide, "Grid
Synchronization".
"""
from __future__ import annotations

import re

from gpusim.errors import LaunchError
from gpusim.frontend import sass
from gpusim.functional.memory import DeviceMemory
from gpusim.functional.ops import GRID_BARRIER_ID
from gpusim.launch_config import layout
from gpusim.timing.occupancy import occupancy

_HANDLE = re.compile(r"\.extern\s+\.func\s*\(\s*\.param\s+\.b64\s+\w+\s*\)\s*cudaCGGetIntrinsicHandle\s*\([^)]*\)\s*;")
_SYNC = re.compile(r"\.extern\s+\.func\s*\(\s*\.param\s+\.b32\s+\w+\s*\)\s*cudaCGSynchronize\s*\([^)]*\)\s*;")

_HANDLE_DEF = """.func (.param .b64 func_retval0) cudaCGGetIntrinsicHandle(.param .b32 cudaCGGetIntrinsicHandle_param_0)
{
    .reg .b64 %cgh;
    mov.u64 %cgh, 1;
    st.param.b64 [func_retval0+0], %cgh;
    ret;
}"""

_SYNC_DEF = f""".func (.param .b32 func_retval0) cudaCGSynchronize(.param .b64 cudaCGSynchronize_param_0, .param .b32 cudaCGSynchronize_param_1)
{{
    .reg .b32 %cgs;
    barrier.sync {GRID_BARRIER_ID};
    mov.u32 %cgs, 0;
    st.param.b32 [func_retval0+0], %cgs;
    ret;
}}"""


def uses_grid_group(ptx: str) -> bool:
    """Whether the kernel uses cooperative groups' grid group (Numba: `cooperative`)."""
    return "cudaCGGetIntrinsicHandle" in ptx or "cudaCGSynchronize" in ptx


def instrument(ptx: str, barrier_id: int = GRID_BARRIER_ID) -> str:
    """`ptx` with the device runtime's grid-group functions defined (see module doc);
    `barrier_id=0` gives PTX ptxas accepts (for its register count)."""
    if not uses_grid_group(ptx):
        return ptx
    ptx = _HANDLE.sub(lambda m: _HANDLE_DEF, ptx, count=1)
    sync = _SYNC_DEF.replace(f"barrier.sync {GRID_BARRIER_ID};", f"barrier.sync {barrier_id};")
    return _SYNC.sub(lambda m: sync, ptx, count=1)


_REGS: dict = {}


def registers(compiled) -> int:
    """Registers per thread of a cooperative kernel: ptxas' count on the PTX with the grid
    functions defined (the extern declarations alone do not assemble), else the timing
    model's estimate (`gpusim.timing.resources.registers`)."""
    key = (compiled.ptx, compiled.entry, compiled.cc)
    hit = _REGS.get(key)
    if hit is None:
        try:
            if not sass.have_ptxas():
                raise RuntimeError("no ptxas")
            hit = sass.ptxas_info(instrument(compiled.ptx, 0), compiled.entry, compiled.cc).registers_per_thread
        except Exception:                        # no ptxas, or it refused: the kernel's own estimate
            hit = compiled.static_resources.registers_per_thread
        _REGS[key] = hit
    return int(hit)


def _threads(blockdim) -> int:
    dims = blockdim if isinstance(blockdim, (tuple, list)) else (blockdim,)
    n = 1
    for d in dims:
        n *= int(d)
    return n


def max_cooperative_grid_blocks(compiled, spec, blockdim, dynsmem: int = 0) -> int:
    """Blocks of `blockdim` threads a cooperative launch of `compiled` may have on `spec`."""
    threads = _threads(blockdim)
    regs = registers(compiled)
    static = layout(compiled.program, compiled.kernel, DeviceMemory()).static_shared_bytes
    occ = occupancy(spec, threads, int(regs), int(static) + int(dynsmem))
    return occ.blocks_per_sm * spec.sm_count


def check_cooperative_launch(prepared) -> None:
    """LaunchError when the grid of a cooperative kernel cannot be resident at once."""
    geo = prepared.geometry
    regs = registers(prepared.compiled)
    occ = occupancy(prepared.spec, geo.threads_per_block, int(regs), int(prepared.block_shared_bytes))
    most = occ.blocks_per_sm * prepared.spec.sm_count
    if geo.nblocks > most:
        raise LaunchError(
            f"kernel {prepared.name} uses cuda.cg.this_grid() (a cooperative kernel: every block must be resident "
            f"at once, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE): grid {prepared.grid} is {geo.nblocks:,} blocks of "
            f"{geo.threads_per_block} threads, but {prepared.spec.name} holds at most {most:,} "
            f"({occ.blocks_per_sm} per SM, limited by {occ.limiter}, x {prepared.spec.sm_count} SMs); "
            f"launch at most max_cooperative_grid_blocks({geo.threads_per_block}) = {most:,} blocks")
