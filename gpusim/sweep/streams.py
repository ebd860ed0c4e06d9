"""Recorded functional runs: what a sweep replays instead of executing a kernel again.

A `StreamStore` holds, for one (kernel, arguments, launch, functional spec fields):
- the per-warp streams of PTX visits (`functional_streams.WarpStream`: blocks run, active lanes, and per
  memory instruction its sectors, byte masks, atomic lane counts or shared wavefronts) of
  every block the functional core executed with streams;
- the functional counters of the whole launch (`functional.counters.Counters`), from
  which `PreparedLaunch.finish` builds the Result's functional metrics;
- the global memory after the launch (when it is at most `MAX_HEAP_BYTES`), so a replayed
  launch hands back the same outputs.

`RecordingSource` is the timing engine's trace source for the first run: it executes as
`TraceSource` does and keeps every stream it produces.

Both sources also keep, in memory only (not pickled), each block's streams as the SM issues
them (`issue_stream.IssueStreams.convert`: SASS segments, accesses moved onto their SASS
instructions, stores combined) with what converting them added to the converter's counters,
keyed by the conversion's inputs (the SASS mapping and segments; with loop sampling, the
budget per warp and the loop chosen so far, which depend on the blocks a spec times): a later
replay of the same process hands those to the engine instead of converting the PTX visits
again, and advances the converter's counters and loop choice as converting did.

`ReplaySource` serves the streams a store holds; a block the store lacks (another SM count
samples other blocks) is executed, alone with its chunk, on the replayed launch's fresh memory
and added to the store. That assumes what a block's streams hold (its path, addresses, masks)
does not depend on which other blocks ran before it: true of every data-race-free kernel whose
control flow and addresses do not depend on values other blocks wrote or atomics returned.
The conversions kept grow with the loop-sampling budgets a process meets (one per SM count
of a loop-sampled launch).

`StreamCache` keeps stores in memory and as pickles under `<gpusim cache>/streams/`, each a
checked entry (`frontend/diskcache.py`: written atomically, its SHA-256 in a header line; a
truncated, edited or flipped-byte file is not read but recorded again) (at most
`MAX_CACHE_BYTES`, the least recently written recordings dropped first): `<key>.pkl` the store
as first written, `<key>.part-*.pkl` the blocks replays added later (each such file only the
blocks one save added, so a sweep over SM counts does not write the whole store again per point),
keyed by `stream_key`: the kernel's PTX (which Numba derived from its code and every
global it froze), its arguments' shapes, dtypes and contents (scalars by value), the
launch shape, the spec fields that change functional results (`fields.functional_key`)
and the source of the modules that produce the streams.
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpusim.frontend.diskcache import cache_dir, read_entry, write_entry
from gpusim.timing.functional_streams import TraceSource, WarpStream

MAX_HEAP_BYTES = 64 << 20          # global memory kept to restore outputs (larger launches: outputs not restored)
MAX_CACHE_BYTES = 2 << 30          # recordings kept on disk; the least recently written go first
FORMAT = 3                         # 3: entries checked (diskcache: a header with the data's SHA-256)


@dataclass
class StreamStore:
    key: str
    counters: object                                  # functional.counters.Counters of the whole launch
    heap: np.ndarray | None                           # global memory after the launch (None: too large)
    blocks: dict = field(default_factory=dict)        # block -> [(gid, block, warp_in_block, visits), ...]
    added: int = 0                                    # blocks added since loaded or saved (worth saving again)
    fresh: list = field(default_factory=list)         # those blocks
    sass: dict = field(default_factory=dict)          # block -> {(conversion key, warp budget, loop state):
    #                                                   (SASS visits per warp, convert()'s `adds` per warp,
    #                                                   loop state after)}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "added": 0, "fresh": [], "sass": {}}

    def streams(self, b: int) -> list[WarpStream]:
        """Fresh WarpStreams of block `b` (the engine replaces their visits; the store's stay)."""
        return [WarpStream(g, blk, w, visits) for g, blk, w, visits in self.blocks[b]]

    def keep(self, b: int, streams: list[WarpStream]) -> None:
        if b not in self.blocks:
            self.blocks[b] = [(s.gid, s.block, s.warp_in_block, s.visits) for s in streams]
            self.added += 1
            self.fresh.append(b)


def conversion_key(issue) -> str:
    """The SASS mapping `IssueStreams.convert` turns PTX visits into SASS visits with."""
    m = issue.smap
    parts = (m.origin, m.home, m.regions, m.unrolled, m.payload_target, m.payload_home, m.payload_back, m.copies,
             [(b.start, b.end) for b in m.cfg.blocks], sorted(issue.region.items()),
             sorted(issue.block_segment.items()), sorted(issue.merge_order.items()))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


class StoredSource(TraceSource):
    """A TraceSource backed by a StreamStore (`store`), the base of RecordingSource and
    ReplaySource. block(): the SASS visits of a block converted before (this process, same
    conversion, same loop-sampling state) with the converter's counters and loop choice
    advanced as converting them did; else converted and kept in the store. (A base class,
    not a mixin: both sources are trace sources that keep their conversions in a store.)"""

    def __init__(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True, *, store=None):
        super().__init__(prepared, chunk_blocks, issue, execute_skipped)
        self.store = store
        self._conversion: str | None = None

    def reuse(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True,
              from_start: bool = False) -> "StoredSource":
        """TraceSource.reuse; the conversion key is the new `issue`'s, computed again on first use
        (a key kept from the previous engine's converter could serve its conversions to this one)."""
        super().reuse(prepared, chunk_blocks, issue, execute_skipped, from_start)
        self._conversion = None
        return self

    def block(self, b: int) -> list[WarpStream]:
        issue = self.issue
        if issue is None:
            return super().block(b)
        if self._conversion is None:
            self._conversion = conversion_key(issue)
        streams = self.peek(b)
        del self.ready[b]
        if b in self.keep_blocks:                     # for a settled sample's engine (TraceSource.keep_for)
            self._keep(b, streams)
        # what convert() reads besides the visits: the mapping, the budget, the rounds, the loop chosen so far
        state = (self._conversion, issue.warp_budget, issue.round_blocks, issue.loop_chosen, issue.loop)
        kept = self.store.sass.setdefault(b, {})
        hit = kept.get(state)
        if hit is not None:
            visits, adds, after = hit
            for st, v, a in zip(streams, visits, adds):
                st.visits = v
                issue.add(a)                           # as convert() added them, warp after warp
            issue.loop_chosen, issue.loop = after
            return streams
        visits, adds = [], []
        for st in streams:
            st.visits = issue.convert(st.visits, st.summary, b)
            visits.append(st.visits)
            adds.append(issue.adds)
        kept[state] = (visits, adds, (issue.loop_chosen, issue.loop))
        return streams


class RecordingSource(StoredSource):
    """TraceSource that keeps the PTX-visit streams of every block it executes in `store`."""

    def _run_blocks(self, blocks) -> None:
        super()._run_blocks(blocks)
        for b in blocks:
            self.store.keep(b, self.ready[b])


class ReplaySource(StoredSource):
    """The streams of a StreamStore, served in the engine's order; blocks the store lacks are
    executed (with their chunk) and kept. Never executes blocks only for their outputs."""

    def __init__(self, prepared, chunk_blocks: int, issue=None, execute_skipped: bool = True, *, store=None):
        super().__init__(prepared, chunk_blocks, issue, execute_skipped=False, store=store)
        self.replayed = 0                             # blocks served from the store
        self.executed_missing = 0                     # blocks the store lacked, executed here

    def seek(self, b: int, length: int) -> None:
        for k in [k for k in self.ready if k < b]:
            del self.ready[k]
        self.next_block = max(self.next_block, b)
        self.run_stop = b + length

    def peek(self, b: int) -> list[WarpStream]:
        s = self.ready.get(b)
        if s is not None:
            return s
        if b >= self.p.geometry.nblocks:
            raise IndexError(b)
        if b not in self.store.blocks:
            n = min(self.chunk, self.p.geometry.nblocks - b)
            if self.run_stop is not None and self.run_stop > b:
                n = min(n, self.run_stop - b)
            n = next((k for k in range(1, n) if b + k in self.store.blocks), n)
            TraceSource._run_chunk(self, b, n)        # puts the chunk's streams into self.ready
            self.executed_missing += n
            for k in range(b, b + n):
                self.store.keep(k, self.ready.pop(k))
        else:
            self.replayed += 1
        self.ready[b] = s = self.store.streams(b)
        self.next_block = max(self.next_block, b + 1)
        return s

    def finish_functional(self) -> None:
        self.next_block = self.p.geometry.nblocks     # the recorded run's counters cover every block


# ------------------------------------------------------------------ keys and the cache

def _functional_sources() -> str:
    """A digest of the modules whose code decides the streams and counters (a changed
    simulator never replays an old recording)."""
    global _SOURCES
    if _SOURCES is None:
        root = Path(__file__).resolve().parents[1]             # gpusim/
        h = hashlib.sha256()
        for rel in sorted([*(f"functional/{p.name}" for p in (root / "functional").glob("*.py")),
                           "timing/functional_streams.py", "timing/access_payloads.py", "sweep/streams.py", "launch_checks.py", "variable_layout.py", "launch_plan.py",
                           "frontend/args.py"]):
            p = root / rel
            if p.exists():
                h.update(rel.encode() + b"\0" + p.read_bytes())
        _SOURCES = h.hexdigest()
    return _SOURCES


_SOURCES: str | None = None


def args_signature(args) -> list:
    """Shapes, dtypes and content digests of array arguments; scalars by type and value."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            c = np.ascontiguousarray(a)
            out.append(("array", a.shape, a.dtype.str, a.strides, hashlib.blake2b(c.view(np.uint8).data,
                                                                                    digest_size=16).hexdigest()))
        elif isinstance(a, (np.generic, int, float, bool, complex)):
            out.append(("scalar", type(a).__name__, repr(a)))
        else:
            out.append(("other", type(a).__name__, repr(a)))
    return out


def stream_key(prepared, args, functional: tuple) -> str:
    plan = prepared.plan
    ck = plan.compiled
    parts = (FORMAT, _functional_sources(), ck.entry, hashlib.sha256(ck.ptx.encode()).hexdigest(),
             args_signature(args), plan.grid, plan.block, plan.shared_bytes, repr(plan.peer_ranges), functional)
    return hashlib.sha256(repr(parts).encode()).hexdigest()


class StreamCache:
    """Stores in memory (this process) and on disk (`directory`, default
    `<gpusim cache dir>/streams`; `disk=False`: memory only)."""

    def __init__(self, directory: str | os.PathLike | None = None, disk: bool = True):
        self.disk = disk
        self._dir = Path(directory) if directory is not None else None
        self._mem: dict[str, StreamStore] = {}
        self.loads = self.saves = 0

    @property
    def directory(self) -> Path:
        if self._dir is None:
            self._dir = cache_dir() / "streams"
        return self._dir

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def _parts(self, key: str) -> list[Path]:
        return sorted(self.directory.glob(f"{key}.part-*.pkl"))

    def get(self, key: str) -> StreamStore | None:
        s = self._mem.get(key)
        if s is None and self.disk:
            data = read_entry(self._path(key))       # None: missing, or its checksum does not match
            if data is None:
                return None
            try:
                s = pickle.loads(data)
            except Exception:                         # written so by another version: record again
                return None
            for part in self._parts(key):            # blocks later replays added
                more = read_entry(part)
                if more is None:                      # damaged or gone: those blocks are executed again
                    continue
                try:
                    more = pickle.loads(more)
                except Exception:
                    continue
                for b, v in more.items():
                    s.blocks.setdefault(b, v)
            s.added, s.fresh = 0, []
            self.loads += 1
            if len(self._mem) > 16:
                self._mem.clear()
            self._mem[key] = s
        return s

    def put(self, store: StreamStore) -> None:
        self._mem[store.key] = store
        self.save(store, whole=True)

    def save(self, store: StreamStore, whole: bool = False) -> None:
        """Write `store` to disk (atomically; a failure only means recording or executing
        again later): the whole store when `whole` or where its file is missing, else only
        the blocks added since it was loaded or saved, as a part file beside it."""
        if not self.disk:
            return
        main = self._path(store.key)
        if not whole and store.fresh and main.exists():
            path = self.directory / f"{store.key}.part-{uuid.uuid4().hex}.pkl"
            data = pickle.dumps({b: store.blocks[b] for b in store.fresh}, protocol=pickle.HIGHEST_PROTOCOL)
        else:
            path = main
            buf = io.BytesIO()
            pickle.dump(store, buf, protocol=pickle.HIGHEST_PROTOCOL)
            data = buf.getvalue()
        if write_entry(path, data):
            store.added, store.fresh = 0, []
            self.saves += 1
            self._prune()

    def _prune(self) -> None:
        """Drop the least recently written recordings (a store with its part files) beyond
        MAX_CACHE_BYTES."""
        groups: dict[str, list] = {}
        try:
            for p in self.directory.glob("*.pkl"):
                st = p.stat()
                g = groups.setdefault(p.name.split(".", 1)[0], [0.0, 0, []])
                g[0], g[1] = max(g[0], st.st_mtime), g[1] + st.st_size
                g[2].append(p)
        except OSError:
            return
        total = sum(g[1] for g in groups.values())
        for _, size, paths in sorted(groups.values(), key=lambda g: g[0]):
            if total <= MAX_CACHE_BYTES:
                break
            for p in paths:
                try:
                    p.unlink()
                except OSError:
                    pass
            total -= size

    def has(self, key: str) -> bool:
        return key in self._mem or (self.disk and self._path(key).exists())
