"""Sanitizer tools of the functional core, as compute-sanitizer names them:
`gpusim.launch(..., check=("memcheck", "racecheck", "initcheck", "synccheck"))` and
`gpusim check PROGRAM`.

- memcheck (`memcheck.py`): out-of-bounds and misaligned accesses;
- racecheck (`racecheck.py`): shared- and global-memory hazards (RAW, WAR, WAW) between
  threads that nothing orders: no barrier (within a warp, no `syncwarp`), no release and
  acquire through fences and atomics, no grid barrier (`ordering.py`);
- initcheck (`initcheck.py`): reads of shared memory never stored by the block, and of
  device-array bytes never written (`cuda.device_array`: tracked per byte across
  launches, checked or not, through slices and views, `device_memory.py`);
- synccheck (`synccheck.py`): barriers in divergent code, warp collectives whose
  membermask names exited or non-converged lanes or not the calling lane, shuffles
  reading a lane outside the mask.

The functional core calls a `BatchHooks` object (`executor.san`, None when no tool is
on: the hooks then cost one attribute test per memory instruction, fence, barrier
release and warp collective) from its load/store unit and the tensor-core and async-copy
units (`access`: also ldmatrix/stmatrix rows, wmma fragment moves, wgmma's shared operands,
cp.async's global read; `async_issue` / `async_done`: cp.async's shared write, pending from
the copy to its wait), its fences (`fence`),
its barrier release and `syncwarp` (`barrier`, `syncwarp`), its collectives' membermask
check and shuffles (`members`, `shuffle`) and its fault paths (`fault`: a fault stops
the launch, as on hardware, and becomes a record instead of an exception). Findings
are `report.Hazard` records in `Result.hazards`. A launch with no tool on still hooks
initcheck's write bookkeeping (`initcheck.WriteTracker`) while a device-array argument
has unwritten bytes.

Does not model: local-memory hazards, hazards between launches, texture memory.
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import ConfigError, KernelError
from gpusim.sanitizer.report import Access, Collector, Hazard, summary
from gpusim.sanitizer import device_memory

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

__all__ = ["TOOLS", "Hazard", "Sanitizer", "checked", "normalize", "summary"]


def normalize(check) -> tuple[str, ...]:
    """`check=` as given (a tool name, 'all', or an iterable of names) -> the tools, in TOOLS order."""
    if check is None or check is False:
        return ()
    if check is True or check == "all":
        return TOOLS
    if not isinstance(check, (str, list, tuple, set, frozenset)):
        raise ConfigError(f"check= takes a tool name, 'all', True or a list of tool names ({', '.join(TOOLS)}), "
                          f"got {check!r}")
    names = (check,) if isinstance(check, str) else tuple(check)
    names = tuple("all" if n is True else n for n in names)
    if "all" in names:
        return TOOLS
    bad = [n for n in names if n not in TOOLS]
    if bad:
        raise ConfigError(f"unknown sanitizer tool {bad[0]!r}; the tools are {', '.join(TOOLS)} (or 'all')")
    return tuple(t for t in TOOLS if t in names)


def granule(dk) -> int:
    """Bytes per shadow entry: the smallest shared/global access of the kernel (a tensor-core or
    async-copy op names its own, `sanitizer_bytes`: ldmatrix rows, cp.async copies, wmma
    fragment accesses, wgmma operand chunks). Every access is aligned to its own size (or
    memcheck faults first), so each covers whole granules and shadowing per granule is exact; a
    kernel of 4-byte accesses needs a quarter of the work."""
    sizes = [i.access_bytes for i in dk.infos if i.kind == "mem" and i.access_bytes
             and i.space not in ("param", "local", "const")]
    sizes += [op.sanitizer_bytes for b in dk.blocks for op in b.ops if getattr(op, "sanitizer_bytes", 0)]
    g = min(sizes, default=1)
    return g if g in (1, 2, 4, 8, 16) else 1


def spread(off: np.ndarray, nbytes: int, g: int) -> tuple[np.ndarray, int]:
    """The granule indices each access of `nbytes` at byte offsets `off` covers, lane-major,
    and how many per lane."""
    k = max(1, nbytes // g)
    b = off.astype(np.int64)
    if g > 1:
        b >>= g.bit_length() - 1
    if k > 1:
        b = (b[:, None] + np.arange(k)).ravel()
    return b, k


class Sanitizer:
    """The tools of one launch: launch-wide shadow state (global memory) and the findings.
    `track_writes`: no tool on, but device arrays with unwritten bytes are passed, so
    initcheck's write bookkeeping runs alone (`initcheck.WriteTracker`)."""

    def __init__(self, prepared, tools: tuple[str, ...], uninitialized: list[tuple[int, np.ndarray]] = (),
                 track_writes: bool = False):
        # a cycle: the tools import this package's helpers
        from gpusim.sanitizer import initcheck, memcheck, racecheck, synccheck
        self.prepared = prepared
        self.enabled = frozenset(tools)
        self.collector = Collector(prepared.name)
        self.fatal = False
        self.infos = prepared.decoded.infos
        modules = {"memcheck": memcheck, "racecheck": racecheck, "initcheck": initcheck, "synccheck": synccheck}
        self.tools = [modules[t].Tool(self, prepared, uninitialized) for t in tools]
        if track_writes and "initcheck" not in self.enabled:
            self.tools.append(initcheck.WriteTracker(self, prepared, uninitialized))

    def attach(self, x) -> None:
        """Hook a batch executor (called for every batch the launch creates)."""
        x.san = BatchHooks(self, x)

    def hazards(self) -> list[Hazard]:
        return self.collector.hazards()

    def written(self, addr: int, nbytes: int) -> np.ndarray | None:
        """Per byte of global memory at `addr`, whether it holds written data (initcheck only)."""
        for t in self.tools:
            if hasattr(t, "written"):
                return t.written(addr, nbytes)
        return None


