"""The memory payloads of one functional step, kept per access and handed to each warp's
visit only when read.

A warp's PTX visit holds `mem`: SASS-independent payloads keyed by PTX instruction (a
wavefront count, a sector array, `(sectors, byte_masks)`, `(sectors, passes)`, an
`MbarrierAccess` or a `tma.CopyPayload`; `functional_streams.WarpStream`). A step's accesses give those
payloads to all its warps at once; with loop sampling most visits are never issued
(`issue_stream.py` keeps a few iterations of long loops), so building a dict per visit and a slice per payload was most
of the cost of recording a long warp. `StepPayloads` keeps each access's per-warp results
as arrays over the step's warps; `LazyMem` is one warp's view of them, a read-only mapping
that builds the warp's dict the first time it is read, by the same rules, in the same
order, as recording it directly did (a second access of an instruction in one step: a
shared one replaces, a load is united with, a store is merged into what is there; an
mbarrier operation and a bulk copy's global side make one `CopyPayload`, in either order; a
cp.async's shared-side fill wavefronts and its global sectors one `CpAsyncPayload`).
`StepPayloads.finish` also counts, per warp, the payloads (`len`) and their kinds, so
that converting a warp's stream needs no payload it does not issue.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from gpusim.timing.tma import CopyPayload

WF, LOAD, STORE, ATOMIC, MBAR, FILL = -1, 0, 1, 2, 3, 4   # payload kinds (issue_stream._kinds: loads, stores, atomics)
NO_SECTORS = np.zeros(0, np.uint64)


@dataclass(frozen=True, slots=True)
class MbarrierAccess:
    """One warp's mbarrier operation (the payload of its SYNCS instruction, gpusim/timing/mbarrier.py):
    `what` as `executor.trace_mbarrier` names it, the mbarrier's byte offset in its block's shared
    memory (the first active lane's), and the warp's arguments summed over its lanes: `count` the
    arrivals (or, for 'init', the expected count), `tx` the transaction bytes (expected, or for
    'complete_tx' delivered), `parity` the phase parity a wait waits for."""
    what: str
    address: int
    count: int = 0
    tx: int = 0
    parity: int = 0


@dataclass(frozen=True, slots=True)
class CpAsyncPayload:
    """One warp's cp.async (LDGSTS): the global sectors it reads, the wavefronts the L1 takes to
    write its bytes into shared memory (`gpusim.functional.copy_counts.fill_wavefronts`), and how
    many of its sector reads repeat a sector (`copy_counts.copy_pieces`: one whose halves fill two
    shared sectors is read once for each)."""
    sectors: np.ndarray
    wavefronts: int
    repeated: int = 0

    def __len__(self) -> int:
        return len(self.sectors)

    def with_sectors(self, sec: np.ndarray) -> "CpAsyncPayload":
        return CpAsyncPayload(np.union1d(self.sectors, sec), self.wavefronts, self.repeated)


def with_fill(prev, wf: int, repeated: int = 0) -> CpAsyncPayload:
    """A warp's cp.async payload with `wf` more fill wavefronts and `repeated` more repeated sector
    reads (prev: its sectors so far, or None)."""
    if isinstance(prev, CpAsyncPayload):
        return CpAsyncPayload(prev.sectors, prev.wavefronts + wf, prev.repeated + repeated)
    return CpAsyncPayload(NO_SECTORS if prev is None or isinstance(prev, int) else prev, wf, repeated)


COPY = (MbarrierAccess, CopyPayload)             # the payloads a bulk copy's global sectors join


def mbarrier_access(what: str, address: int, lanes: int, args: list) -> MbarrierAccess:
    """A warp's MbarrierAccess from `lanes` lanes' argument arrays `args` (async_ops.MbarrierOp)."""
    first = lambda k: int(args[k][0]) if len(args) > k and len(args[k]) else 0   # noqa: E731
    total = lambda k: int(np.sum(args[k])) if len(args) > k else 0              # noqa: E731
    if what == "init":
        return MbarrierAccess(what, address, count=first(0))
    if what == "arrive":
        return MbarrierAccess(what, address, count=total(0) if args else lanes)
    if what == "arrive_expect_tx":
        return MbarrierAccess(what, address, count=lanes, tx=total(0))
    if what in ("expect_tx", "complete_tx"):
        return MbarrierAccess(what, address, tx=total(0))
    if what in ("try_wait", "test_wait"):
        return MbarrierAccess(what, address, parity=first(0) & 1)
    return MbarrierAccess(what, address)


def with_mbarrier(prev, m: MbarrierAccess):
    """A warp's payload with mbarrier operation `m` added: a bulk copy's sectors (or CopyPayload)
    gain it as their complete_tx (two copies of one warp to one mbarrier: their bytes added)."""
    if prev is None:
        return m
    if isinstance(prev, MbarrierAccess):
        return replace(prev, tx=prev.tx + m.tx)
    if isinstance(prev, CopyPayload):
        mb = prev.mbarrier
        return CopyPayload(prev.sectors, m if mb is None else replace(mb, tx=mb.tx + m.tx))
    return CopyPayload(prev, m)


def copy_with_sectors(prev, sec):
    """A bulk copy's payload with more global sectors (an array, or a store's (sectors, masks))."""
    if isinstance(prev, MbarrierAccess):
        return CopyPayload(sec, prev)
    old = prev.sectors
    if old is None:
        return CopyPayload(sec, prev.mbarrier)
    if isinstance(sec, tuple):
        return CopyPayload(merge_store(old, *sec), prev.mbarrier)
    return CopyPayload(np.union1d(old, sec), prev.mbarrier)


def payload_kind(p) -> int:
    """A payload's kind as issue_stream._kinds counts it: LOAD (a sector array, a bulk copy),
    STORE, ATOMIC, or WF for what moves no L2 traffic (a wavefront count, an mbarrier operation)."""
    if isinstance(p, MbarrierAccess) or isinstance(p, int):
        return WF
    if isinstance(p, CpAsyncPayload):
        return LOAD
    if isinstance(p, tuple):
        return STORE if p[1].dtype == np.uint32 else ATOMIC
    return LOAD


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

    def fills(self, instr: int, warps: np.ndarray, wf: np.ndarray, repeated: np.ndarray) -> None:
        """A cp.async's shared side: wf[k] fill wavefronts and repeated[k] repeated sector reads of
        batch warp warps[k] (joins its global sectors)."""
        v = np.full(len(self.warps), -1, np.int64)
        rep = np.zeros(len(self.warps), np.int64)
        at = self._where(warps)
        v[at] = wf
        rep[at] = repeated
        self.entries.append((FILL, instr, v >= 0, v, rep))

    def span_wavefronts(self, instr: int, w0: int, per_warp: np.ndarray) -> None:
        """A shared-memory access: per_warp[k] wavefronts of batch warp w0 + k (-1: none)."""
        if w0 == self.first and len(per_warp) == len(self.warps):
            self.entries.append((WF, instr, per_warp >= 0, per_warp))
            return
        present = np.flatnonzero(per_warp >= 0)
        self.wavefronts(instr, present + w0, per_warp[present])

    def sectors(self, kind: int, instr: int, warps: np.ndarray, starts: np.ndarray, *arrays) -> None:
        """A load, store or atomic: batch warp warps[k] has arrays[i][starts[k]:starts[k + 1]]
        (sectors; a store's byte masks; an atomic's passes per sector)."""
        j = self._where(warps)
        lo = np.zeros(len(self.warps), np.int64)
        hi = np.zeros(len(self.warps), np.int64)
        lo[j] = starts[:-1]
        hi[j] = starts[1:]
        self.entries.append((kind, instr, hi > lo, lo, hi) + arrays)

    def mbarriers(self, instr: int, warps: np.ndarray, ops: list) -> None:
        """An mbarrier operation: ops[k] (an MbarrierAccess) of batch warp warps[k]."""
        j = self._where(warps)
        objs = [None] * len(self.warps)
        for i, m in zip(j.tolist(), ops):
            objs[i] = m
        here = np.zeros(len(self.warps), np.bool_)
        here[j] = True
        self.entries.append((MBAR, instr, here, objs))

    def finish(self) -> None:
        """Per warp: its distinct instructions with a payload (`counts`), and how many of
        those payloads are loads, stores, atomics (`kinds`, [warp, kind]): the last access
        of an instruction in the step decides its payload's kind."""
        n = len(self.warps)
        entries = self.entries
        if not entries:                                          # accesses that leave no payload (wgmma's shared operands)
            self.counts = np.zeros(n, np.int64)
            self.kinds = np.zeros((n, 3), np.int64)
            return
        if any(e[0] == MBAR for e in entries):                   # bulk copies: each warp's payloads as built
            self.counts = np.zeros(n, np.int64)
            self.kinds = np.zeros((n, 3), np.int64)
            for j in range(n):
                mem = self.build(j)
                self.counts[j] = len(mem)
                for p in mem.values():
                    k = payload_kind(p)
                    if k != WF:
                        self.kinds[j, k] += 1
            return
        if len({e[1] for e in entries}) == len(entries):        # each instruction once: sums of presence
            here = np.array([e[2] for e in entries])
            kind = np.array([LOAD if e[0] == FILL else e[0] for e in entries])   # a cp.async: a load
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
            kind = LOAD if kind == FILL else kind
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
            if kind == MBAR:
                mem[instr] = with_mbarrier(mem.get(instr), e[3][j])
                continue
            if kind == FILL:
                mem[instr] = with_fill(mem.get(instr), int(e[3][j]), int(e[4][j]))
                continue
            lo, hi = int(e[3][j]), int(e[4][j])
            prev = mem.get(instr)
            if isinstance(prev, COPY):                   # a bulk copy: its mbarrier, other lanes' copies
                mem[instr] = copy_with_sectors(prev, (e[5][lo:hi], e[6][lo:hi]) if kind == STORE else e[5][lo:hi])
            elif kind == ATOMIC:
                mem[instr] = (e[5][lo:hi], e[6][lo:hi])
            elif kind == STORE:
                mem[instr] = merge_store(prev, e[5][lo:hi], e[6][lo:hi])
            elif isinstance(prev, CpAsyncPayload):
                mem[instr] = prev.with_sectors(e[5][lo:hi])
            else:
                seg = e[5][lo:hi]
                mem[instr] = seg if prev is None or isinstance(prev, int) else np.union1d(prev, seg)
        return mem

    def owned_sectors(self, js, owners, stores: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
        """The sectors of the loads, stores and atomics of the warps at places `js` (distinct) as
        their built payloads hold them (`build`), without building them, in one int64 array with
        the owner `owners[k]` of the warp at place `js[k]` for each: (owner, sector), one gather
        over the step's accesses. None where building decides more than which sectors: an
        instruction accessed twice in the step, or an mbarrier operation."""
        entries = self.entries
        if any(e[0] == MBAR for e in entries) or len({e[1] for e in entries}) != len(entries):
            return None
        ents = [e for e in entries if e[0] not in (WF, FILL) and (stores or e[0] != STORE)]
        if not ents:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        js = np.asarray(js, np.int64)
        sizes = np.array([len(e[5]) for e in ents], np.int64)
        base = (np.cumsum(sizes) - sizes)[:, None]                # each access's sectors in `whole`
        lo = (np.stack([e[3] for e in ents])[:, js] + base).ravel()
        n = (np.stack([e[4] for e in ents])[:, js] + base).ravel() - lo   # 0 where the warp made no access
        whole = np.concatenate([e[5] for e in ents], dtype=np.int64, casting="unsafe")   # sectors < 2^63
        ends = np.cumsum(n)
        idx = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64) + np.repeat(lo - (ends - n), n)
        own = np.repeat(np.broadcast_to(np.asarray(owners, np.int64), (len(ents), len(js))).ravel(), n)
        return own, whole[idx]


