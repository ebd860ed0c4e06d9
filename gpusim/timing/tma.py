"""One SM's Tensor Memory Accelerator: the unit that carries out bulk and tensor copies
(`cp.async.bulk*`, SASS `UTMALDG`, `UTMASTG`, `UBLKCP`, `UTMAPF`) between global and shared
memory while the warps go on.

What is modelled: the SM has one TMA unit; it takes one request every
`tensor.tma_request_interval_cycles` (requests of all the SM's warps queue for it in issue
order). A load's sectors are read from the L2 (the L1 is not looked up or filled: the copy
lands in shared memory) through the SM's share of the memory system, and the copy completes
when its last sector is back; a store writes its sectors to the L2 and completes when the
writes are acknowledged; a prefetch reads into the L2 and completes at once for the warp. A
load that names an mbarrier (`mbarrier::complete_tx::bytes`) delivers its bytes to it at
completion (`mbarrier.py`): that, not the issuing warp, is what consumers wait for.

A load's bytes enter shared memory at `tensor.tma_fill_bytes_per_cycle`, one copy after another:
its fill starts once its first line is back at the SM (an L2 hit's latency after the unit took
it; a DRAM read's, where the first line missed) and the unit's previous fill has ended, and the
copy completes at the later of its fill's end and its last sector's return. So a 16 KB bulk
copy takes about 170 cycles more than a 1 KB one, from the L2 as from DRAM, as measured on an
H100 and an H200 (validate/tensor_timing/tma_latency.py, data/measurements/tma_latency_h*.json;
benchmarks/tma_latency_check.py): the fill cannot start before the data is there.

A box of many rows from DRAM ends with its slowest line, and the more channels it touches
the likelier one of them is refreshing (`memory/hbm.py`): a 2-D box of 32-128 rows takes
150-380 cycles longer than one line on the GPUs, at any row pitch from 128 B to 64 KB, and
the model's single copies are within 67 / 83 cycles of the H100's / H200's on average
(benchmarks/tma_latency_check.py on tma_latency_h*_run2.json).

What is not: the unit's address generation per box row (a box's requests are sent as one
batch of sectors), multicast within a cluster, L2 cache hints, the im2col modes. Measured and
not reproduced: under load, 8 KB copies from all 132 SMs at once take 1,561-1,678 cycles from
DRAM on an H100 (1,404-1,519 H200), the model 973-1,256 (tma_latency_h*_run3.json): the
GPUs' channels do not serve the SMs' requests in one common order, the model's do
(benchmarks/hbm_burst_order.py). Wherever the copies land (validate/dram_concurrency_probe.py,
data/measurements/dram_concurrency_h100_run3.json): on the GPU a copy takes its one-block time
plus about all blocks' bytes in flight at the DRAM's peak, at 38% of that peak; the model's stay
flat (docs/mechanisms_24.md section 28).

The payload of a copy (from the functional core, `access_payloads.py`): its global sectors (a sector
array, or a store's (sectors, byte masks)) and, for a load with an mbarrier, the
`MbarrierAccess` of its complete_tx, as a `CopyPayload`.

Sources: NVIDIA Hopper architecture whitepaper (the TMA unit, one per SM, asynchronous
bulk copies completing on a transaction barrier); CUDA C++ Programming Guide, "Asynchronous
Data Copies using the Tensor Memory Accelerator"; PTX ISA 9.0, "cp.async.bulk.tensor".
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CopyPayload:
    """A bulk copy's global sectors (a load's array, or a store's (sectors, masks)) and the
    mbarrier its bytes complete (a `payloads.MbarrierAccess` 'complete_tx', or None)."""
    sectors: object
    mbarrier: object = None


class TMAUnit:
    """`copy(t, sectors, store)` -> completion; `free` is when it takes its next request."""

    def __init__(self, spec, sm_id: int, lower):
        self.interval = spec.tensor.tma_request_interval_cycles
        rate = spec.tensor.tma_fill_bytes_per_cycle
        self.fill_cycles_per_byte = 1.0 / rate if rate > 0 else 0.0
        self.fill_free = float("-inf")      # when the unit's fill of shared memory is free
        self.sm_id = sm_id
        self.lower = lower                  # the memory system below the SM (L1Cache.lower), or None
        self.free = float("-inf")
        self.requests = 0
        self.bytes = 0

    def accept(self, t: float) -> float:
        """When a request issued at `t` starts: the unit takes one every `interval` cycles."""
        start = t if t > self.free else self.free
        self.free = start + self.interval
        self.requests += 1
        return start

    def copy(self, t: float, sectors, store: bool = False, prefetch: bool = False) -> float:
        """A request issued at `t` moving `sectors` (address >> 5; a store: (sectors, masks)):
        when it has completed (a prefetch: when the unit took it)."""
        start = self.accept(t)
        if self.lower is None or sectors is None:
            return start
        masks = None
        if store:
            sectors, masks = sectors[0], sectors[1]
        lst = sectors.tolist() if hasattr(sectors, "tolist") else list(sectors)
        if not lst:
            return start
        self.bytes += 32 * len(lst)
        if store:
            return self.lower.write(start, self.sm_id, lst, masks)
        done = self.lower.read(start, self.sm_id, lst)
        if prefetch:
            return start
        return max(done, self.fill(min(self.lower.first_back, done), 32 * len(lst)))

    def fill(self, first: float, nbytes: int) -> float:
        """When the fill of shared memory with a load's `nbytes`, whose first line is back at
        `first`, ends."""
        if not self.fill_cycles_per_byte:
            return first
        begin = max(first, self.fill_free)
        self.fill_free = begin + nbytes * self.fill_cycles_per_byte
        return self.fill_free
