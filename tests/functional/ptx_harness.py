"""Test-only harness: run a PTX kernel text at the functional layer (no Numba, no front end).

`run_ptx(text, entry, grid, block, params)` parses the module, lays out its variables, passes
`params` (numpy arrays become device allocations whose address is the parameter; numpy scalars
are passed by value), runs every block in one batch with the chosen core, and returns the arrays
as the kernel left them plus the executor (counters, shared memory). gpusim's PTX front end
(`gpusim.PtxSource`, being written) supersedes this for users.
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.counters import Counters, metric_values
from gpusim.functional.decode import Decoder
from gpusim.functional.executor import BatchExecutor
from gpusim.functional.geometry import Geometry
from gpusim.functional.fastpath import factory
from gpusim.functional.memory import DeviceMemory
from gpusim.variable_layout import layout
from isa.parser import parse


def run_ptx(text: str, entry: str, grid, block, params: list, *, shared_bytes: int = 0,
            core: str = "reference", value_free: frozenset = frozenset(), dk=None, pad: int = 0):
    """`dk`: the decoded kernel of an earlier run (`x.dk`) run again, as a kernel's next launch
    runs its decoded ops again (what they keep included); `pad`: bytes allocated before the
    arguments (their addresses move)."""
    prog = parse(text)
    k = prog.kernel(entry)
    mem = DeviceMemory()
    lay = layout(prog, k, mem)
    if pad:
        mem.alloc_array(np.zeros(pad, np.uint8), "pad")
    raw, arrays = {}, []
    for decl, v in zip(k.params, params):
        if isinstance(v, np.ndarray):
            v = np.ascontiguousarray(v)
            addr = mem.alloc_array(v, decl.name)
            arrays.append((addr, v))
            raw[decl.name] = np.uint64(addr).tobytes()
        else:
            raw[decl.name] = np.asarray(v).tobytes()
    mem.seal()
    dk = dk or Decoder(k, lay.symbols, factory(core)).decode()
    geo = Geometry(tuple(grid), tuple(block))
    counters = Counters(len(dk.infos), len(dk.blocks))
    smem = lay.dynamic_shared_offset + shared_bytes if shared_bytes else lay.static_shared_bytes
    x = BatchExecutor(dk, geo, 0, geo.nblocks, mem, raw, smem, lay.local_bytes, counters, entry)
    x.value_free = value_free                    # instructions whose results are left out (relevance.py)
    x.run()
    out = []
    for addr, v in arrays:
        r = np.empty_like(v)
        mem.copy_back(addr, r)
        out.append(r)
    return out, x


def metrics(x) -> dict:
    """Nsight-named totals of a harness run."""
    dk = x.dk
    block_of = np.zeros(len(dk.infos), np.int64)
    for b in dk.blocks:
        block_of[b.first:b.last] = b.index
    return metric_values(x.counters.instruction_table(block_of))


def out_in_kernel(decls: str, body: str) -> str:
    """A PTX kernel `k(pout, pin)` over 4-byte elements: each thread has %r1 = its %tid.x, %rd4 =
    &pout[tid], %rd5 = &pin[tid] (registers up to %r9 and %rd9 declared besides `decls`), then
    `body` (ending with `ret;`)."""
    return (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 pout, .param .u64 pin)\n"
            "{\n.reg .b32 %r<10>; .reg .b64 %rd<10>; " + decls + "\n"
            "ld.param.u64 %rd1, [pout];\nld.param.u64 %rd2, [pin];\nmov.u32 %r1, %tid.x;\n"
            "mul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd1, %rd3;\nadd.s64 %rd5, %rd2, %rd3;\n" + body + "}\n")
