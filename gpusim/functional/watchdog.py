"""Runaway detection by lack of progress: when is a batch of warps certain never to finish?

A batch that has run `OBSERVE_AFTER_STEPS` steps (every program of `programs/` takes at most
1,797) is watched, step by step, for three things:

- **Repeating warps.** Each time a warp comes back to the header of a loop it stayed inside
  since its last visit, the values of the loop's control slice (`loops.py`: every register
  inside the loop that a branch, an address or an atomic depends on), its reconvergence
  stack and barrier state are hashed (two independent 64-bit hashes over all 32 lanes). The
  same fingerprint twice means the warp went round the loop and came back exactly as it was:
  if the memory it reads is the same, it will go round the same way again, and again.
- **Memory that could still change.** The words read by the slice's loads and by atomics are
  watched (`watched`, at most `WATCH_CAP_WORDS`). The marks of repeating warps are wiped
  (`reset`) whenever a watched word changes value (checked before and after every watched
  step), a plain store writes a watched word (its value is not in any slice: the next store
  might differ), or a word joins the watched set (a warp may have written it before anyone
  watched it). After a reset every warp must repeat again. A batch that would need more than
  `WATCH_CAP_WORDS` watched words walks memory (it progresses): its watch stops, and starts
  again once the batch has run twice as many steps.
- **Nothing else left.** The verdict: every warp of the batch that has not exited either
  repeats (with nothing it reads changed since it repeated) or waits at a barrier that only
  repeating warps could release, and at least one repeats. From then on nothing in the batch
  can ever change: the repeating warps go round forever, so `NoProgress` is raised naming
  the loop, its warps and threads, and what they read. A warp whose repeating cycle passes
  a barrier could release the warps waiting there, so its block must repeat as a whole.

A warp that makes any progress (its counters advance, it walks an array, it writes what
another warp reads) never repeats, so a correct kernel is never stopped, however long it runs.

**Loops that end only by wrapping around** (`while cuda.atomic.add(c, 0, 1) >= 0`) are
followed by `wraparound.Drift`; when every other live warp of the batch repeats or waits and
the iterations left are `WRAP_WORK_LIMIT` thread-iterations or more, `NoProgress` says so.

The watchdog also tells the scheduler (`scheduler.py`, `next_group`) which loops warps were seen
repeating in (the scheduler's `waiting_pc`): warps there wait for others, so others go first.

Does not model: exact equality of fingerprints (a 128-bit hash; two different states collide
with probability about 2^-128 per comparison).
"""
from __future__ import annotations

import numpy as np

from gpusim.functional.loops import loop_facts
from gpusim.functional.wraparound import Drift

OBSERVE_AFTER_STEPS = 2048       # steps of a batch before it is watched (the programs take <= 1,797)
WATCH_CAP_WORDS = 1024           # watched words; beyond this the watch gives up for a while (a loop walking memory)
WRAP_WORK_LIMIT = 1 << 28        # thread-iterations left before a wrap-around: beyond this, reported
_SPACES = {"global": 0, "shared": 1, "local": 2}
_SPACE_SHIFT = 58


def _as_u64(v: np.ndarray) -> np.ndarray:
    if v.dtype == np.bool_:
        return v.astype(np.uint64)
    return v.view(np.dtype(f"u{v.dtype.itemsize}")).astype(np.uint64)


def _lane_constants(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 1 << 63, size=(n, 32), dtype=np.uint64) | np.uint64(1)


