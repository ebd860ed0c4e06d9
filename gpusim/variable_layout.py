"""Where a kernel's variables live: module-scope and kernel-scope variables placed in their
state spaces (static then dynamic shared memory, local, `.param` offsets), global and
`.const` ones allocated in the launch's device memory with their initial bytes.

Each variable sits at its `.align` (else its element size); dynamic shared memory (an
`.extern .shared` array, or one of size 0) starts after the static, at the largest
alignment those declarations ask (16 bytes if none).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.program import Kernel, Program, VarDecl
from isa.types import dtype as ptx_dtype


@dataclass(frozen=True)
class Layout:
    """Where every variable lives: symbol -> (space, address in that space)."""
    symbols: dict[str, tuple[str, int]]
    static_shared_bytes: int
    dynamic_shared_offset: int
    local_bytes: int


def _align(x: int, a: int) -> int:
    return -(-x // max(a, 1)) * max(a, 1)


def init_bytes(v: VarDecl) -> bytes | None:
    if v.init is None:
        return None
    dt = ptx_dtype(v.type)
    n = v.size_bytes // dt.itemsize
    vals = list(v.init) + [0] * (n - len(v.init))
    if dt.kind == "f":
        arr = np.array(vals, dtype=np.float64).astype(dt)
    else:
        arr = np.array([int(x) & ((1 << (8 * dt.itemsize)) - 1) for x in vals], dtype=np.uint64).astype(
            {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize])
    return arr.tobytes()


def layout(program: Program, kernel: Kernel, memory) -> Layout:
    """Place module-scope and kernel-scope variables; allocate global/const ones in `memory`."""
    symbols: dict[str, tuple[str, int]] = {}
    shared_top = 0
    dynamic: list[VarDecl] = []
    local_top = 0
    for v in list(program.globals) + list(kernel.locals):
        if v.space == "shared":
            if v.linkage == "extern" or (v.dims and v.dims[-1] == 0):
                dynamic.append(v)
                continue
            shared_top = _align(shared_top, v.align or v.elem_bytes)
            symbols[v.name] = ("shared", shared_top)
            shared_top += v.size_bytes
        elif v.space == "local":
            local_top = _align(local_top, v.align or v.elem_bytes)
            symbols[v.name] = ("local", local_top)
            local_top += v.size_bytes
        elif v.space == "global":
            symbols[v.name] = ("global", memory.alloc_global(v.name, v.size_bytes, init_bytes(v), v.align or 256))
        elif v.space == "const":
            addr = memory.alloc_const(v.name, v.size_bytes, init_bytes(v), v.align or 16)
            symbols[v.name] = ("const", addr - memory.const_heap.base)
    dyn_off = _align(shared_top, max([d.align or 16 for d in dynamic], default=16))
    for d in dynamic:
        symbols[d.name] = ("shared", dyn_off)
    param_top = 0                          # the parameters in order, each at its alignment (the .param window)
    for p in kernel.params:
        param_top = _align(param_top, p.align or p.elem_bytes)
        symbols.setdefault(p.name, ("param", param_top))
        param_top += p.size_bytes
    return Layout(symbols, shared_top, dyn_off, local_top)
