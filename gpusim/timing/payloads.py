"""The memory payloads of one functional step, kept per access and handed to each warp's
visit only when read.

A warp's PTX visit holds `mem`: SASS-independent payloads keyed by PTX instruction (a
wavefront count, a sector array, `(sectors, byte_masks)` or `(sectors, lane_ops,
addresses)`; `trace.WarpStream`). A step's accesses give those payloads to all its warps
at once; with loop sampling most visits are never issued (`issue_stream.py` keeps a few
iterations of long loops), so building a dict per visit and a slice per payload was most
of the cost of recording a long warp. `StepPayloads` keeps each access's per-warp results
as arrays over the step's warps; `LazyMem` is one warp's view of them, a read-only mapping
that builds the warp's dict the first time it is read, by the same rules, in the same
order, as recording it directly did (a second access of an instruction in one step: a
shared one replaces, a load is united with, a store is merged into what is there).
`StepPayloads.finish` also counts, per warp, the payloads (`len`) and their kinds, so
that converting a warp's stream needs no payload it does not issue.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

WF, LOAD, STORE, ATOMIC = -1, 0, 1, 2          # payload kinds (issue_stream._kinds: loads, stores, atomics)


class StepPayloads:
    """The accesses of one step over its warps `warps` (batch warp ids, increasing)."""
    __slots__ = ("warps", "entries", "counts", "kinds", "first")

    def __init__(self, warps: np.ndarray):
        self.warps = warps
        self.entries: list = []          # (kind, instr, present, data...) in access order
        self.counts: np.ndarray | None = None
        self.kinds: np.ndarray | None = None
        # the first warp when the step's warps are consecutive (arrays over a span are theirs), else -1
        self.first = int(warps[0]) if int(warps[-1]) - int(warps[0]) + 1 == len(warps) else -1

    def _where(self, warps: np.ndarray) -> np.ndarray:
        j = np.searchsorted(self.warps, warps)
        if len(j) and (j[-1] >= len(self.warps) or (self.warps[j] != warps).any()):
            raise AssertionError("an access by a warp the step did not run")
        return j

    def wavefronts(self, instr: int, warps: np.ndarray, wf: np.ndarray) -> None:
        """A shared-memory access: wf[k] wavefronts of batch warp warps[k]."""
        v = np.full(len(self.warps), -1, np.int64)
        v[self._where(warps)] = wf
        self.entries.append((WF, instr, v >= 0, v))

    def span_wavefronts(self, instr: int, w0: int, per_warp: np.ndarray) -> None:
        """A shared-memory access: per_warp[k] wavefronts of batch warp w0 + k (-1: none)."""
        if w0 == self.first and len(per_warp) == len(self.warps):
            self.entries.append((WF, instr, per_warp >= 0, per_warp))
            return
        present = np.flatnonzero(per_warp >= 0)
        self.wavefronts(instr, present + w0, per_warp[present])

    def sectors(self, kind: int, instr: int, warps: np.ndarray, starts: np.ndarray, *arrays) -> None:
        """A load, store or atomic: batch warp warps[k] has arrays[i][starts[k]:starts[k + 1]]
        (sectors; a store's byte masks; an atomic's lane operations and addresses)."""
        j = self._where(warps)
        lo = np.zeros(len(self.warps), np.int64)
        hi = np.zeros(len(self.warps), np.int64)
        lo[j] = starts[:-1]
        hi[j] = starts[1:]
        self.entries.append((kind, instr, hi > lo, lo, hi) + arrays)

    def finish(self) -> None:
        """Per warp: its distinct instructions with a payload (`counts`), and how many of
        those payloads are loads, stores, atomics (`kinds`, [warp, kind]): the last access
        of an instruction in the step decides its payload's kind."""
        n = len(self.warps)
        entries = self.entries
        if len({e[1] for e in entries}) == len(entries):        # each instruction once: sums of presence
            here = np.array([e[2] for e in entries])
            kind = np.array([e[0] for e in entries])
            self.counts = here.sum(axis=0)
            self.kinds = np.zeros((n, 3), np.int64)
            for k in (LOAD, STORE, ATOMIC):
                sel = kind == k
                if sel.any():
                    self.kinds[:, k] = here[sel].sum(axis=0)
            return
        present: dict[int, np.ndarray] = {}
        final: dict[int, np.ndarray] = {}
        for e in entries:
            kind, instr, here = e[0], e[1], e[2]
            if instr not in present:
                present[instr] = here.copy()
                final[instr] = np.where(here, kind, WF)
            else:
                present[instr] |= here
                final[instr][here] = kind
        self.counts = np.zeros(n, np.int64)
        self.kinds = np.zeros((n, 3), np.int64)
        for instr, here in present.items():
            self.counts += here
            fk = final[instr]
            for k in (LOAD, STORE, ATOMIC):
                self.kinds[:, k] += fk == k

    def build(self, j: int) -> dict:
        """Warp j's payloads (j: its place in `warps`)."""
        mem: dict = {}
        for e in self.entries:
            if not e[2][j]:
                continue
            kind, instr = e[0], e[1]
            if kind == WF:
                mem[instr] = int(e[3][j])
                continue
            lo, hi = int(e[3][j]), int(e[4][j])
            if kind == ATOMIC:
                mem[instr] = (e[5][lo:hi], e[6][lo:hi], e[7][lo:hi])
            elif kind == STORE:
                mem[instr] = merge_store(mem.get(instr), e[5][lo:hi], e[6][lo:hi])
            else:
                seg = e[5][lo:hi]
                prev = mem.get(instr)
                mem[instr] = seg if prev is None or isinstance(prev, int) else np.union1d(prev, seg)
        return mem


class LazyMem(Mapping):
    """Warp j's payloads of step `sp`, built when first read (module docstring); `len` and
    truth come from the step's counts without building them. Pickles as a plain dict."""
    __slots__ = ("_sp", "_j", "_d")

    def __init__(self, sp: StepPayloads, j: int):
        self._sp, self._j, self._d = sp, j, None

    def _dict(self) -> dict:
        d = self._d
        if d is None:
            d = self._d = self._sp.build(self._j)
        return d

    def __len__(self) -> int:
        return len(self._d) if self._d is not None else int(self._sp.counts[self._j])

    def __getitem__(self, key):
        return self._dict()[key]

    def __iter__(self):
        return iter(self._dict())

    def __contains__(self, key) -> bool:
        return key in self._dict()

    def get(self, key, default=None):
        return self._dict().get(key, default)

    def items(self):
        return self._dict().items()

    def values(self):
        return self._dict().values()

    def keys(self):
        return self._dict().keys()

    def __repr__(self) -> str:
        return repr(self._dict())

    def __reduce__(self):
        return dict, (self._dict(),)


def merge_store(prev, sectors: np.ndarray, masks: np.ndarray) -> tuple:
    """A store payload (sectors, byte masks) with another part of the same warp's store
    (a generic address resolving into two spaces) merged in: masks of a shared sector OR."""
    if prev is None:
        return sectors, masks
    s = np.concatenate([prev[0], sectors])
    m = np.concatenate([prev[1], masks])
    order = np.argsort(s, kind="stable")
    s, m = s[order], m[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    return s[starts], np.bitwise_or.reduceat(m, starts)
