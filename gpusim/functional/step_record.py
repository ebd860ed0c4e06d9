"""What one step of the functional core did, for the timing model and the watchdog: the
basic block, the warps and their active masks (`StepRecord`), and each memory instruction's
lanes and byte offsets (`Access`; `SpanAccess` as the compiled load/store unit computed them).
Recorded only when asked (`BatchExecutor.step`, the trace and the watchdog): `trace_access`,
`trace_span_access` and `trace_mbarrier` of the executor append here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Access:
    """The lanes and byte offsets of one memory instruction in a step (trace mode). `nbytes`
    and `is_store`: bytes per lane and direction where the instruction's `InstrInfo` does not
    give them (tensor-core and async-copy instructions: ldmatrix rows, cp.async sides, wmma
    fragments); 0 / None otherwise. Space 'mbarrier': an mbarrier operation, `values`
    (operation, per-lane argument arrays)."""
    instr: int
    space: str
    lanes: np.ndarray
    offsets: np.ndarray
    nbytes: int = 0
    is_store: bool | None = None
    phase_lanes: int = 32                    # lanes served together (ldmatrix: 8 row addresses per phase)
    values: object = None
    wavefronts: tuple | None = None      # shared, where already counted: (first batch warp w0, wavefronts
    #                                      of warps w0, w0 + 1, ..., -1 where the warp has no active lane)


class SpanAccess:
    """An `Access` of the compiled load/store unit, kept as it computed it: the byte offset
    of every lane of the step's span (-1: inactive) from batch lane `lo`; `lanes` and
    `offsets` are built when first read (the trace reads `wavefronts` of a shared access
    and nothing else). An ordinary load or store: `Access`'s defaults for the rest."""
    __slots__ = ("instr", "space", "wavefronts", "_offs", "_lo", "_lanes", "_offsets")
    nbytes, is_store, phase_lanes, values = 0, None, 32, None

    def __init__(self, instr: int, space: str, offs: np.ndarray, lo: int, wavefronts: tuple | None = None):
        self.instr, self.space, self.wavefronts = instr, space, wavefronts
        self._offs, self._lo, self._lanes, self._offsets = offs, lo, None, None

    def _build(self) -> None:
        act = self._offs >= 0
        self._lanes = np.flatnonzero(act) + self._lo
        self._offsets = self._offs[act].astype(np.uint64)

    @property
    def lanes(self) -> np.ndarray:
        if self._lanes is None:
            self._build()
        return self._lanes

    @property
    def offsets(self) -> np.ndarray:
        if self._offsets is None:
            self._build()
        return self._offsets


@dataclass
class StepRecord:
    """What one step did: block `block` for `warps` (batch-local ids) with `masks`."""
    block: int
    warps: np.ndarray
    masks: np.ndarray
    accesses: list[Access] = field(default_factory=list)