class BatchHooks:
    """What the functional core of one batch calls; dispatches to the tools' batch parts."""

    def __init__(self, san: Sanitizer, x):
        self.san = san
        self.x = x
        parts = [t.batch(x, self) for t in san.tools]
        self._access = [p.access for p in parts if hasattr(p, "access")]
        self._barrier = [p.barrier for p in parts if hasattr(p, "barrier")]
        self._syncwarp = [p.syncwarp for p in parts if hasattr(p, "syncwarp")]
        self._members = [p.members for p in parts if hasattr(p, "members")]
        self._shuffle = [p.shuffle for p in parts if hasattr(p, "shuffle")]
        self._fence = [p.fence for p in parts if hasattr(p, "fence")]
        self._async_write = [p.async_write for p in parts if hasattr(p, "async_write")]
        self._async_issue = [p.async_issue for p in parts if hasattr(p, "async_issue")]
        self._async_done = [p.async_done for p in parts if hasattr(p, "async_done")]

    # ------------------------------------------------------------------ from the functional core
    def access(self, op, space: str, lanes: np.ndarray, off: np.ndarray) -> None:
        """Lanes `lanes` (batch lane ids) access `space` at byte offsets `off` of its backing buffer."""
        if space == "global" or space == "shared":
            mode = "atomic" if op.info.is_atomic else ("write" if op.info.is_store else "read")
            for f in self._access:
                f(op, space, lanes, off, mode)

    def async_write(self, space: str, off: np.ndarray, nbytes: int) -> None:
        """An asynchronous copy (TMA) wrote `nbytes` at each byte offset `off` of `space`'s
        buffer: initcheck counts them written; racecheck does not see them (DEVIATIONS.md)."""
        for f in self._async_write:
            f(space, off, nbytes)

    def async_issue(self, op, lanes: np.ndarray, off: np.ndarray) -> None:
        """Lanes `lanes` issue asynchronous copies (`cp.async`, `op.info.access_bytes` each) into
        shared memory at buffer offsets `off`: the bytes are written at some time until the
        copies complete."""
        for f in self._async_issue:
            f(op, lanes, off)

    def async_done(self, op, lanes: np.ndarray, off: np.ndarray) -> None:
        """The copies `async_issue` announced for `lanes` at `off` complete (the lanes' own
        `cp.async.wait_group`/`wait_all`): the bytes now hold the data."""
        for f in self._async_done:
            f(op, lanes, off)

    def barrier(self, slots: np.ndarray, grid: bool = False) -> None:
        """The blocks in CTA slots `slots` are released from a barrier (`grid`: the grid
        barrier, which releases every block of the launch)."""
        for f in self._barrier:
            f(slots, grid)

    def fence(self, op, lanes: np.ndarray) -> None:
        """Batch lanes `lanes` execute a memory fence (`membar` / `fence`)."""
        for f in self._fence:
            f(op, lanes)

    def syncwarp(self, op, lanes: np.ndarray) -> None:
        """Batch lanes `lanes` complete a `syncwarp` together."""
        for f in self._syncwarp:
            f(op, lanes)

    def members(self, op, warps: np.ndarray, membermask: np.ndarray, active: np.ndarray, lane_masks) -> None:
        """A warp collective of `warps` (batch warp ids, the span) with per-warp `membermask`
        (the union over its active lanes) and `active` masks; `lane_masks`: the membermask
        each lane of the span passed (one value, or one per lane)."""
        for f in self._members:
            f(op, warps, membermask, active, lane_masks)

    def shuffle(self, op, src: np.ndarray, active: np.ndarray, lane_masks) -> None:
        """A shuffle: each lane of the span reads lane `src` of its warp; `active` per warp."""
        for f in self._shuffle:
            f(op, src, active, lane_masks)

    def fault(self, tool: str, kind: str, index: int, lane: int, space: str = "", address: int | None = None,
              detail: str = "") -> None:
        """A fault the core is about to raise: recorded when `tool` is on (the launch then stops)."""
        if tool not in self.san.enabled:
            return
        mode = {"memcheck": "access", "synccheck": "sync"}.get(tool, "access")
        self.san.collector.add(tool, kind, space, address, (self.who(lane, index, mode),), detail)
        self.san.fatal = True

    # ------------------------------------------------------------------ helpers for the tools
    def who(self, lane: int, index: int, mode: str) -> Access:
        block, thread = self.x._where(int(lane))
        info = self.san.infos[index]
        return Access(block, thread, info.line, info.file, mode, index)

    def report(self, tool: str, kind: str, space: str, address: int | None, accesses: tuple[Access, ...],
               detail: str = "", count: int = 1) -> None:
        self.san.collector.add(tool, kind, space, address, accesses, detail, count)


