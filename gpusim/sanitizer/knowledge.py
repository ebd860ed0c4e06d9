"""What a thread knows happened before it, for racecheck's happens-before (`ordering.py`).

A knowledge set is a set of immutable atoms, interned as an id (`Order`):
- a `ClockAtom`: per block, the barrier epoch below which its accesses are known; per
  thread, the fence count below which they are; per thread, the sync epoch (racecheck's
  (barriers << 12) | syncwarps) below which they are. Each is a sparse `Clock`;
- a `ReleaseAtom`: what the first n releasing lanes of one strong write released (their
  own accesses before their fences, their blocks' before their last barriers, their
  warp-mates' before their last syncs), sharing that instruction's arrays (`Releases`),
  so that lanes of one atomic instruction, which observe the location in lane order,
  each get their prefix without a copy.
Joining two sets is their union; a set of more than `MERGE_ATOMS` atoms is merged into
one `ClockAtom`. `Order` also holds what each global location (granule) holds: the id
of what GPU-scope releases put there and, per block, of what that block's releases did.
"""
from __future__ import annotations

import numpy as np

SW_BITS = 12
SW_MASK = (1 << SW_BITS) - 1
MERGE_ATOMS = 24                 # a knowledge set of more atoms is merged into one ClockAtom


class Clock:
    """A sparse map key -> value (missing keys are 0), keys sorted and unique."""
    __slots__ = ("idx", "val")

    def __init__(self, idx: np.ndarray, val: np.ndarray):
        self.idx, self.val = idx, val

    @staticmethod
    def of(idx, val) -> Clock:
        """From keys and values with repeats: each key's largest value."""
        idx = np.asarray(idx, np.int64).ravel()
        val = np.broadcast_to(np.asarray(val, np.int64), idx.shape).ravel()
        if not len(idx):
            return EMPTY_CLOCK
        o = np.lexsort((val, idx))
        idx, val = idx[o], val[o]
        last = np.append(idx[1:] != idx[:-1], True)
        return Clock(idx[last], val[last])

    def get(self, keys: np.ndarray) -> np.ndarray:
        if not len(self.idx):
            return np.zeros(len(keys), np.int64)
        pos = np.minimum(np.searchsorted(self.idx, keys), len(self.idx) - 1)
        return np.where(self.idx[pos] == keys, self.val[pos], 0)

    def join(self, other: Clock) -> Clock:
        if not len(other.idx):
            return self
        if not len(self.idx):
            return other
        return Clock.of(np.concatenate([self.idx, other.idx]), np.concatenate([self.val, other.val]))


EMPTY_CLOCK = Clock(np.zeros(0, np.int64), np.zeros(0, np.int64))


