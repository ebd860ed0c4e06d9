"""A launch planned once and reused: the `plan_launch` of a kernel launched again with arguments
of the same kinds.

Planning a launch (`launch_plan.plan_launch`) compiles or finds the kernel, lays its variables
out in a fresh device memory, marshals the arguments (checking each against its parameter),
seals the heaps and checks shared memory and clusters: about a tenth of a millisecond, which a
small launch (one block of a Triton kernel, about 2 ms in all) pays every time. What it gives
depends only on the kernel as compiled, the GPU, the geometry, the dynamic shared memory, the
core, and per argument: an array's element type, shape, layout, writability and which earlier
argument is the same array; a scalar's type and exact bytes. A `Template` keeps the plan of
the first such launch and the layout of its device memory (every allocation at its address,
the bytes of those that are not arguments: module-scope variables' initial values); a launch
with the same key gets the same `LaunchPlan` object, a new memory with that layout, its own
arrays' bytes copied in, and its own arrays to copy back.

Only launches whose memory is nothing but that take templates: a source opts in with
`template_key` (Triton kernels do); launches with `peer_args`, `device_addresses` or clusters
given, with device views, tensor maps, structured scalars or non-contiguous arrays among their
arguments, and kernels with a device heap (malloc) or aliased ranges, are planned every time.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from gpusim.frontend.source import Marshalled
from gpusim.functional.memory import DeviceMemory

MAX_TEMPLATES = 64
_TEMPLATES: dict = {}
_LOCK = threading.Lock()


_PLAIN = frozenset((np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
                    np.float32, np.float64, np.bool_))


def argument_key(args: tuple) -> tuple | None:
    """What of `args` a plan depends on (module docstring), or None for an argument a template
    does not take."""
    out = []
    first: dict[int, int] = {}
    for i, a in enumerate(args):
        t = type(a)
        if t in _PLAIN:                              # (a numpy scalar of a plain type: the common case first)
            out.append((t, a.tobytes()))
        elif t is np.ndarray:
            f = a.flags
            if not (f.c_contiguous or f.f_contiguous) or a.dtype.hasobject:
                return None
            out.append((a.dtype, a.shape, f.c_contiguous, f.writeable, first.setdefault(id(a), i)))
        elif t is int or t is bool:
            out.append((t, a))
        elif t is float:
            out.append((t, a.hex()))                 # (-0.0 and 0.0 are two keys)
        elif isinstance(a, np.generic) and a.dtype.names is None and not a.dtype.hasobject:
            out.append((t, a.dtype.str, a.tobytes()))
        else:
            return None
    return tuple(out)


def key(source, spec, geometry, args: tuple, shared_bytes: int, core: str) -> tuple | None:
    """The template key of a launch (None: planned every time)."""
    of = getattr(source, "template_key", None)
    if of is None:
        return None
    k = of(spec)
    if k is None:
        return None
    a = argument_key(args)
    if a is None:
        return None
    return (k, id(spec), geometry.grid, geometry.block, int(shared_bytes), core, a)


def find(k: tuple, spec, args: tuple):
    """(plan, memory, marshalled) for a launch with template key `k`, or None where there is no
    template yet (or it was made for another spec object of the same id)."""
    with _LOCK:
        t = _TEMPLATES.get(k)
    if t is None or t.plan.spec is not spec:
        return None
    return t.instantiate(args)


def kept(k: tuple) -> "Template | None":
    """The template of key `k`, or None."""
    with _LOCK:
        return _TEMPLATES.get(k)


def keep(k: tuple, plan, memory: DeviceMemory, marshalled: Marshalled) -> None:
    """Make a template of a launch just planned, where its memory is what a template restores."""
    t = Template.of(plan, memory, marshalled)
    if t is None:
        return
    with _LOCK:
        if len(_TEMPLATES) >= MAX_TEMPLATES:
            _TEMPLATES.clear()
        _TEMPLATES[k] = t


@dataclass(frozen=True)
class Template:
    plan: object                       # the LaunchPlan every launch of the key gets
    layout: DeviceMemory               # the memory's allocations, with the bytes that are not arguments'
    slots: tuple                       # per distinct array argument: (index, heap offset, bytes, copied back)
    params: dict                       # the .param bytes (the plan's)
    arrays: list                       # per argument: its arrays' (address, bytes)

    @classmethod
    def of(cls, plan, memory: DeviceMemory, marshalled: Marshalled) -> "Template | None":
        if memory.device_heap is not None or memory.global_heap.aliases or memory.const_heap.aliases \
                or marshalled.records or marshalled.keep:
            return None
        base = memory.global_heap.base
        back = {addr for _, addr in marshalled.copyback}
        slots, seen = [], set()
        for i, ranges in enumerate(marshalled.arrays):
            if len(ranges) > 1:
                return None                   # (an argument of several ranges: a tensor map's)
            for addr, nbytes in ranges:
                if addr not in seen:          # (the same array passed again: one allocation)
                    seen.add(addr)
                    slots.append((i, addr - base, nbytes, addr in back))
        if len(back) != sum(s[3] for s in slots):
            return None                       # something copied back that is not an argument's array
        return cls(plan, memory.layout_copy(leave_out=seen), tuple(slots), marshalled.params,
                   [list(r) for r in marshalled.arrays])

    def instantiate(self, args: tuple):
        """(plan, a fresh memory holding `args`' arrays, their marshalled form)."""
        mem = self.layout.layout_copy()
        heap = mem.global_heap
        data, base = heap.data, heap.base
        copyback = []
        for i, off, nbytes, back in self.slots:
            a = args[i]
            if nbytes:
                data[off:off + nbytes] = a.ravel(order="K").view(np.uint8)
            if back:
                copyback.append((a, base + off))
        return self.plan, mem, Marshalled(self.params, copyback, arrays=self.arrays)
