"""initcheck: reads of memory that holds no written value.

- Global memory: every byte of the launch's heap is initialised (arrays copied from
  the host, module-scope variables, the guard gaps never read anyway) except the bytes
  of drop-in device arrays (`cuda.device_array`, `device_array_like`, `DeviceNDArray`,
  their slices and views) that nothing has written yet: they start uninitialised, as
  `cudaMalloc`'s memory does, and each byte becomes initialised when a launch (checked
  or not) or a host write stores to it (`device_memory.py` keeps the flags per byte of
  the allocation between launches). The simulator fills them with zeros so runs are
  deterministic; initcheck reports the reads that rely on it.
- Shared memory: uninitialised at the start of every block; a byte becomes initialised
  when a thread of the block stores to it (or an atomic writes it, or a cp.async copy into
  it completes).

Shadow state is one flag per granule (`sanitizer.granule`: the kernel's smallest access).

A load (or atomic) any of whose bytes is uninitialised is reported: one record per
instruction and space, with the first thread and address and a count of lanes.

`WriteTracker` is the part an unchecked launch runs when one of its device-array
arguments still has unwritten bytes: it only records the stores, so that a later
checked launch knows what that launch wrote.

Does not model: local memory, padding bytes of records.

Source: NVIDIA compute-sanitizer documentation, "Initcheck Tool".
"""
from __future__ import annotations

import numpy as np

from gpusim.sanitizer import granule, spread


class Tool:
    name = "initcheck"

    def __init__(self, san, prepared, uninitialized=()):
        self.san = san
        self.heap = prepared.memory.global_heap
        self.g = g = granule(prepared.decoded)
        self.init = np.ones(-(-len(self.heap.data) // g), bool)     # per granule: written
        for addr, mask in uninitialized:             # (address, per-byte written mask) of device arrays
            off = (addr - self.heap.base) // g       # allocations are 256-byte aligned
            pad = np.ones(-(-len(mask) // g) * g, bool)
            pad[:len(mask)] = mask
            self.init[off:off + len(pad) // g] = pad.reshape(-1, g).all(axis=1)

    def batch(self, x, hooks):
        return _Batch(self, x, hooks)

    def written(self, addr: int, nbytes: int) -> np.ndarray:
        off = (addr - self.heap.base) // self.g
        return np.repeat(self.init[off:off + -(-nbytes // self.g)], self.g)[:nbytes]


class WriteTracker(Tool):
    """initcheck's bookkeeping without its reports: global stores and atomics mark bytes written."""

    def batch(self, x, hooks):
        return _Writes(self)


class _Writes:
    def __init__(self, tool: Tool):
        self.tool = tool

    def access(self, op, space: str, lanes: np.ndarray, off: np.ndarray, mode: str) -> None:
        if mode != "read" and space == "global":
            self.tool.init[spread(off, op.info.access_bytes, self.tool.g)[0]] = True

    def async_write(self, space: str, off: np.ndarray, nbytes: int) -> None:
        if space == "global":
            self.tool.init[spread(off, nbytes, self.tool.g)[0]] = True


class _Batch:
    def __init__(self, tool: Tool, x, hooks):
        self.tool = tool
        self.x = x
        self.hooks = hooks
        self.shared = np.zeros(-(-len(x.lsu.shared) // tool.g), bool)
        self.stride = x.lsu.shared_stride

    def access(self, op, space: str, lanes: np.ndarray, off: np.ndarray, mode: str) -> None:
        shadow = self.shared if space == "shared" else self.tool.init
        b, nb = spread(off, op.info.access_bytes, self.tool.g)
        if mode != "write":
            ok = shadow[b]
            if not ok.all():
                bad = np.flatnonzero(~ok) // nb
                k = int(bad[0])
                lane = int(lanes[k])
                first = int(b[k * nb + int(np.flatnonzero(~ok[k * nb:(k + 1) * nb])[0])]) * self.tool.g
                if space == "shared":
                    address = first - (lane // (self.x.wpc * 32)) * self.stride
                    what = "shared memory no thread of the block has stored to"
                else:
                    address = first + self.tool.heap.base
                    what = "device memory never written (an array from cuda.device_array)"
                self.hooks.report("initcheck", "uninitialized read", space, address,
                                  (self.hooks.who(lane, op.index, mode),), f"reads {what}", len(np.unique(bad)))
        if mode != "read":
            shadow[b] = True

    def async_write(self, space: str, off: np.ndarray, nbytes: int) -> None:
        shadow = self.shared if space == "shared" else self.tool.init
        shadow[spread(off, nbytes, self.tool.g)[0]] = True

    def async_done(self, op, lanes: np.ndarray, off: np.ndarray) -> None:
        """A cp.async copy into shared memory completed: its bytes hold the copied data."""
        self.access(op, "shared", lanes, off, "write")
