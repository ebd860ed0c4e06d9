"""The kernel as the GPU runs it: SASS, from NVIDIA's own tools, tied to the PTX the
functional core executes.

- `tools.py`: `ptxas` (registers, shared memory, stack, the cubin) and `nvdisasm`.
- `listing.py`: the SASS listing with each instruction's Python and PTX line.
- `operands.py`: which registers a SASS instruction reads and writes.
- `cfg.py`: SASS basic blocks, dominators and loops.
- `mapping.py`: which SASS a warp issues for each PTX basic block it executes
  (the timing model times SASS, the functional core executes PTX).
"""
from gpusim.frontend.sass.listing import (LineProfile, Listing, SassInstr, op_class, sass_entry, sass_listing,
                                          sass_profile)
from gpusim.frontend.sass.tools import (CACHE_FORMAT, INSTALL_HINT, PtxasInfo, SassToolError,
                                        estimate_registers_from_ptx, have_nvdisasm, have_ptxas, ptxas_info,
                                        ptxas_version, sass_cache_dir)

__all__ = ["CACHE_FORMAT", "INSTALL_HINT", "LineProfile", "Listing", "PtxasInfo", "SassInstr", "SassToolError",
           "estimate_registers_from_ptx", "have_nvdisasm", "have_ptxas", "op_class", "ptxas_info", "ptxas_version",
           "sass_cache_dir", "sass_entry", "sass_listing", "sass_profile"]
