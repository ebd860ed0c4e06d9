"""One SM's L1 data cache (the global/local-memory side of L1TEX).

What is modelled:
- Capacity `data_bytes`: the unified L1 + shared `sm.l1_shared_total_bytes` minus the
  shared-memory carve-out the driver picks for the resident blocks
  (`SMSpec.carveout_bytes`, computed by the engine); 128-B lines of 32-B sectors;
  `l1.associativity` ways, `data_bytes / line / ways` sets (set =
  `hashing.unit_of(line, sets)`: contiguous lines take distinct sets, and a power-of-two
  stride does not pile onto one set - a bandwidth kernel whose threads read 1 MiB apart
  hits the L1 97% of the time on H200), LRU
  (an OrderedDict per set, most recent last). `data_bytes` below one set's worth means
  no data cache: every load misses and nothing is allocated.
- Each sector is invalid or valid from a time: its fill time while its miss is in flight
  (the MSHR), the time it arrived after. A load of a sector whose fill is still in
  flight merges into that miss (no new L2 request) and is ready at the fill time.
- Tag and data stages (`l1_stage.py`): a request holds the stage for its data wavefronts or
  its tag cycles, whichever is more, in request order per SM. Load-to-use of hits: stage
  start + (wavefronts - 1) + `hit_latency_cycles`, so one fully coalesced 128-B load on an
  idle L1 is ready exactly `hit_latency_cycles` after issue.
- Misses: allocate (the line's LRU victim is dropped; L1 lines are never dirty), leave
  at the lookup time to `lower.read(t, sm_id, missed_sectors)` and are ready when it
  says (the L2/HBM load-to-use, see `system.py`). A request's ready time is the latest
  over its sectors.
- MSHRs: at most `l1.mshr_entries` missed sectors in flight per SM. A request whose
  misses do not fit waits, as a whole, until enough in-flight misses have returned (the
  earliest first), then sends them; its hits are not delayed.
- Stores: write-through; consecutive stores of one warp to the same sector (e.g. the
  fields of a small struct written one after another) leave for the L2 as one write of
  their combined bytes (`send`, decided by `issue_stream.combine_stores`) unless a load of
  the sector came between them (a read-increment-write of a local array: every store
  leaves, H200 digit_histogram_local); stores of
  different warps are not combined, as Nsight's lts counts show. With `write_allocate` False (NVIDIA's global stores) a store
  updates a present sector, which stays valid, and allocates nothing; with True it
  allocates and validates the sector. Every store goes to `lower.write` with the bytes
  it writes in each sector (32-bit byte masks: the L2 keeps valid and dirty bytes); the
  warp does not wait: `store` returns when the L1 accepted it (data-stage end).
  At most `l1.mshr_entries` store sectors per SM are on their way to the L2 unacknowledged
  (a pool of their own, sized like the read MSHRs: the model's choice, no published
  figure); a store that does not fit waits, holding the in-order stage, until enough
  acknowledgements are back (the earliest first). An L2 acknowledges a write once its
  line is allocated, so a DRAM-bound store stream (evictions waiting for the write
  queue) holds the SM's stores back, as the hardware's crossbar credits do; without the
  limit a store-only kernel would issue its stores at once and end when a backlog
  booked far ahead drains.
- Atomics and reductions: performed at the L2 (`lower.atomic`); the L1 copies of their
  sectors are invalidated. The L1 splits a warp's atomic into passes of at most one lane
  per address (a sector is in as many passes as the most lanes on one of its addresses,
  `functional_streams.py`); each pass carries its sector to the L2 (32 B to the crossbar, and 32 B
  back for an ATOM) and counts once in `l1tex__t_sectors_..._op_{atom,red}`, as Nsight
  counts them on H100/H200 (data/measurements/h200_mechanisms.json: sectors = passes =
  `lts__d_atomic_input_cycles_active` for every atomic_bins/lanes/hot size).
- Counters (Nsight names, global and local spaces):
  `l1tex__t_{requests,sectors}_pipe_lsu_mem_{global,local}_op_{ld,st}.sum`,
  `..._op_{ld,st}_lookup_{hit,miss}.sum`, `l1tex__t_{requests,sectors}_pipe_lsu_mem_global_op_{atom,red}.sum`,
  `l1tex__t_sector_hit_rate.pct`, `l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct`,
  `l1tex__m_xbar2l1tex_read_bytes.sum`, `l1tex__m_l1tex2xbar_write_bytes.sum`; and
  `gpusim__l1_mshr_merged_sectors.sum` (lookups that joined an in-flight miss; they
  count as lookup misses here; per space: `..._pipe_lsu_mem_{space}_op_ld.sum`, which the
  timing engine adds to the hits it reports, as Nsight counts such a tag hit), `gpusim__l1_mshr_wait_cycles.sum`, `gpusim__l1_store_wait_cycles.sum`
  (cycles stores waited for room to leave). `L1Cache.sum_counters`
  adds several SMs' counters and recomputes the rates.

Not modelled: the banks of a request's words (the stage charges its busiest bank group,
`l1_stage.py`), texture/constant paths, cache operators (.cs/.lu, eviction hints: cached as
`ld.ca`; only LDG.E.STRONG.GPU/.SYS, from ld.global.cg or volatile, bypass), the ld.global.nc path, L1 prefetching, the fill's own use of
the data stage, the exact Nsight wavefront rule for scattered accesses, and merging of
one warp's stores beyond one SASS visit (`send` is decided per visit by
`issue_stream.combine_stores`; on H200 the five 4-byte stores of warp_vote_demo's
20-byte records reach the L2 as about 1.1 writes per sector, while stores of different
warps to one sector are never merged: transpose_naive 1.5x, as without any merging).

Sources: Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
Microbenchmarking" (2018), sectored L1 (32-B sectors, 128-B lines), LRU, hit latency;
NVIDIA's developer forums (G. Smith): "on GV100+ the L1TEX tag stage can resolve 4 sets x
4 sectors per cycle", wavefronts generated until all threads are handled;
NVIDIA CUDA C++ Programming Guide, "Compute Capability 9.0: Global Memory" (write-through
L1, no write-allocate for global stores); Nsight Compute Kernel Profiling Guide,
"L1/TEX cache" and metrics reference (l1tex__ names).
"""
from __future__ import annotations