class ClockAtom:
    """Accesses of block b with barrier epoch < blocks[b], of thread p with fence count
    < fences[p], of thread p with sync epoch < syncs[p]."""
    __slots__ = ("blocks", "fences", "syncs")

    def __init__(self, blocks: Clock = EMPTY_CLOCK, fences: Clock = EMPTY_CLOCK, syncs: Clock = EMPTY_CLOCK):
        self.blocks, self.fences, self.syncs = blocks, fences, syncs

    def known(self, p: np.ndarray, e: np.ndarray, fc: np.ndarray, tpbw: int) -> np.ndarray:
        return (((e >> SW_BITS) < self.blocks.get(p // tpbw)) | (fc < self.fences.get(p))
                | (e < self.syncs.get(p)))

    def clock(self) -> ClockAtom:
        return self


def _group_cummax(vals: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running maximum of `vals` along axis 0, restarting where `groups` (non-decreasing) changes."""
    rank = np.concatenate([[0], np.cumsum(groups[1:] != groups[:-1])]).astype(np.int64)
    shift = (rank << 33).reshape((-1,) + (1,) * (vals.ndim - 1))
    return np.maximum.accumulate(vals.astype(np.int64) + shift, axis=0) - shift


class Releases:
    """The releasing lanes of one strong write, in the order it applies them: global thread
    id, fence count, block, barrier epoch and warp-mates' sync epochs at their fences."""

    def __init__(self, gid: np.ndarray, fc: np.ndarray, cep: np.ndarray, mates_e: np.ndarray, tpbw: int):
        self.gid = gid.astype(np.int64)
        self.fc = fc.astype(np.int64)
        self.block = self.gid // tpbw
        self.cep_max = _group_cummax(cep, self.block)
        self.warp = self.gid >> 5
        self.e_max = _group_cummax(mates_e, self.warp)
        self.cep, self.mates_e = cep, mates_e


class ReleaseAtom:
    """What the first `n` lanes of a `Releases` released (their own parts)."""
    __slots__ = ("r", "n", "_clock")

    def __init__(self, r: Releases, n: int):
        self.r, self.n, self._clock = r, n, None

    def known(self, p: np.ndarray, e: np.ndarray, fc: np.ndarray, tpbw: int) -> np.ndarray:
        r, n = self.r, self.n
        pos = np.minimum(np.searchsorted(r.gid[:n], p), n - 1)
        out = (r.gid[pos] == p) & (fc < r.fc[pos])
        for keys, key, table, val in ((r.block, p // tpbw, r.cep_max, e >> SW_BITS), (r.warp, p >> 5, r.e_max, e)):
            lo = np.searchsorted(keys[:n], key, "left")
            last = np.searchsorted(keys[:n], key, "right") - 1
            has = last >= lo
            at = np.maximum(last, 0)
            cap = table[at] if table.ndim == 1 else table[at, p & 31]
            out |= has & (val < cap)
        return out

    def clock(self) -> ClockAtom:
        if self._clock is None:
            r, n = self.r, self.n
            mates = ((r.gid[:n] & ~31)[:, None] + np.arange(32)).ravel()
            self._clock = ClockAtom(Clock.of(r.block[:n], r.cep[:n]), Clock.of(r.gid[:n], r.fc[:n]),
                                    Clock.of(mates, r.mates_e[:n].ravel()))
        return self._clock


def merge(atoms: list) -> ClockAtom:
    cs = [a.clock() for a in atoms]
    out = ClockAtom()
    for c in cs:
        out = ClockAtom(out.blocks.join(c.blocks), out.fences.join(c.fences), out.syncs.join(c.syncs))
    return out


class Order:
    """Launch-wide: the atoms, the interned knowledge sets, and what global locations hold."""

    def __init__(self, tpbw: int):
        self.tpbw = tpbw
        self.atoms: list = []
        self.sets: list[frozenset] = [frozenset()]         # id 0: nothing known
        self._ids: dict[frozenset, int] = {frozenset(): 0}
        self._joins: dict[tuple[int, int], int] = {}
        self.glob: dict[int, list] = {}                    # granule -> [GPU-scope id, {block: id}]

    def intern(self, s: frozenset) -> int:
        got = self._ids.get(s)
        if got is None:
            if len(s) > MERGE_ATOMS:
                s = frozenset([self._atom(merge([self.atoms[a] for a in s]))])
                got = self._ids.get(s)
            if got is None:
                got = self._ids[s] = len(self.sets)
                self.sets.append(s)
        return got

    def _atom(self, a) -> int:
        self.atoms.append(a)
        return len(self.atoms) - 1

    def atom(self, a) -> int:
        """The knowledge id of atom `a` alone."""
        return self.intern(frozenset([self._atom(a)]))

    def join(self, a: int, b: int) -> int:
        if a == b or b == 0:
            return a
        if a == 0:
            return b
        key = (a, b) if a < b else (b, a)
        got = self._joins.get(key)
        if got is None:
            got = self._joins[key] = self.intern(self.sets[a] | self.sets[b])
        return got

    def join_rows(self, rows: np.ndarray) -> np.ndarray:
        """Per row of ids, the id of their join."""
        if not rows.any():
            return np.zeros(len(rows), np.int32)
        u, inv = np.unique(rows, axis=0, return_inverse=True)
        out = np.zeros(len(u), np.int32)
        for i, row in enumerate(u):
            acc = 0
            for k in row:
                acc = self.join(acc, int(k))
            out[i] = acc
        return out[inv.ravel()]

    def known(self, kid: int, p: np.ndarray, e: np.ndarray, fc: np.ndarray) -> np.ndarray:
        p = p.astype(np.int64)
        e = e.astype(np.int64)
        out = np.zeros(len(p), bool)
        for a in self.sets[kid]:
            out |= self.atoms[a].known(p, e, fc, self.tpbw)
        return out
