"""Sanitizer tools of the functional core, as compute-sanitizer names them:
`gpusim.launch(..., check=("memcheck", "racecheck", "initcheck", "synccheck"))` and
`gpusim check PROGRAM`.

- memcheck (`memcheck.py`): out-of-bounds and misaligned accesses;
- racecheck (`racecheck.py`): shared- and global-memory hazards (RAW, WAR, WAW) between
  threads with no barrier (or, within a warp, no `syncwarp`) between the two accesses;
- initcheck (`initcheck.py`): reads of shared memory never stored by the block, and of
  device arrays never written (`cuda.device_array`);
- synccheck (`synccheck.py`): barriers in divergent code, warp collectives whose
  membermask names exited or non-converged lanes.

The functional core calls a `BatchHooks` object (`executor.san`, None when no tool is
on: the hooks then cost one attribute test per memory instruction, barrier release and
warp collective) from its load/store unit (`access`), its barrier release and
`syncwarp` (`barrier`, `syncwarp`), its collectives' membermask check (`members`) and
its fault paths (`fault`: a fault stops the launch, as on hardware, and becomes a
record instead of an exception). Findings are `report.Hazard` records in
`Result.hazards`.

Does not model: local-memory hazards, memory fences (`threadfence` orders nothing here),
hazards between launches, texture memory.
"""
from __future__ import annotations

import numpy as np

from gpusim.errors import ConfigError
from gpusim.sanitizer.report import Access, Collector, Hazard, summary

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
    """Bytes per shadow entry: the smallest shared/global access of the kernel. Every access
    is aligned to its own size (or memcheck faults first), so each covers whole granules and
    shadowing per granule is exact; a kernel of 4-byte accesses needs a quarter of the work."""
    sizes = [i.access_bytes for i in dk.infos if i.kind == "mem" and i.access_bytes
             and i.space not in ("param", "local", "const")]
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
    """The tools of one launch: launch-wide shadow state (global memory) and the findings."""

    def __init__(self, prepared, tools: tuple[str, ...], uninitialized: list[tuple[int, np.ndarray]] = ()):
        from gpusim.sanitizer import initcheck, memcheck, racecheck, synccheck
        self.prepared = prepared
        self.enabled = frozenset(tools)
        self.collector = Collector(prepared.name)
        self.fatal = False
        self.infos = prepared.decoded.infos
        modules = {"memcheck": memcheck, "racecheck": racecheck, "initcheck": initcheck, "synccheck": synccheck}
        self.tools = [modules[t].Tool(self, prepared, uninitialized) for t in tools]

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

    # ------------------------------------------------------------------ from the functional core
    def access(self, op, space: str, lanes: np.ndarray, off: np.ndarray) -> None:
        """Lanes `lanes` (batch lane ids) access `space` at byte offsets `off` of its backing buffer."""
        if space == "global" or space == "shared":
            mode = "atomic" if op.info.is_atomic else ("write" if op.info.is_store else "read")
            for f in self._access:
                f(op, space, lanes, off, mode)

    def barrier(self, slots: np.ndarray) -> None:
        """The blocks in CTA slots `slots` are released from a barrier."""
        for f in self._barrier:
            f(slots)

    def syncwarp(self, op, lanes: np.ndarray) -> None:
        """Batch lanes `lanes` complete a `syncwarp` together."""
        for f in self._syncwarp:
            f(op, lanes)

    def members(self, op, warps: np.ndarray, membermask: np.ndarray, active: np.ndarray) -> None:
        """A warp collective of `warps` (batch warp ids) with per-warp `membermask` and `active` masks."""
        for f in self._members:
            f(op, warps, membermask, active)

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


def checked(prepared, check, args, run):
    """Run `run()` (the launch of `prepared`) with the tools of `check` hooked in and return
    its Result with `hazards`; without tools, just run it. Device arrays' written-byte
    masks (initcheck's `cuda.device_array`) are updated either way."""
    tools = normalize(check)
    arrays = [(i, a) for i, a in enumerate(args) if getattr(a, "_gpusim_written_", None) is not None]
    if not tools:
        result = run()
        for _, a in arrays:                  # unchecked: what the launch wrote is unknown, so all counts as written
            a._gpusim_written_ = None
        return result
    from gpusim.errors import KernelError
    spans = [(a, prepared.marshalled.arrays[i][0]) for i, a in arrays]
    san = Sanitizer(prepared, tools, [(addr, a._gpusim_written_) for a, (addr, _) in spans])
    prepared.sanitizer = san
    try:
        result = run()
    except KernelError:
        if not san.fatal:
            raise
        result = prepared.finish()
    for a, (addr, nbytes) in spans:
        w = san.written(addr, nbytes) if "initcheck" in san.enabled else None
        a._gpusim_written_ = None if w is None or w.all() else w
    result.hazards = san.hazards()
    return result