def owned_sectors(groups, copies: bool = False, stores: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The sectors of the loads, stores (unless `stores` is False) and atomics (bulk copies too where `copies`) in each group of
    payload maps of `groups` (an iterable of iterables of dicts or `LazyMem`s), as reading each map's
    values would find them: (owner, sector) int64 arrays of one length, `owner` the group's place in
    `groups`, in no particular order. The lazy maps of one step are read together from its arrays,
    whichever group they are in (a batch's step holds the warps of several blocks), without
    building a dict per warp: one gather per step (`StepPayloads.owned_sectors`)."""
    owners, sectors, steps = [], [], {}
    for g, mems in enumerate(groups):
        for mem in mems:
            if isinstance(mem, LazyMem) and mem._d is None:
                got = steps.get(id(mem._sp))
                if got is None:
                    got = steps[id(mem._sp)] = (mem._sp, {})
                got[1][mem._j] = (g, mem)
                continue
            _owned(mem, g, owners, sectors, copies, stores)
    for sp, byj in steps.values():
        got = sp.owned_sectors(list(byj), [g for g, _ in byj.values()], stores)
        if got is None:
            for g, mem in byj.values():
                _owned(mem, g, owners, sectors, copies, stores)
        else:
            owners.append(got[0])
            sectors.append(got[1])
    if not sectors:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(owners), np.concatenate(sectors)


def _owned(mem, g: int, owners: list, sectors: list, copies: bool, stores: bool = True) -> None:
    """The sector arrays of payload map `mem` (read as a map), owned by `g` (`owned_sectors`)."""
    parts: list = []
    _payload_sectors(mem.values(), parts, copies, stores)
    for p in parts:
        owners.append(np.full(len(p), g, np.int64))
        sectors.append(p.astype(np.int64, copy=False))


def _payload_sectors(payloads, parts: list, copies: bool = False, stores: bool = True) -> None:
    for payload in payloads:
        if copies and isinstance(payload, CopyPayload):
            payload = payload.sectors
        if not stores and isinstance(payload, tuple) and payload[1].dtype == np.uint32:
            continue                                # a store's (sectors, byte masks)
        if isinstance(payload, (tuple, CpAsyncPayload)):
            payload = payload[0] if isinstance(payload, tuple) else payload.sectors
        if isinstance(payload, np.ndarray) and payload.size:
            parts.append(payload)


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
