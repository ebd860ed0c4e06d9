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
- `registers(compiled)`: registers per thread of a cooperative kernel, from ptxas where
  installed, for the launch checks (`gpusim/launch_plan.py`: `max_cooperative_grid_blocks`,
  what numba-cuda computes, and `check_cooperative_launch`, which refuses a cooperative launch
  of more blocks than can be resident at once, as CUDA's cooperative launch does).
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

from gpusim.frontend import sass
from gpusim.functional.ops import GRID_BARRIER_ID

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
            hit = sass.ptxas_info(instrument(compiled.ptx, 0), compiled.entry, compiled.cc,
                                  ptxas=compiled.assembler).registers_per_thread
        except Exception:                        # no ptxas, or it refused: the kernel's own estimate
            hit = compiled.static_resources.registers_per_thread
        _REGS[key] = hit
    return int(hit)