from collections import OrderedDict
from heapq import heappush

from gpusim.errors import ConfigError
from gpusim.timing.memory.copy_requests import repeat_runs
from gpusim.timing.memory.hashing import memo, remember, unit_of
from gpusim.timing.memory.inflight import InFlight
from gpusim.timing.memory.l1_stage import L1Stage

_SPACES = ("global", "local")


class L1Cache:
    """`load`, `store`, `atomic` (now, sectors) for one SM; `counters()`."""

    def __init__(self, spec, data_bytes: int, lower, sm_id: int):
        l1 = spec.l1
        if not (isinstance(data_bytes, int) and data_bytes >= 0):
            raise ConfigError(f"L1Cache(SM {sm_id}): data_bytes must be a non-negative integer, got {data_bytes!r}")
        if data_bytes > spec.sm.l1_shared_total_bytes:
            raise ConfigError(f"L1Cache(SM {sm_id}): data_bytes {data_bytes} exceeds "
                              f"sm.l1_shared_total_bytes {spec.sm.l1_shared_total_bytes}")
        self.spec = spec
        self.sm_id = sm_id
        self.lower = lower
        self.data_bytes = data_bytes
        self.ways = l1.associativity
        self.sector_bytes = l1.sector_bytes
        self.sectors_per_line = l1.line_bytes // l1.sector_bytes
        self.line_shift = self.sectors_per_line.bit_length() - 1
        self.n_sets = data_bytes // (l1.line_bytes * l1.associativity)
        self.hit_latency_cycles = l1.hit_latency_cycles
        self.mshr_entries = l1.mshr_entries
        self.write_allocate = l1.write_allocate
        self.stage = L1Stage(spec)                      # the tag and data stages
        self._sets = [OrderedDict() for _ in range(self.n_sets)]
        self._memo = memo(self.n_sets)
        self._mshr = InFlight(self.mshr_entries)        # missed sectors in flight
        self._wbuf = InFlight(self.mshr_entries)        # store sectors on their way to the L2
        self.reset_counters()
        self.flush()

    @property
    def xbar_bytes(self) -> int:
        """Bytes this L1 has moved to and from the L2 so far (its crossbar traffic, both ways)."""
        return self._read_bytes + self._write_bytes

    # -- kernel boundaries --------------------------------------------------------------

    def flush(self) -> None:
        """Kernel boundary: invalidate every line (as the hardware does at launch) and
        forget the data-stage and MSHR state (time may restart at 0)."""
        for od in self._sets:
            od.clear()
        self.stage.clear()
        self._mshr.clear()
        self._wbuf.clear()
        self.drain_time = float("-inf")   # latest completion of anything sent below

    # -- requests -----------------------------------------------------------------------

    def load(self, now: float, sectors, local: bool = False, copy: bool = False, bypass: bool = False) -> float:
        """A warp's load of distinct sectors (address >> 5) issued at `now`; when its data is ready.
        `copy`: an LDGSTS that allocates in the L1 (cp.async.ca), counted as such: its data goes
        to shared memory, and when it is there is the return value (`copy_in`). `bypass`: coherent at
        GPU or system scope (LDG.E.STRONG.GPU / .SYS): every sector a miss read below, nothing allocated."""
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        n = len(lst)
        sp = 2 if copy else 1 if local else 0
        self._ld_req[sp] += 1
        self._ld_sec[sp] += n
        if n == 0:
            return now
        if bypass:
            self._ld_miss[sp] += n
            return self._past(now, lst, lst)
        stage = self.stage                              # stage.book, inlined (hot path)
        wf = stage.cycles(n, lst) if n > 1 else 1
        start = stage.free
        if now >= start:
            start = now
        stage.free = start + wf
        ready = start + wf - 1 + self.hit_latency_cycles
        nsets = self.n_sets
        if nsets == 0:
            misses, ents = lst, None
        else:
            sh, mask, ways, spl, sets, memo = self.line_shift, self.sectors_per_line - 1, self.ways, \
                self.sectors_per_line, self._sets, self._memo
            misses, ents = [], []
            miss, fill = misses.append, ents.append
            merged = 0
            cur = -1
            ent = None
            for s in lst:
                line = s >> sh
                if line != cur:                         # once per run of sectors in one line
                    cur = line
                    x = memo.get(line)                  # the set: unit_of(line, nsets), memoised
                    od = sets[x if x is not None else remember(memo, line, nsets)]
                    ent = od.get(line)
                    if ent is None:
                        if len(od) >= ways:
                            od.popitem(last=False)
                        ent = [None] * spl
                        od[line] = ent
                    else:
                        od.move_to_end(line)
                r = ent[s & mask]
                if r is None:
                    miss(s)
                    fill(ent)
                elif r > start:                         # fill in flight: merge into its MSHR
                    merged += 1
                    if r > ready:
                        ready = r
            if merged:
                self._merged += merged
                self._merged_sp[sp] += merged
                self._ld_miss[sp] += merged
        m = len(misses)
        if m:
            self._ld_miss[sp] += m
            mshr = self._mshr
            heap = mshr.heap                            # room(start, m) only when it could differ from start
            t = mshr.room(start, m) if (heap and heap[0][0] <= start) or mshr.count + m > mshr.limit else start
            r = self.lower.read(t, self.sm_id, misses)
            if ents is not None:
                mask = self.sectors_per_line - 1
                for ent, s in zip(ents, misses):
                    ent[s & mask] = r
            heappush(heap, (r, m))                      # mshr.add(r, m), inlined
            mshr.count += m
            self._read_bytes += m * self.sector_bytes
            if r > self.drain_time:
                self.drain_time = r
            if r > ready:
                ready = r
        return ready

    def copy_in(self, now: float, sectors, allocate: bool, repeated: int = 0, requests: int = 0) -> float:
        """A warp's LDGSTS (cp.async) of distinct global sectors issued at `now`: when its bytes are in
        shared memory. Through the L1 like a load (`allocate`: cp.async.ca) or past it (LDGSTS.BYPASS,
        cp.async.cg: every sector from the L2, nothing allocated), through the data stage and MSHRs. A
        bypassing copy reads `repeated` of its sectors again (`copy_counts.copy_pieces`, the model takes
        the first ones), in requests of their own up to its `requests` fill wavefronts (copy_requests.py)."""
        if allocate:
            return self.load(now, sectors, copy=True)
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        n = len(lst)
        if n == 0:
            return now
        if repeated <= 0:
            return self._past(now, lst, None, n)
        again = (lst * (repeated // n + 1))[:repeated]
        return self._past(now, lst + again, None, n, repeat_runs(lst, again, requests, self.line_shift))

    def _past(self, now: float, lst: list, staged: list | None, n_staged: int | None = None, runs=None) -> float:
        """Sectors `lst` (in requests of `runs` sectors; None: one a line) read from below past the tags,
        through the data stage (`l1_stage.book(now, n_staged, staged)`) and the MSHRs; when the data is back."""
        start, wf = self.stage.book(now, len(staged) if n_staged is None else n_staged, staged)
        ready = start + wf - 1 + self.hit_latency_cycles
        mshr = self._mshr
        n = len(lst)
        t = mshr.room(start, n)
        r = self.lower.read(t, self.sm_id, lst, runs)
        mshr.add(r, n)
        self._read_bytes += n * self.sector_bytes
        if r > self.drain_time:
            self.drain_time = r
        return r if r > ready else ready

    def store(self, now: float, sectors, local: bool = False, byte_masks=None, send=None) -> float:
        """A warp's store at `now` of the bytes `byte_masks[i]` (bit b: byte b; None: whole
        sectors) of `sectors[i]`; when the L1 accepted it (the warp need not wait). `send[i]`
        False: sector i merged into an earlier store of the same warp still on its way to the
        L2 (counted here, not sent again)."""
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        n = len(lst)
        sp = 1 if local else 0
        self._st_req[sp] += 1
        self._st_sec[sp] += n
        if n == 0:
            return now
        start, wf = self.stage.book(now, n, lst)
        nsets = self.n_sets
        hits = 0
        if nsets:
            sh, mask, sets, memo = self.line_shift, self.sectors_per_line - 1, self._sets, self._memo
            allocate = self.write_allocate
            cur = -1
            od = ent = None
            for s in lst:
                line = s >> sh
                if line != cur:                         # once per run of sectors in one line
                    cur = line
                    x = memo.get(line)                  # the set: unit_of(line, nsets), memoised
                    od = sets[x if x is not None else remember(memo, line, nsets)]
                    ent = od.get(line)
                if ent is not None and ent[s & mask] is not None:
                    hits += 1                           # updated in place, stays valid
                elif allocate:
                    if ent is None:
                        if len(od) >= self.ways:
                            od.popitem(last=False)
                        ent = od[line] = [None] * self.sectors_per_line
                    ent[s & mask] = start
        self._st_hit[sp] += hits
        self._st_miss[sp] += n - hits
        if send is not None:
            lst = [x for x, keep in zip(lst, send.tolist()) if keep]
            if byte_masks is not None:
                byte_masks = byte_masks[send]
            if not lst:
                return start + wf
        m = len(lst)
        self._write_bytes += m * self.sector_bytes
        wbuf = self._wbuf
        heap = wbuf.heap                                # room(start, m) only when it could differ from start
        t = wbuf.room(start, m) if (heap and heap[0][0] <= start) or wbuf.count + m > wbuf.limit else start
        if t > start:                                   # in order: the requests behind it wait too
            if t + wf > self.stage.free:
                self.stage.free = t + wf
        done = self.lower.write(t, self.sm_id, lst, byte_masks)
        heappush(heap, (done, m))                       # wbuf.add(done, m), inlined
        wbuf.count += m
        if done > self.drain_time:
            self.drain_time = done
        return t + wf

    def atomic(self, now: float, sectors, reduction: bool = False, passes=None, float_op: bool = False) -> float:
        """A warp's global atomic (`reduction`: RED, no result) at `now`; when its result is back.
        `passes[i]`: the passes sector i is in (the most lanes on one of its addresses; default
        one each); `float_op`: a floating-point read-modify-write."""
        lst = sectors.tolist() if hasattr(sectors, "tolist") else sectors
        n = len(lst)
        op = 1 if reduction else 0
        self._at_req[op] += 1
        if passes is not None:
            passes = passes.tolist() if hasattr(passes, "tolist") else passes
            m = sum(passes)
        else:
            m = n
        self._at_sec[op] += m                           # Nsight counts a sector once per pass
        if n == 0:
            return now
        start, _ = self.stage.book(now, n)
        nsets = self.n_sets
        if nsets:
            sh, mask, sets = self.line_shift, self.sectors_per_line - 1, self._sets
            for s in lst:
                ent = sets[unit_of(s >> sh, nsets)].get(s >> sh)
                if ent is not None:
                    ent[s & mask] = None                # the L2 holds the only current copy
        self._write_bytes += m * self.sector_bytes      # each pass carries its sector's operands
        if not reduction:
            self._read_bytes += m * self.sector_bytes
        r = self.lower.atomic(start, self.sm_id, lst, reduction, passes, float_op)
        if r > self.drain_time:
            self.drain_time = r
        return r

    # -- statistics -------------------------------------------------------------------

    def reset_counters(self) -> None:
        self._ld_req, self._ld_sec, self._ld_miss = [0, 0, 0], [0, 0, 0], [0, 0, 0]    # global, local, LDGSTS
        self._st_req, self._st_sec, self._st_hit, self._st_miss = [0, 0], [0, 0], [0, 0], [0, 0]
        self._at_req, self._at_sec = [0, 0], [0, 0]
        self._read_bytes = self._write_bytes = 0
        self._merged = 0
        self._merged_sp = [0, 0, 0]
        self._mshr.wait_cycles = 0.0
        self._wbuf.wait_cycles = 0.0

    def counters(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for sp, space in enumerate(_SPACES):
            p = f"l1tex__t_{{}}_pipe_lsu_mem_{space}_op_"
            out[p.format("requests") + "ld.sum"] = float(self._ld_req[sp])
            out[p.format("sectors") + "ld.sum"] = float(self._ld_sec[sp])
            out[p.format("sectors") + "ld_lookup_hit.sum"] = float(self._ld_sec[sp] - self._ld_miss[sp])
            out[p.format("sectors") + "ld_lookup_miss.sum"] = float(self._ld_miss[sp])
            out[f"gpusim__l1_mshr_merged_sectors_pipe_lsu_mem_{space}_op_ld.sum"] = float(self._merged_sp[sp])
            out[p.format("requests") + "st.sum"] = float(self._st_req[sp])
            out[p.format("sectors") + "st.sum"] = float(self._st_sec[sp])
            out[p.format("sectors") + "st_lookup_hit.sum"] = float(self._st_hit[sp])
            out[p.format("sectors") + "st_lookup_miss.sum"] = float(self._st_miss[sp])
        if self._ld_req[2]:                      # LDGSTS through the L1 (only for kernels that issue one)
            p = "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access"
            out[p + "_lookup_hit.sum"] = float(self._ld_sec[2] - self._ld_miss[2])
            out[p + "_lookup_miss.sum"] = float(self._ld_miss[2])
        for op, name in enumerate(("atom", "red")):
            out[f"l1tex__t_requests_pipe_lsu_mem_global_op_{name}.sum"] = float(self._at_req[op])
            out[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{name}.sum"] = float(self._at_sec[op])
        out["l1tex__m_xbar2l1tex_read_bytes.sum"] = float(self._read_bytes)
        out["l1tex__m_l1tex2xbar_write_bytes.sum"] = float(self._write_bytes)
        out["gpusim__l1_mshr_merged_sectors.sum"] = float(self._merged)
        out["gpusim__l1_mshr_wait_cycles.sum"] = float(self._mshr.wait_cycles)
        out["gpusim__l1_store_wait_cycles.sum"] = float(self._wbuf.wait_cycles)
        _add_rates(out)
        return out

    @staticmethod
    def sum_counters(per_sm: list[dict[str, float]]) -> dict[str, float]:
        """Several L1s' `counters()` added (`.sum` metrics) with the rates recomputed."""
        out: dict[str, float] = {}
        for c in per_sm:
            for k, v in c.items():
                if k.endswith(".sum"):
                    out[k] = out.get(k, 0.0) + v
        _add_rates(out)
        return out


def _add_rates(out: dict[str, float]) -> None:
    hit = miss = 0.0
    for space in _SPACES:
        for op in ("ld", "st"):
            hit += out.get(f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_{op}_lookup_hit.sum", 0.0)
            miss += out.get(f"l1tex__t_sectors_pipe_lsu_mem_{space}_op_{op}_lookup_miss.sum", 0.0)
    out["l1tex__t_sector_hit_rate.pct"] = 100.0 * hit / (hit + miss) if hit + miss else 0.0
    h = out.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum", 0.0)
    m = out.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum", 0.0)
    out["l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct"] = 100.0 * h / (h + m) if h + m else 0.0
