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


_PLANS: dict = {}       # id(kernel) -> (kernel, program, `_plan`): the placement is the same every launch


def layout(program: Program, kernel: Kernel, memory) -> Layout:
    """Place module-scope and kernel-scope variables; allocate global/const ones in `memory`."""
    hit = _PLANS.get(id(kernel))
    if hit is None or hit[0] is not kernel or hit[1] is not program:
        if len(_PLANS) > 256:
            _PLANS.clear()
        hit = _PLANS[id(kernel)] = (kernel, program, _plan(program, kernel))
    entries, shared_top, dyn_off, local_top = hit[2]
    symbols: dict[str, tuple[str, int]] = {}
    for name, where, v, init in entries:         # in declaration order, as symbols were always made
        if where == "global":
            symbols[name] = ("global", memory.alloc_global(name, v.size_bytes, init, v.align or 256))
        elif where == "const":
            symbols[name] = ("const", memory.alloc_const(name, v.size_bytes, init, v.align or 16)
                             - memory.const_heap.base)
        elif where[0] == "param":                # (a parameter never hides a variable of the same name)
            symbols.setdefault(name, where)
        else:
            symbols[name] = where
    return Layout(symbols, shared_top, dyn_off, local_top)


def _plan(program: Program, kernel: Kernel) -> tuple[list, int, int, int]:
    """What `layout` does that needs no memory: (entries in order: (name, (space, offset)) for a
    shared, local or param symbol, (name, "global"/"const", declaration, initial bytes) for one
    `layout` allocates; static shared bytes, dynamic shared offset, local bytes)."""
    entries: list = []
    shared_top = 0
    dynamic: list[VarDecl] = []
    local_top = 0
    for v in list(program.globals) + list(kernel.locals):
        if v.space == "shared":
            if v.linkage == "extern" or (v.dims and v.dims[-1] == 0):
                dynamic.append(v)
                continue
            shared_top = _align(shared_top, v.align or v.elem_bytes)
            entries.append((v.name, ("shared", shared_top), None, None))
            shared_top += v.size_bytes
        elif v.space == "local":
            local_top = _align(local_top, v.align or v.elem_bytes)
            entries.append((v.name, ("local", local_top), None, None))
            local_top += v.size_bytes
        elif v.space in ("global", "const"):
            entries.append((v.name, v.space, v, init_bytes(v)))
    dyn_off = _align(shared_top, max([d.align or 16 for d in dynamic], default=16))
    for d in dynamic:
        entries.append((d.name, ("shared", dyn_off), None, None))
    param_top = 0                          # the parameters in order, each at its alignment (the .param window)
    for p in kernel.params:
        param_top = _align(param_top, p.align or p.elem_bytes)
        entries.append((p.name, ("param", param_top), None, None))
        param_top += p.size_bytes
    return entries, shared_top, dyn_off, local_top
