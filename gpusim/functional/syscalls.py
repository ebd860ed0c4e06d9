"""PTX system calls `malloc` and `free` (the device heap) and `__assertfail`, executed by the
functional core.

What it models: CUDA's device-side `malloc(size)` / `free(ptr)`, which PTX declares as
`.extern .func` system calls that the driver provides (PTX ISA chapter 7, "System
Calls"). The heap is one region of global memory reserved at launch for a kernel that
calls them (`HEAP_BYTES`, CUDA's default `cudaLimitMallocHeapSize` of 8 MiB); `malloc`
returns a 16-byte aligned pointer inside it (the guarantee the CUDA C++ Programming
Guide gives), `free` returns the block for reuse, `free(NULL)` does nothing. Calls of
one step are carried out lane by lane in lane order (lowest lane first), so the
addresses a launch gets are deterministic. The `call`'s arguments and result are the
call-scope params that `isa.inline` turned into `.local` variables, read and written
directly (they are the ABI's hand-off, not a memory access of the program).

`__assertfail(message, file, line, function, charSize)`, which a failed C `assert` in
linked CUDA C++ calls, stops the launch with a `KernelError` quoting the assertion as the
device runtime prints it (`file:line: function: Assertion `message` failed.`).

Errors (`DeviceHeapError`, naming the kernel, source line, block, thread and sizes):
a request that does not fit in what is left of the heap (CUDA's `malloc` returns NULL
there; numba-cuda's runtime then cannot allocate an array, so gpusim stops with the
reason instead of letting the kernel fault on a null pointer), and `free` of a pointer
`malloc` did not return or already freed (undefined behaviour in CUDA).

Does not model: CUDA's allocator algorithm (undocumented; here freed blocks of the same
rounded size are reused first, then the top of the heap grows, then the first free
block large enough is split), so addresses differ from a GPU's and a program must not
depend on them; heap contents surviving the launch (a launch's heap is fresh; what it
did not free is gone with it); `cudaDeviceSetLimit`. Timing: the `call` is one
instruction of the kernel; the allocator's own work inside the driver's code is not
timed (DEVIATIONS.md).

Sources: PTX ISA 8.x, section "System Calls" (malloc, free prototypes); CUDA C++
Programming Guide, "Dynamic Global Memory Allocation and Operations" (heap size
default 8 MB, 16-byte alignment, free of NULL).
"""
from __future__ import annotations

import bisect

import numpy as np

from gpusim.errors import KernelError
from isa.program import ArgList, Sym
from isa.semantics.control import SYSTEM_CALL_TYPES
from isa.errors import UnsupportedInstruction

HEAP_BYTES = 8 << 20          # cudaLimitMallocHeapSize default: 8 MiB
ALIGN_BYTES = 16              # malloc's alignment guarantee
HEAP_NAME = "device malloc heap"


def _cstring(memory, addr: int) -> str:
    """The NUL-terminated string at generic address `addr` (global or constant memory)."""
    for heap in (memory.const_heap, memory.global_heap):
        off = addr - heap.base
        if 0 <= off < len(heap.data):
            return bytes(heap.data[off:off + 4096]).split(b"\0", 1)[0].decode(errors="replace")
    return f"<string at {addr:#x}>"


class DeviceHeapError(KernelError):
    """Device malloc could not satisfy a request, or free got a pointer malloc did not return."""


