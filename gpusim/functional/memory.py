"""Device memory of one launch: the global heap, and per-block/per-thread spaces.

Global memory is one flat byte heap starting at `isa.memory_map.GLOBAL_BASE`;
every allocation (each array argument, each module-scope `.global`) is placed at a
512-byte aligned address with an unmapped guard gap after it, so an access past the
end of an array lands in no allocation and is reported, as compute-sanitizer's
memcheck would, instead of silently touching a neighbour. `.const` data lives in its
own heap mapped at the const window. An alias (`Heap.map_alias`) maps a range of
addresses outside the heap onto bytes inside it: device arrays a kernel captured as
globals live at their drop-in addresses (`gpusim/frontend/captured.py`). Shared and local memory are arrays indexed by
(block slot, offset) and (thread slot, offset); their generic addresses are offsets
inside the shared and local windows.

Does not model: caches, timing, virtual memory pages, memory consistency between
concurrently running blocks (blocks run one batch after another, lanes in lockstep).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.memory_map import CONST_WINDOW_BASE, GLOBAL_BASE, WINDOWS, WINDOW_BYTES
from gpusim.errors import GpusimError

# cudaMalloc guarantees 256-B alignment and gives 512 in practice (the device TEXTURE_ALIGNMENT; to confirm
# on the GPU: python -m validate.alloc_alignment_probe); which bins of a
# small histogram share the L2's 512-B atomic granules depends on it (timing/memory/l2_atomics.py):
# on the H200, histogram_global/large's 1-KiB bins split at bin 128 (two granules, 2 passes at a time)
ALLOC_ALIGN = 512
GUARD_BYTES = 256          # unmapped gap after every allocation
# Where a launch names its arrays' device addresses (`gpusim.launch(device_addresses=...)`, what
# `validate measure` records), each array goes at the same address modulo a 2-MiB large page: the
# GPU maps its heap in 2-MiB pages, so the bits above are the physical page's, which the virtual
# address does not tell; those below decide the L2 slice and atomic unit a line goes to.
PLACEMENT_PAGE_BYTES = 2 << 20


@dataclass(frozen=True, slots=True)
class Allocation:
    name: str
    address: int           # first byte, absolute generic/global address
    nbytes: int


class Heap:
    """A flat byte heap holding a set of allocations at fixed absolute addresses."""

    def __init__(self, base: int, label: str):
        self.base = base
        self.label = label
        self.allocations: list[Allocation] = []
        self._pending: list[tuple[int, bytes | np.ndarray]] = []
        self._top = 0
        self.data = np.zeros(0, np.uint8)
        self._starts = np.zeros(0, np.uint64)
        self._ends = np.zeros(0, np.uint64)
        self.aliases: list[tuple[int, int, int]] = []     # (first address, nbytes, heap address it maps to)
        self._alias_starts = self._alias_ends = self._alias_delta = None
        self._inits: list | None = None       # a layout copy's: (offset, bytes) of its allocations' contents

    def layout_copy(self, leave_out=frozenset()) -> "Heap":
        """A sealed heap with these allocations at the same addresses, holding the bytes of every
        allocation whose address is not in `leave_out` (zeros there, and outside allocations);
        a copy of a copy holds what that one holds (`gpusim.launch_template`)."""
        if self.aliases:
            raise ValueError("a heap with aliases has no layout copy")
        h = Heap(self.base, self.label)
        h.allocations, h._top, h._starts, h._ends = list(self.allocations), self._top, self._starts, self._ends
        inits = self._inits
        if inits is None:
            inits = []
            for a in self.allocations:
                off = a.address - self.base
                raw = self.data[off:off + a.nbytes]
                if a.address not in leave_out and raw.any():
                    inits.append((off, raw.copy()))
        h._inits = inits
        h.data = np.zeros(self.data.size, np.uint8)
        for off, raw in inits:
            h.data[off:off + raw.size] = raw
        return h

    def alloc(self, nbytes: int, name: str, init: bytes | np.ndarray | None = None, align: int = ALLOC_ALIGN,
              phase: int | None = None) -> int:
        """Reserve `nbytes` (copying `init` in) and return the absolute address: the next `align`
        boundary, or with `phase` the first address at or after the heap's top that equals
        `phase` modulo `PLACEMENT_PAGE_BYTES`."""
        if phase is None:
            off = -(-self._top // align) * align
        else:
            off = self._top + (phase - self.base - self._top) % PLACEMENT_PAGE_BYTES
        addr = self.base + off
        self.allocations.append(Allocation(name, addr, int(nbytes)))
        if init is not None:
            self._pending.append((off, init))
        self._top = off + max(int(nbytes), 1) + GUARD_BYTES
        return addr

    def map_alias(self, start: int, nbytes: int, target: int) -> None:
        """Make addresses start .. start + nbytes - 1 reach target .. target + nbytes - 1
        (a range outside the heap and every state-space window; ranges must not overlap)."""
        end = start + nbytes
        clash = [n for n, b in WINDOWS.items() if b and start < b + WINDOW_BYTES and b < end]
        if end > self.base and start < self.base + (1 << 40) or clash:
            raise GpusimError(f"cannot map {nbytes} bytes at {start:#x} into the {self.label} heap: the range "
                              f"overlaps the simulator's own address windows ({clash or 'heap'})")
        for s0, n0, _ in self.aliases:
            if start < s0 + n0 and s0 < end:
                raise ValueError(f"alias {start:#x}+{nbytes} overlaps alias {s0:#x}+{n0}")
        self.aliases.append((int(start), int(nbytes), int(target)))

    def translate(self, addrs: np.ndarray) -> np.ndarray:
        """`addrs` with every address inside an alias replaced by the heap address it maps to."""
        i = np.searchsorted(self._alias_starts, addrs, side="right").astype(np.int64) - 1
        ic = np.where(i >= 0, i, 0)
        inside = (i >= 0) & (addrs < self._alias_ends[ic])
        if not inside.any():
            return addrs
        return np.where(inside, addrs + self._alias_delta[ic], addrs)

    def seal(self) -> None:
        """Materialise the heap once every allocation is known."""
        data = np.zeros(self._top + 16, np.uint8)
        for off, init in self._pending:
            raw = np.frombuffer(init, np.uint8) if isinstance(init, (bytes, bytearray)) else \
                np.asarray(init).ravel(order="K").view(np.uint8)
            data[off:off + raw.size] = raw
        self._pending.clear()
        self.data = data
        self._starts = np.array([a.address for a in self.allocations], np.uint64)
        self._ends = np.array([a.address + a.nbytes for a in self.allocations], np.uint64)
        if self.aliases:
            al = sorted(self.aliases)
            self._alias_starts = np.array([a[0] for a in al], np.uint64)
            self._alias_ends = np.array([a[0] + a[1] for a in al], np.uint64)
            self._alias_delta = np.array([(a[2] - a[0]) % (1 << 64) for a in al], np.uint64)   # wraps mod 2**64

    def check(self, addrs: np.ndarray, nbytes: int) -> np.ndarray:
        """Boolean mask of addresses whose `nbytes` access lies inside one allocation."""
        i = np.searchsorted(self._starts, addrs, side="right").astype(np.int64) - 1
        ok = i >= 0
        ic = np.where(ok, i, 0)
        ok &= addrs + np.uint64(nbytes) <= self._ends[ic] if len(self._ends) else False
        return ok

    def nearest(self, addr: int) -> str:
        """A phrase locating `addr` relative to the closest allocation, for error messages."""
        if not self.allocations:
            return "no allocations exist"
        best = min(self.allocations, key=lambda a: min(abs(addr - a.address), abs(addr - (a.address + a.nbytes))))
        if addr < best.address:
            return f"{best.address - addr} bytes before {best.name} ({best.nbytes} bytes at {best.address:#x})"
        return f"{addr - (best.address + best.nbytes)} bytes after the end of {best.name} ({best.nbytes} bytes at {best.address:#x})"

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        off = addr - self.base
        return self.data[off:off + nbytes]


class DeviceMemory:
    """Global and constant memory of one launch (the "device" side of a round trip)."""

    def __init__(self) -> None:
        self.global_heap = Heap(GLOBAL_BASE, "global")
        self.const_heap = Heap(CONST_WINDOW_BASE, "const")
        self.symbols: dict[str, int] = {}      # module-scope variable name -> address
        self.device_heap = None                # syscalls.DeviceHeap when the kernel calls malloc/free
        self._places: list[int | None] = []    # the next array arguments' addresses (`place_arrays`)

    def layout_copy(self, leave_out=frozenset()) -> "DeviceMemory":
        """A new memory with this one's allocations and symbols, its heaps holding the bytes of
        every allocation but those at the addresses in `leave_out` (`Heap.layout_copy`)."""
        if self.device_heap is not None:
            raise ValueError("a memory with a device heap has no layout copy")
        new = DeviceMemory()
        new.symbols = dict(self.symbols)
        new.global_heap = self.global_heap.layout_copy(leave_out)
        new.const_heap = self.const_heap.layout_copy(leave_out)
        return new

    def place_arrays(self, addresses) -> None:
        """Put the next arrays `alloc_array` copies (a launch's array arguments, in order) at these
        device addresses modulo `PLACEMENT_PAGE_BYTES` (None: the next boundary, as without)."""
        self._places = list(addresses)[::-1]

    def unplaced(self) -> int:
        """How many of `place_arrays`' addresses no array has taken."""
        return len(self._places)

    def alloc_array(self, arr: np.ndarray, name: str) -> int:
        """Copy a host array to the device (its bytes in memory order) and return its address."""
        a = np.asarray(arr)
        if not (a.flags.c_contiguous or a.flags.f_contiguous):
            raise ValueError(f"{name}: alloc_array needs a contiguous array; make it contiguous first")
        phase = self._places.pop() if self._places else None
        return self.global_heap.alloc(a.nbytes, name, init=a.ravel(order="K").view(np.uint8) if a.size else None,
                                      phase=phase)

    def alloc_global(self, name: str, nbytes: int, init: bytes | None = None, align: int = ALLOC_ALIGN) -> int:
        addr = self.global_heap.alloc(nbytes, name, init, align)
        self.symbols[name] = addr
        return addr

    def alloc_const(self, name: str, nbytes: int, init: bytes | None = None, align: int = 16) -> int:
        addr = self.const_heap.alloc(nbytes, name, init, align)
        self.symbols[name] = addr
        return addr

    def seal(self) -> None:
        self.global_heap.seal()
        self.const_heap.seal()

    def copy_back(self, addr: int, out: np.ndarray) -> None:
        """Copy device bytes at `addr` into host array `out` (its memory order)."""
        raw = self.global_heap.read(addr, out.nbytes)
        order = "F" if out.flags.f_contiguous and not out.flags.c_contiguous else "C"
        out[...] = raw.view(out.dtype).reshape(out.shape, order=order)
