"""The kernel as the GPU runs it: SASS, from NVIDIA's own tools, tied to the PTX the
functional core executes.

- `tools.py`: `ptxas` (registers, shared memory, stack, the cubin) and `nvdisasm`.
- `listing.py`: the SASS listing with each instruction's Python and PTX line.
- `operands.py`: which registers a SASS instruction reads and writes.
- `opcodes.py`: the opcode table: each SASS instruction's pipe, latency class and memory.
- `cfg.py`: SASS basic blocks, dominators and loops.
- `mapping.py`: which SASS a warp issues for each PTX basic block it executes
  (the timing model times SASS, the functional core executes PTX).
- `homes.py`: the mapping's first stage: the PTX block (home) each SASS block belongs to.
- `payloads.py`: the mapping's memory payloads: which SASS instruction takes a PTX memory
  instruction's addresses.
"""
import threading

from gpusim.frontend.sass.listing import (LineProfile, Listing, SassInstr, op_class, sass_entry, sass_listing,
                                          sass_profile)
from gpusim.frontend.sass.mapping import SassMap, build_map
from gpusim.frontend.sass.tools import (CACHE_FORMAT, INSTALL_HINT, PtxasInfo, SassToolError,
                                        estimate_registers_from_ptx, have_nvdisasm, have_ptxas, ptxas_info,
                                        ptxas_version, sass_cache_dir)

_MAPS: dict = {}
_LOCK = threading.Lock()


def kernel_map(compiled, decoded) -> SassMap:
    """The SASS of a compiled kernel (`gpusim.frontend.source.CompiledKernel`) mapped onto
    the PTX blocks of its decoded form (cached). Raises `SassToolError` without the tools."""
    key = (compiled.ptx, compiled.entry, compiled.cc, id(decoded))
    with _LOCK:
        m = _MAPS.get(key)
        if m is None or m[0] is not decoded:
            info = ptxas_info(getattr(compiled, "sass_ptx", compiled.ptx), compiled.entry, compiled.cc,
                              ptxas=getattr(compiled, "assembler", None))
            if len(_MAPS) > 256:
                _MAPS.clear()
            m = _MAPS[key] = (decoded, build_map(sass_entry(info.cubin, compiled.entry), decoded))
        return m[1]

__all__ = ["CACHE_FORMAT", "INSTALL_HINT", "LineProfile", "Listing", "PtxasInfo", "SassInstr", "SassMap",
           "SassToolError", "build_map", "estimate_registers_from_ptx", "have_nvdisasm", "have_ptxas", "kernel_map",
           "op_class", "ptxas_info", "ptxas_version", "sass_cache_dir", "sass_entry", "sass_listing", "sass_profile"]