def device_arrays(args, marshalled) -> list[tuple[object, int, int]]:
    """(drop-in device array, device address, bytes) of every device array argument, top
    level or in a tuple, as `frontend/args.py` laid them out."""
    out = []
    for i, a in enumerate(args):
        if type(a) in _HOST:                 # (the common kinds: a host array or a plain scalar, no device array)
            continue
        found = _arrays_in(a)
        spans = marshalled.arrays[i] if i < len(marshalled.arrays) else []
        if len(found) == len(spans):
            out += [(d, addr, n) for d, (addr, n) in zip(found, spans) if d is not None]
    return out


_HOST = frozenset((np.ndarray, int, float, bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                   np.uint64, np.float16, np.float32, np.float64, np.bool_))


def _arrays_in(v) -> list:
    """The arrays of one argument in marshalling order: a device array, or None for a host array."""
    t = type(v)
    if t is np.ndarray:                      # (the common kinds first: no attribute lookup that fails)
        return [None]
    if t in (int, float, bool) or isinstance(v, np.generic):
        return []
    if hasattr(v, "_gpusim_host_"):
        return [v]
    if isinstance(v, np.ndarray):
        return [None]
    if isinstance(v, tuple):
        return [a for e in v for a in _arrays_in(e)]
    return []


def checked(prepared, check, args, run):
    """Run `run()` (the launch of `prepared`) with the tools of `check` hooked in and return
    its Result with `hazards`; without tools, just run it. Device arrays' written-byte
    flags (initcheck, `device_memory.py`) are updated either way: without tools, the
    launch's stores are tracked while some argument still has unwritten bytes."""
    tools = normalize(check)
    spans = [(a, addr, n, device_memory.launch_state(a)) for a, addr, n in device_arrays(args, prepared.marshalled)]
    spans = [s for s in spans if s[3] is not None]
    if not tools and not spans:
        return run()
    san = Sanitizer(prepared, tools, [(addr, w) for _, addr, _, w in spans], track_writes=bool(spans))
    prepared.sanitizer = san
    try:
        result = run()
    except KernelError:
        if not san.fatal:
            raise
        result = prepared.finish()
    for a, addr, n, _ in spans:
        device_memory.launched(a, san.written(addr, n))
    result.hazards = san.hazards()
    return result
