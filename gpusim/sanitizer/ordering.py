"""racecheck's happens-before through fences, strong (atomic) accesses and the grid barrier.

Without this unit racecheck orders two accesses of different threads only by a CTA
barrier (or, in one warp, a `syncwarp`) between them, so a message passed through a
flag, or across `cuda.cg.this_grid().sync()`, looks like a race. This unit adds the
orderings the PTX memory model gives:

- release: a fence (`threadfence`: membar.gl, `threadfence_block`: membar.cta,
  `threadfence_system`: membar.sys, `fence.sc/acq_rel.<scope>`) followed in program order
  by a strong write (an atomic, `red`, `st.volatile/relaxed/release`) releases what the
  thread knew at the fence: its own accesses before the fence, its block's accesses
  before the last barrier it passed, its warp-mates' accesses before their last
  `syncwarp` or barrier (as racecheck orders lanes of one warp), and what it acquired;
- a location remembers what was released into it: an atomic read-modify-write adds its
  release and keeps the others (a release sequence: PTX "observation order" runs
  through atomics), a strong store replaces them, a plain store clears them;
- acquire: a strong read (an atomic, `ld.volatile/relaxed/acquire`) followed by a fence
  of the reading thread acquires what the location held when read; lanes of one atomic
  instruction on one location read it in lane order (as the functional core applies
  them), each seeing the releases of the lanes before it. A fence synchronises with
  threads of other blocks only when both fences are of GPU or system scope
  (`threadfence_block` orders within the block: PTX "morally strong");
- a CTA barrier or `syncwarp` passes what its threads acquired to every thread it
  synchronises, and completes an acquire whose read has no fence after it: the CUDA
  Programming Guide's last-block idiom ("Memory Fence Functions": `threadfence`;
  `atomicInc`; `__syncthreads`; read the other blocks' results) is clean, where PTX
  asks for a fence after the atomic;
- the grid barrier (`this_grid().sync()`) orders everything before it, in every block,
  before everything after it;
- the releasing write itself counts as released (racecheck records it with the fence
  count before the fence): a thread that read a flag may reset it with a plain store.

What a thread knows is a knowledge set (`knowledge.py`), interned as an id. A lane holds ids: its block's
knowledge as of its last barrier (`kb`), what it acquired since (`delta`), what strong
reads observed that no fence has acquired yet (`pend_g`: GPU-scope releases, `pend_b`:
releases of its own block), and snapshots at its last fence (`rel_*`). A candidate race
is dropped when the later thread knows the earlier access. Kernels without a fence or
grid barrier skip all of it.

Does not model: `.acquire`/`.release` qualifiers on the accesses themselves (Numba
emits none), scoped atomics (`atom.cta` counts as GPU scope), proxy fences.

Source: PTX ISA, "Memory Consistency Model" (release and acquire patterns, morally
strong operations, observation order, base causality order), "membar/fence"; CUDA C++
Programming Guide, "Memory Fence Functions", "Grid Synchronization".
"""
from __future__ import annotations

import numpy as np

from gpusim.sanitizer.knowledge import SW_BITS, SW_MASK, Clock, ClockAtom, Order, ReleaseAtom, Releases

__all__ = ["SW_BITS", "SW_MASK", "BatchOrder", "Order", "fence_scope", "strong_read", "strong_write"]

CTA, GPU = 1, 2                  # fence scopes (system scope counts as GPU: one GPU here)


def fence_scope(mnemonic: str) -> int:
    """CTA or GPU for a membar/fence mnemonic; 0 for anything else (proxy fences included)."""
    parts = mnemonic.split(".")
    if parts[0] not in ("membar", "fence") or "proxy" in parts:
        return 0
    return CTA if ("cta" in parts or "cluster" in parts) else GPU


def strong_read(mnemonic: str) -> bool:
    parts = mnemonic.split(".")
    return parts[0] == "atom" or (parts[0] in ("ld", "ldu") and bool({"volatile", "relaxed", "acquire"} & set(parts)))


def strong_write(mnemonic: str) -> bool:
    parts = mnemonic.split(".")
    return parts[0] in ("atom", "red") or (parts[0] == "st" and bool({"volatile", "relaxed", "release"} & set(parts)))


