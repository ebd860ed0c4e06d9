"""A warp's group scoreboards: the counters by which a warp waits for its own asynchronous
work (wgmma, cp.async), as ptxas encodes them in SASS and the issue loop keeps them
(`issue_loop.py`: `prepare` waits, the issue records and commits).

Two counters per warp, each a sequence of committed groups that complete in order:
- `WGMMA` (ptxas' `gsb0`): every `HGMMA`/`IGMMA`/`QGMMA`/`BGMMA` joins the open group; the
  one ptxas marks `gsb0` (the last before `wgmma.commit_group`) commits it;
  `WARPGROUP.DEPBAR.LE gsb0, N` (`wgmma.wait_group N`) waits until at most N committed groups
  are incomplete. `WARPGROUP.ARRIVE` (`wgmma.fence`) waits for nothing here: the registers
  an HGMMA reads are on the ordinary scoreboard.
- `LDGSTS` (ptxas' `SB0`): every `LDGSTS` (`cp.async`) joins the open group, `LDGDEPBAR`
  (`cp.async.commit_group`) commits it, `DEPBAR.LE SB0, N` (`cp.async.wait_group N`;
  `wait_all` is a commit and `N` 0) waits until at most N are incomplete.

A group completes when the latest of its operations does, and never before the group
committed ahead of it (the counter counts groups down in order, so `wait_group N` can only
mean "all but the newest N"). The last `RING` completion times are kept: a wait for an older
group (N >= RING, which no kernel seen uses) waits for the oldest kept, a little long.

What an operation's completion is: an HGMMA's is its issue plus the wgmma latency of its
shape (`tensor_pipe.timing`), later if its shared-memory operands wait for the SM's
shared-memory path; an LDGSTS's is when its sectors have come back through the L1 (`sm.py`
`_memory`, `memory/l1.py` `copy_in`). Its destination registers (HGMMA's accumulators) are
ready for the next HGMMA at once: the tensor core chains accumulations on one accumulator
at its issue rate, and everything else may read them only after the `WARPGROUP.DEPBAR` ptxas
puts before it (reading them sooner is undefined in PTX).

Sources: PTX ISA 9.0, "wgmma.commit_group", "wgmma.wait_group", "cp.async.commit_group",
"cp.async.wait_group"; the SASS ptxas 13 emits for them on sm_90a (validate/tensor_timing's
kernels, tests/timing/test_async_groups.py): `HGMMA ... gsb0` / `WARPGROUP.DEPBAR.LE gsb0, 0x0`,
`LDGDEPBAR` / `DEPBAR.LE SB0, 0x2`; data/measurements/tensor_timing_h100.json (a group of four
chained 64xNx16 wgmma takes 3 issue intervals plus one latency).
"""
from __future__ import annotations

import re

WGMMA, LDGSTS = 0, 1                       # the counters (columns of the issue loop's group state)
COUNTERS = 2
RING = 8                                   # committed groups whose completion times are kept per counter
_GMMA = frozenset(("HGMMA", "IGMMA", "QGMMA", "BGMMA"))
_LE = re.compile(r"^\s*(gsb0|SB0)\s*,\s*(0x[0-9a-fA-F]+|\d+)")


def role(instr) -> tuple[int, int, int, int]:
    """(counter it joins, counter it commits, counter it waits on, groups it leaves
    incomplete) of SASS `instr`, -1 where none (the wait's count 0 then)."""
    parts = instr.opcode.split(".")
    base = parts[0]
    if base in _GMMA:
        commits = WGMMA if re.search(r"\bgsb0\b", instr.operands) else -1
        return WGMMA, commits, -1, 0
    if base == "LDGSTS":
        return LDGSTS, -1, -1, 0
    if base == "LDGDEPBAR":
        return -1, LDGSTS, -1, 0
    if (base == "WARPGROUP" or base == "DEPBAR") and "LE" in parts[1:]:
        m = _LE.match(instr.operands)
        if m and (m.group(1) == "gsb0") == (base == "WARPGROUP"):
            return -1, -1, WGMMA if base == "WARPGROUP" else LDGSTS, int(m.group(2), 0)
    return -1, -1, -1, 0