class Watchdog:
    """Watches one batch (`executor.BatchExecutor`); see the module docstring."""

    def __init__(self, ex):
        self.ex = ex
        self.facts = loop_facts(ex.dk)
        nl, n = len(self.facts.loops), ex.nwarps
        self.fp = np.zeros((nl, n, 2), np.uint64)       # last fingerprint at each loop's header
        self.fp_ok = np.zeros((nl, n), bool)            # taken since the last reset, the warp inside since
        self.bar_since = np.zeros((nl, n), bool)        # the warp arrived at a barrier since that fingerprint
        self.inside = np.zeros((nl, n), bool)           # stayed inside the loop since its last header visit
        self.spin = np.full(n, -1, np.int64)            # the loop each warp repeated in, or -1
        self.spin_barrier = np.zeros(n, bool)           # ... and whether its repeating cycle passed a barrier
        self.watched = np.zeros(0, np.int64)            # watched words: space << 58 | byte offset // 4
        self.values = None
        self.gave_up = False                            # too much to watch: this batch is progressing
        self.dirty = False
        self.drift = Drift(self)
        m = max([len(lp.slots) for lp in self.facts.loops] + [0]) + 4
        self.k1, self.k2 = _lane_constants(0x5EED, m), _lane_constants(0xFACE, m)
        self.p1, self.p2 = _lane_constants(0xBEEF, m)[:, 0], _lane_constants(0xCAFE, m)[:, 0]

    # ------------------------------------------------------------------ around a step
    def before(self, b: int, g: np.ndarray, masks: np.ndarray) -> None:
        """Before warps `g` (active `masks`) run block `b`: fingerprints at a loop header."""
        self.values = self._read(self.watched) if len(self.watched) else None
        f = self.facts
        col = f.in_loop[:, b]
        if not col.all():
            out = np.flatnonzero(~col)
            self.fp_ok[np.ix_(out, g)] = False
            self.inside[np.ix_(out, g)] = False
            sp = self.spin[g]
            left = (sp >= 0) & ~f.in_loop[np.maximum(sp, 0), b]
            if left.any():
                self.spin[g[left]] = -1
            d = self.drift
            left = d.bound[g] & ~f.in_loop[np.maximum(d.loop[g], 0), b]
            if left.any():                               # it left the loop it drifted in: it ends after all
                d.bound[g[left]] = False
        k = int(f.header_of[b])
        if k < 0:
            return
        lp = f.loops[k]
        if not lp.analysable:
            return
        h = self._fingerprint(lp.slots, g)
        same = self.fp_ok[k, g] & (self.fp[k, g] == h).all(axis=1)
        if same.any():
            w = g[same]
            self.spin[w] = k
            self.spin_barrier[w] = self.bar_since[k, w]
            self.ex.scheduler.waiting_pc |= f.in_loop[k]          # the scheduler runs others first
            self.dirty = True
        if lp.all_tests and lp.exit_tests:
            self.drift.visit(k, g, self.inside[k, g])
        self.fp[k, g] = h
        self.fp_ok[k, g] = True
        self.inside[k, g] = True
        self.bar_since[k, g] = False

    def after(self, b: int, g: np.ndarray, blk, rec) -> None:
        """After the step (`rec`: its step_record.StepRecord): what it read and wrote; the verdict."""
        ex = self.ex
        changed = self.values is not None and not np.array_equal(self._read(self.watched), self.values)
        self.values = None
        fresh = []
        infos, loads = ex.dk.infos, self.facts.slice_loads
        for a in rec.accesses:
            space = _SPACES.get(a.space)
            if space is None:
                continue
            info = infos[a.instr]
            if info.is_atomic or a.instr in loads:
                fresh.append(self._keys(space, a.offsets, info.access_bytes))
            elif info.is_store and len(self.watched):
                keys = self._keys(space, a.offsets, info.access_bytes)
                if np.isin(keys, self.watched, assume_unique=False).any():
                    changed = True
        if fresh:
            keys = np.unique(np.concatenate(fresh))
            new = keys[~np.isin(keys, self.watched)] if len(self.watched) else keys
            if len(new):
                self.watched = np.union1d(self.watched, new)
                changed = True
                if len(self.watched) > WATCH_CAP_WORDS:
                    self.gave_up = True
                    self.watched = np.zeros(0, np.int64)
        if blk.barrier is not None:
            self.bar_since[:, g] = True
            self.dirty = True
        if blk.terminator in ("exit", "cond_exit"):
            self.dirty = True
        if changed:
            self.reset()
        if self.dirty:
            self.dirty = False
            self._verdict()

    def reset(self) -> None:
        """Something a repeating warp may read changed: every warp must repeat again."""
        self.fp_ok[:] = False
        self.spin[:] = -1
        self.drift.reset_memory()

    # ------------------------------------------------------------------ verdict
    def _verdict(self) -> None:
        ex = self.ex
        live = ex.stacks.depth > 0
        spinning = self.spin >= 0
        drifting = self.drift.bound
        if not (spinning | drifting).any():
            return
        blocked = ex.blocked()
        if not (~live | spinning | drifting | blocked).all():
            return
        bar = spinning & self.spin_barrier
        if bar.any():
            cta = np.arange(ex.nwarps) // ex.wpc
            loose = np.zeros(ex.nctas, bool)
            np.logical_or.at(loose, cta[live & ~spinning & ~drifting], True)
            if loose[cta[bar]].any():
                return
        if spinning.any() and not (live & drifting).any():
            ex.fail_no_progress(self, np.flatnonzero(live & spinning))
        w = np.flatnonzero(live & drifting)
        if not len(w):
            return
        loops = [self.facts.loops[k] for k in np.unique(self.drift.loop[w]).tolist()]
        if any(t.loads for lp in loops for t in lp.exit_tests) and not all(lp.fixed_stores for lp in loops):
            return                       # a loaded bound that a store walking memory may yet reach
        work = float((self.drift.left[w] * np.bitwise_count(ex.stacks.top_mask(w))).sum())
        if work >= WRAP_WORK_LIMIT:
            ex.fail_wraparound(self.drift, w)

    # ------------------------------------------------------------------ helpers
    def _fingerprint(self, slots, g: np.ndarray) -> np.ndarray:
        """[warp, 2] hashes of the warps' stacks, barrier state and slice registers (32 lanes)."""
        ex = self.ex
        n = len(g)
        st = ex.stacks
        d = st.depth[g]
        width = min(st.pc.shape[1], 32)
        below = np.arange(width)[None, :] < d[:, None]
        rows = np.zeros((4 + len(slots), n, 32), np.uint64)
        rows[0, :, :width] = np.where(below, st.pc[g, :width], 0).astype(np.uint64)
        rows[1, :, :width] = np.where(below, st.rpc[g, :width], 0).astype(np.uint64)
        rows[2, :, :width] = np.where(below, st.mask[g, :width], 0).astype(np.uint64)
        rows[3, :, 0], rows[3, :, 1], rows[3, :, 2] = d, ex.arrived[g], ex.wait_at[g].astype(np.uint64)
        if slots:
            regs = ex.state.regs
            lanes = (g[:, None] * 32 + np.arange(32)).ravel()
            for j, s in enumerate(slots, start=4):
                v = regs[s]
                if type(v) is np.ndarray:
                    rows[j] = _as_u64(v[lanes]).reshape(n, 32)
                else:                                    # a value uniform over the batch
                    rows[j] = _as_u64(np.asarray(v).reshape(1))[0]
        m = len(rows)
        h1 = ((rows * self.k1[:m, None, :]).sum(axis=2, dtype=np.uint64) * self.p1[:m, None]).sum(axis=0, dtype=np.uint64)
        h2 = (((rows ^ np.uint64(0x5555)) * self.k2[:m, None, :]).sum(axis=2, dtype=np.uint64)
              * self.p2[:m, None]).sum(axis=0, dtype=np.uint64)
        return np.stack([h1, h2], axis=1)

    def _buffer(self, space: int) -> np.ndarray:
        lsu = self.ex.lsu
        return (lsu.mem.global_heap.data, lsu.shared, lsu.local)[space]

    def _keys(self, space: int, offsets: np.ndarray, nbytes: int) -> np.ndarray:
        words = offsets.astype(np.int64) >> 2
        span = max(1, -(-int(nbytes) // 4))
        if span > 1:
            words = (words[:, None] + np.arange(span)).ravel()
        return (np.int64(space) << _SPACE_SHIFT) | words

    def _read(self, keys: np.ndarray) -> np.ndarray:
        """The 32-bit words at `keys` (every word a lane touched lies inside its buffer)."""
        space = keys >> _SPACE_SHIFT
        words = keys & ((1 << _SPACE_SHIFT) - 1)
        first = int(space[0])
        if (space == first).all():
            return self._words(first)[words]
        out = np.zeros(len(keys), np.uint32)
        for s in np.unique(space).tolist():
            sel = space == s
            out[sel] = self._words(int(s))[words[sel]]
        return out

    def _words(self, space: int) -> np.ndarray:
        buf = self._buffer(space)
        return buf[:len(buf) // 4 * 4].view(np.uint32)

    def describe_watched(self, limit: int = 2) -> str:
        """The first watched words, as 'global memory: argument flag [byte 0] = 0'."""
        parts = []
        heap = self.ex.lsu.mem.global_heap
        for key in self.watched[:limit].tolist():
            space, off = key >> _SPACE_SHIFT, (key & ((1 << _SPACE_SHIFT) - 1)) * 4
            val = int(self._read(np.array([key], np.int64)).view(np.int32)[0])
            if space == 0:
                addr = heap.base + off
                alloc = next((a for a in heap.allocations if a.address <= addr < a.address + a.nbytes), None)
                where = f"{alloc.name} byte {addr - alloc.address}" if alloc is not None else f"address {addr:#x}"
                parts.append(f"global memory ({where}) = {val}")
            else:
                parts.append(f"{('global', 'shared', 'local')[space]} memory (offset {off}) = {val}")
        more = len(self.watched) - limit
        return "; ".join(parts) + (f" and {more} more words" if more > 0 else "")
