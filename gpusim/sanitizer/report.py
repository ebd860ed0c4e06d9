"""Sanitizer reports: one `Hazard` record per distinct finding, and their text form.

A finding is distinct by (tool, kind, memory space, the source line(s) involved; the PTX
instruction where a line is unknown): a race between one store and one load line is one record however many threads and addresses
hit it, with the first pair seen as its example and `count` the number of conflicting
accesses (lanes) found. Text follows compute-sanitizer's layout: a header naming the
tool, the hazard, the space, the address and the kernel, then one line per access with
its thread, block and source line.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass

Dim3 = tuple[int, int, int]

PREFIX = "========="


@dataclass(frozen=True)
class Access:
    """One side of a finding: who accessed, where in the source, and how."""
    block: Dim3
    thread: Dim3
    line: int                      # Python source line (0 if unknown)
    file: str
    mode: str                      # 'read', 'write', 'atomic', 'barrier', 'collective'
    instruction: int               # PTX instruction index

    @property
    def source(self) -> str:
        text = linecache.getline(self.file, self.line).strip() if self.line else ""
        where = f"{self.file}:{self.line}" if self.line else f"PTX instruction {self.instruction}"
        return f"{where} ({text})" if text else where


@dataclass(frozen=True)
class Hazard:
    """A sanitizer finding. `accesses` holds one access (memcheck, initcheck, synccheck)
    or two (racecheck: the earlier, then the later access of the conflicting pair)."""
    tool: str                      # 'memcheck', 'racecheck', 'initcheck', 'synccheck'
    kind: str                      # e.g. 'RAW', 'WAR', 'WAW', 'out-of-bounds', 'misaligned', 'uninitialized read'
    kernel: str
    space: str                     # 'global', 'shared', 'local', 'const' or '' (barriers, collectives)
    address: int | None            # absolute global address, or the offset in the block's shared memory
    accesses: tuple[Access, ...]
    detail: str = ""
    count: int = 1                 # conflicting accesses found for this record

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(a.line for a in self.accesses)

    @property
    def line(self) -> int:
        return self.accesses[-1].line

    @property
    def block(self) -> Dim3:
        return self.accesses[-1].block

    @property
    def blocks(self) -> tuple[Dim3, ...]:
        return tuple(a.block for a in self.accesses)

    @property
    def threads(self) -> tuple[Dim3, ...]:
        return tuple(a.thread for a in self.accesses)

    @property
    def thread(self) -> Dim3:
        return self.accesses[-1].thread

    def format(self) -> str:
        where = f" on {self.space} memory" if self.space else ""
        addr = f" at {self.address:#x}" if self.address is not None else ""
        head = f"{PREFIX} {self.tool}: {self.kind} hazard{where}{addr} in kernel {self.kernel}"
        if self.tool != "racecheck":
            head = f"{PREFIX} {self.tool}: {self.kind}{where}{addr} in kernel {self.kernel}"
        out = [head]
        for a in self.accesses:
            out.append(f"{PREFIX}     {a.mode:<6} by thread {a.thread} in block {a.block} at {a.source}")
        if self.detail:
            out.append(f"{PREFIX}     {self.detail}")
        if self.count > 1:
            out.append(f"{PREFIX}     ({self.count} such accesses in this launch)")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()


def summary(hazards: list[Hazard]) -> str:
    n = len(hazards)
    return f"{PREFIX} ERROR SUMMARY: {n} error{'s' if n != 1 else ''}"


class Collector:
    """Gathers findings of one launch, one record per distinct (tool, kind, space, instructions)."""

    def __init__(self, kernel: str):
        self.kernel = kernel
        self._records: dict[tuple, Hazard] = {}

    def add(self, tool: str, kind: str, space: str, address: int | None, accesses: tuple[Access, ...],
            detail: str = "", count: int = 1) -> None:
        key = (tool, kind, space, tuple((a.file, a.line) if a.line else a.instruction for a in accesses))
        old = self._records.get(key)
        if old is None:
            self._records[key] = Hazard(tool, kind, self.kernel, space, address, accesses, detail, count)
        else:
            self._records[key] = Hazard(old.tool, old.kind, old.kernel, old.space, old.address, old.accesses,
                                        old.detail, old.count + count)

    def hazards(self) -> list[Hazard]:
        return list(self._records.values())