class BatchOrder:
    """The happens-before state of one batch's lanes (see module doc). `ep(lanes)` gives
    lanes' sync epochs (racecheck's (barrier count << 12) | syncwarps)."""

    def __init__(self, order: Order, x, base: int, ep):
        self.o = order
        self.x = x
        self.base = base
        self.tpbw = order.tpbw
        self.ep = ep
        n = x.nlanes
        self.kb = np.zeros(x.nctas, np.int32)
        self.delta = np.zeros(n, np.int32)
        self.pend_g = np.zeros(n, np.int32)
        self.pend_b = np.zeros(n, np.int32)
        self.fc = np.zeros(n, np.int32)                    # fences executed
        self.rel_fc = np.zeros(n, np.int32)                # fc at the last fence (0: none yet)
        self.rel_k = np.zeros(n, np.int32)                 # knowledge at the last fence
        self.rel_cep = np.zeros(n, np.int32)
        self.rel_scope = np.zeros(n, np.int8)
        self.rel_e = None                                  # (lanes, 32) warp-mates' epochs at the last fence
        self.shared: dict[int, list] = {}                  # shared-memory granule -> as Order.glob
        self.knows = False                                 # any lane holds knowledge

    def slot(self, lanes: np.ndarray) -> np.ndarray:
        return lanes // self.tpbw

    # ------------------------------------------------------------------ fences, barriers
    def fence(self, lanes: np.ndarray, scope: int) -> None:
        self.fc[lanes] += 1
        self._acquire(lanes, scope >= GPU)
        self.rel_fc[lanes] = self.fc[lanes]
        self.rel_scope[lanes] = scope
        self.rel_k[lanes] = self.o.join_rows(np.stack([self.kb[self.slot(lanes)], self.delta[lanes]], axis=1))
        self.rel_cep[lanes] = self.ep(lanes) >> SW_BITS
        if self.rel_e is None:
            self.rel_e = np.zeros((self.x.nlanes, 32), np.int32)
        mates = (lanes & ~31)[:, None] + np.arange(32)
        self.rel_e[lanes] = self.ep(mates.ravel()).reshape(-1, 32)

    def _acquire(self, lanes: np.ndarray, gpu: bool) -> None:
        pg = self.pend_g[lanes]
        pb = self.pend_b[lanes]
        if not (pg.any() or pb.any()):
            return
        cols = [self.delta[lanes], pb] + ([pg] if gpu else [])
        self.delta[lanes] = self.o.join_rows(np.stack(cols, axis=1))
        if gpu:                                          # a CTA-scope fence leaves other blocks' releases pending
            self.pend_g[lanes] = 0
        self.pend_b[lanes] = 0
        self.knows = True

    def barrier(self, slots: np.ndarray, grid: bool) -> None:
        lanes = (slots[:, None] * self.tpbw + np.arange(self.tpbw)).ravel()
        self._acquire(lanes, True)
        if grid:
            cep = self.ep(np.arange(self.x.nctas) * self.tpbw) >> SW_BITS
            everyone = self.o.atom(ClockAtom(blocks=Clock.of(self.x.first_block + np.arange(self.x.nctas), cep)))
            ids = np.unique(np.concatenate([self.kb, self.delta, [everyone]]))
            self.kb[:] = self.o.join_rows(ids[None, :])[0]
            self.delta[:] = 0
            self.knows = True
            return
        d = self.delta[lanes].reshape(len(slots), -1)
        for s in slots[np.flatnonzero(d.any(axis=1))]:
            own = int(s) * self.tpbw + np.arange(self.tpbw)
            ids = np.unique(np.append(self.delta[own], self.kb[s]))
            self.kb[s] = self.o.join_rows(ids[None, :])[0]
            self.delta[own] = 0

    def syncwarp(self, lanes: np.ndarray) -> None:
        self._acquire(lanes, True)
        d = self.delta[lanes]
        if not d.any():
            return
        warp = lanes >> 5
        for w in np.unique(warp[d != 0]):
            sel = lanes[warp == w]
            self.delta[sel] = self.o.join_rows(np.unique(self.delta[sel])[None, :])[0]

    # ------------------------------------------------------------------ strong accesses
    def _loc(self, shared: bool) -> dict:
        return self.shared if shared else self.o.glob

    def strong_read(self, lanes: np.ndarray, gran: np.ndarray, shared: bool) -> None:
        """A strong read that writes nothing (`ld.volatile`): each lane observes what its
        location holds."""
        loc = self._loc(shared)
        if not loc:
            return
        hit = np.isin(gran, np.fromiter(loc, np.int64, len(loc)))
        for g in np.unique(gran[hit]):
            sel = lanes[gran == g]
            gpu, per_block = loc[int(g)]
            self._observe(sel, np.full(len(sel), gpu, np.int32), self._mine(per_block, sel))

    def _mine(self, per_block: dict, lanes: np.ndarray) -> np.ndarray:
        """The per-block ids of `per_block` for each lane's own block."""
        if not per_block:
            return np.zeros(len(lanes), np.int32)
        ub, inv = np.unique(self.x.first_block + self.slot(lanes), return_inverse=True)
        return np.array([per_block.get(int(b), 0) for b in ub], np.int32)[inv.ravel()]

    def _observe(self, lanes: np.ndarray, gpu: np.ndarray, mine: np.ndarray) -> None:
        self.pend_g[lanes] = self.o.join_rows(np.stack([self.pend_g[lanes], gpu], axis=1))
        self.pend_b[lanes] = self.o.join_rows(np.stack([self.pend_b[lanes], mine], axis=1))

    def strong_write(self, lanes: np.ndarray, gran: np.ndarray, rmw: bool, reads: bool, shared: bool) -> None:
        """Lanes write granules `gran` with a strong write (`rmw`: an atomic read-modify-write,
        `reads`: it also returns the old value, so it observes what the location held)."""
        loc = self._loc(shared)
        rel = self.rel_fc[lanes] > 0
        if not rel.any() and not (loc and (reads or not rmw)):
            return
        order = np.argsort(lanes, kind="stable")
        lanes, gran, rel = lanes[order], gran[order], rel[order]
        for g in np.unique(gran):
            at = np.flatnonzero(gran == g)
            ln, rl = lanes[at], rel[at]
            entry = loc.get(int(g))
            if not rmw:                                  # a strong store: the last lane's value stays
                loc.pop(int(g), None)
                if rl[-1]:
                    k = self._released_by(ln[-1:])
                    loc[int(g)] = [k[0], {int(self.x.first_block + self.slot(ln[-1])): k[1]}]
                continue
            if entry is None:
                if not rl.any():
                    continue
                entry = loc[int(g)] = [0, {}]
            if reads:
                self._observe_in_order(ln, rl, entry)
            if rl.any():
                k_gpu, per = self._released_all(ln[rl])
                entry[0] = self.o.join(entry[0], k_gpu)
                for b, k in per.items():
                    entry[1][b] = self.o.join(entry[1].get(b, 0), k)

    def _observe_in_order(self, ln: np.ndarray, rl: np.ndarray, entry: list) -> None:
        """Lanes `ln` read-modify-write one location in this order: each observes what the
        location held before the instruction and what the releasing lanes before it added."""
        before = np.cumsum(rl) - rl                      # releasing lanes before each lane
        gpu = np.full(len(ln), entry[0], np.int32)
        mine = self._mine(entry[1], ln)
        if rl.any():
            rlanes = ln[rl]
            gsel = self.rel_scope[rlanes] >= GPU
            gpu_prefix = self._prefixes(rlanes[gsel])
            gb = np.cumsum(np.append(0, gsel))           # GPU-scope releasers among the first k releasers
            gpu = self.o.join_rows(np.stack([gpu, gpu_prefix[gb[before]]], axis=1))
            blocks = self.x.first_block + self.slot(rlanes)
            lane_blocks = self.x.first_block + self.slot(ln)
            add = np.zeros(len(ln), np.int32)
            for b in np.unique(blocks):
                own = blocks == b
                pref = self._prefixes(rlanes[own])
                nb = np.cumsum(np.append(0, own))
                sel = lane_blocks == b
                add[sel] = pref[nb[before[sel]]]
            mine = self.o.join_rows(np.stack([mine, add], axis=1))
        self._observe(ln, gpu, mine)

    def _prefixes(self, rl: np.ndarray) -> np.ndarray:
        """ids[k]: what the first k of releasing lanes `rl` (in order) released (ids[0] = 0)."""
        out = np.zeros(len(rl) + 1, np.int32)
        if not len(rl):
            return out
        r = self._releases(rl)
        acc_k = 0
        for k in range(1, len(rl) + 1):
            acc_k = self.o.join(acc_k, int(self.rel_k[rl[k - 1]]))
            out[k] = self.o.join(acc_k, self.o.atom(ReleaseAtom(r, k)))
        return out

    def _releases(self, rl: np.ndarray) -> Releases:
        return Releases(rl.astype(np.int64) + self.base, self.rel_fc[rl], self.rel_cep[rl], self.rel_e[rl], self.tpbw)

    def _released_all(self, rl: np.ndarray) -> tuple[int, dict]:
        """What releasing lanes `rl` release: (the GPU-scope part, {block: that block's part})."""
        gsel = self.rel_scope[rl] >= GPU
        k_gpu = self._released(rl[gsel]) if gsel.any() else 0
        blocks = self.x.first_block + self.slot(rl)
        per = {}
        for b in np.unique(blocks):
            own = blocks == b
            per[int(b)] = k_gpu if own.all() and gsel.all() else self._released(rl[own])
        return k_gpu, per

    def _released_by(self, rl: np.ndarray) -> tuple[int, int]:
        k = self._released(rl)
        return (k if self.rel_scope[rl[0]] >= GPU else 0), k

    def _released(self, rl: np.ndarray) -> int:
        acc = self.o.atom(ReleaseAtom(self._releases(rl), len(rl)))
        for k in np.unique(self.rel_k[rl]):
            acc = self.o.join(acc, int(k))
        return acc

    def weak_write(self, gran: np.ndarray, shared: bool) -> None:
        loc = self._loc(shared)
        if loc:
            for g in np.unique(gran[np.isin(gran, np.fromiter(loc, np.int64, len(loc)))]):
                loc.pop(int(g), None)

    # ------------------------------------------------------------------ queries
    def known(self, p: np.ndarray, e: np.ndarray, fc: np.ndarray, t: np.ndarray) -> np.ndarray:
        """For candidate pairs (earlier access by thread p with epoch e and fence count fc;
        later access by thread t of this batch), whether t knows the earlier access."""
        out = np.zeros(len(p), bool)
        if not self.knows:
            return out
        lanes = t.astype(np.int64) - self.base
        k = self.o.join_rows(np.stack([self.kb[self.slot(lanes)], self.delta[lanes]], axis=1))
        for kid in np.unique(k):
            if kid:
                sel = np.flatnonzero(k == kid)
                out[sel] = self.o.known(int(kid), p[sel], e[sel], fc[sel])
        return out