class DeviceHeap:
    """The allocator of one launch's device heap at `base` (absolute global address)."""

    def __init__(self, base: int, nbytes: int = HEAP_BYTES):
        self.base, self.nbytes = int(base), int(nbytes)
        self.top = 0                                   # bytes handed out from the bottom so far
        self.live: dict[int, int] = {}                 # address -> rounded size of blocks in use
        self.free_by_size: dict[int, list[int]] = {}   # rounded size -> freed addresses (reused LIFO)
        self.free_sorted: list[tuple[int, int]] = []   # (address, size) of every freed block
        self.in_use = 0

    def malloc(self, size: int) -> int | None:
        """An address of `size` bytes (0 bytes: a unique 16-byte block), or None if none fits."""
        n = max(ALIGN_BYTES, -(-int(size) // ALIGN_BYTES) * ALIGN_BYTES)
        same = self.free_by_size.get(n)
        if same:
            addr = same.pop()
            self.free_sorted.remove((addr, n))
        elif self.top + n <= self.nbytes:
            addr = self.base + self.top
            self.top += n
        else:
            k = next((i for i, (_, s) in enumerate(self.free_sorted) if s >= n), None)
            if k is None:
                return None
            addr, s = self.free_sorted.pop(k)
            self.free_by_size[s].remove(addr)
            if s > n:
                self._release(addr + n, s - n)
        self.live[addr] = n
        self.in_use += n
        return addr

    def free(self, addr: int) -> bool:
        """Release a block `malloc` returned (True), or report a bad pointer (False)."""
        n = self.live.pop(int(addr), None)
        if n is None:
            return False
        self.in_use -= n
        self._release(int(addr), n)
        return True

    def _release(self, addr: int, n: int) -> None:
        self.free_by_size.setdefault(n, []).append(addr)
        bisect.insort(self.free_sorted, (addr, n))


_CALLS_MALLOC: dict = {}


def calls_malloc(kernel) -> bool:
    """Whether a linked kernel (calls inlined) carries out `malloc` or `free` (found once per
    kernel object: every launch of a compiled kernel asks)."""
    hit = _CALLS_MALLOC.get(id(kernel))
    if hit is None or hit[0] is not kernel:
        if len(_CALLS_MALLOC) > 256:
            _CALLS_MALLOC.clear()
        hit = _CALLS_MALLOC[id(kernel)] = (kernel, any(i.opcode == "call" and _target(i) in ("malloc", "free")
                                                        for i in kernel.instructions))
    return hit[1]


def _target(ins) -> str | None:
    ops = ins.operands
    t = ops[1] if len(ops) > 1 and isinstance(ops[0], ArgList) else (ops[0] if ops else None)
    return t.name if isinstance(t, Sym) else None


class SysCallOp:
    """`call (retval0), malloc, (param0)` / `call free, (param0)` for the active lanes."""
    __slots__ = ("index", "guard", "info", "name", "args", "ret")

    def __init__(self, dec, ins, index: int, guard):
        self.index, self.guard, self.name = index, guard, _target(ins)
        ops = ins.operands
        rets = ops[0].elems if isinstance(ops[0], ArgList) else ()
        args = ops[-1].elems if isinstance(ops[-1], ArgList) and ops[-1] is not ops[0] else ()
        want_rets, want_args = SYSTEM_CALL_TYPES[self.name]
        if len(args) != len(want_args) or len(rets) != len(want_rets):
            raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                         reason=f"{self.name} takes {len(want_args)} arguments and returns "
                                                f"{len(want_rets)} values")
        self.args = [(self._local(dec, a, ins), t) for a, t in zip(args, want_args)]
        self.ret = self._local(dec, rets[0], ins) if rets else None

    @staticmethod
    def _local(dec, sym, ins) -> int:
        space, off = dec.symbols.get(sym.name, (None, 0)) if isinstance(sym, Sym) else (None, 0)
        if space != "local":
            raise UnsupportedInstruction(ins.mnemonic, ptx_line=ins.ptx_line, kernel=dec.kernel.name,
                                         reason=f"system call operand {sym!r} is not a call-scope param")
        return int(off)

    def run(self, x) -> None:
        st = x.state
        m = st.m
        if self.guard is not None:
            s, neg = self.guard
            g = st.read(s, np.dtype(np.bool_))
            g = ~g if neg else g
            g = np.broadcast_to(g, (st.hi - st.lo,))
            m = g if m is None else (m & g)
        lanes = np.arange(st.lo, st.hi) if m is None else st.lo + np.flatnonzero(m)
        if not len(lanes):
            return
        lsu = x.lsu
        view = lsu.local.view(np.uint64)
        stride = lsu.local_stride
        if self.name == "__assertfail":
            self._assert_failed(x, int(lanes[0]))
        args = view[(lanes * stride + self.args[0][0]) // 8]
        heap = getattr(lsu.mem, "device_heap", None)
        if heap is None:
            raise AssertionError("a kernel that calls malloc was launched without a device heap")
        if self.name == "malloc":
            out = np.zeros(len(lanes), np.uint64)
            for k, size in enumerate(args.tolist()):
                addr = heap.malloc(size)
                if addr is None:
                    self._fail(x, int(lanes[k]), f"malloc({size}) found no free block: {heap.in_use} of the "
                               f"{heap.nbytes}-byte device heap are in use (cudaLimitMallocHeapSize; CUDA's "
                               "malloc would return NULL)")
                out[k] = addr
            view[(lanes * stride + self.ret) // 8] = out
        else:
            for k, ptr in enumerate(args.tolist()):
                if ptr and not heap.free(ptr):
                    self._fail(x, int(lanes[k]), f"free({ptr:#x}): not a block malloc returned, or freed already")

    def _assert_failed(self, x, lane: int) -> None:
        """`__assertfail(message, file, line, function, char size)`: a C `assert` failed (CUDA
        stops the kernel: "device-side assert triggered"); report it with the C message."""
        local = x.lsu.local
        base = lane * x.lsu.local_stride
        vals = [int(local[base + off:base + off + (4 if t == "u32" else 8)].view(
            np.uint32 if t == "u32" else np.uint64)[0]) for off, t in self.args]
        msg, file, line, func = (_cstring(x.lsu.mem, vals[0]), _cstring(x.lsu.mem, vals[1]), vals[2],
                                 _cstring(x.lsu.mem, vals[3]))
        block, thread = x._where(lane)
        raise KernelError("device-side assert triggered", kernel=x.kernel_name, source=x.source(self.index),
                          block=block, thread=thread, detail=f"{file}:{line}: {func}: Assertion `{msg}` failed.")

    def _fail(self, x, lane: int, detail: str) -> None:
        block, thread = x._where(lane)
        raise DeviceHeapError("device heap error", kernel=x.kernel_name, source=x.source(self.index),
                              block=block, thread=thread, detail=detail)
