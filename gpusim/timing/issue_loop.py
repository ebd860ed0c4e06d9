"""The SM's issue loop, compiled (numba): the sub-partition warp schedulers, the register
scoreboard, pipeline booking, stall attribution and the instruction / constant caches of
`sm.py` and `fetch.py`, on packed arrays. The model is the one `sm.py` documents; this
module is how it runs fast.

`run` issues cycle after cycle until `until` or until something needs Python, then
returns an event code; the SM (`sm.SM.advance`) handles the event and calls `run` again,
which resumes where it stopped (the phase in `I[I_PHASE]`):
- `EV_MEM`: a global / local / atomic instruction issued: its ready time comes from the
  memory model (`SM._memory`), put into `F[F_PENDING]`; a shared-memory access is timed
  here (`shared_access`) with its wavefronts from `SHP`;
- `EV_VISIT`: a warp issued the last instruction of its segment and its next visit is
  not a segment (a loop-sampling marker: `SM._next_visit`) or it has none (the warp is
  done: `I[I_WDONE] = 1`); segment after segment it goes on here (`VP`);
- `EV_BARRIER`: a warp issued a CTA barrier (`SM._arrive`, the SM's `Residency` unit);
- `EV_PICK`: more than one warp is ready and the policy is neither `gto` nor `oldest`:
  `policies.py` picks among `BUF[:I[I_NREADY]]`, into `I[I_EVW]`;
- `EV_ISSUE` (only with `I[I_HOOK]` set, the recording SM): a warp is about to issue.
After a warp issues, it waits the stall count ptxas wrote in the instruction's control bits
(`TI[:, T_STALL]`, `frontend/sass/control.py`; `SMSpec.stall_counts_from_compiler`) before its
next issue, as the hardware does (Jia et al. 2018): those cycles are Nsight's `wait`. The
hardware has no interlock for fixed-latency results, only these counts; the model keeps its
latency table's register ready times as well and takes the later of the two, so a hypothetical
longer latency (a spec variant) still delays its consumer, and a cycle is never counted twice
(both are `wait`). Variable-latency results (ptxas' dependency barriers) stay the scoreboards'.
The yield bit is not modelled.
Everything is done in the order of the Python model it replaced (sub-partitions in
order, warps in age order, the same float operations), so results are identical.

Layout: per warp row `k` of `WF` (floats) and `WI` (ints), first its REG_SLOTS registers (ready
times; result kinds), then the warp's own columns; per sub-partition row of `SPF` and `SPI`; the
SM's scalars `F`, `I`; one array per read-only cache (`C`: `ICA`, `CCA`, `fetch.py`); the
kernel's instruction table `TI` (its lists in `TX`, segment -> first row in `TS`,
`static.IssueTable`); `STALL` [reason, SASS instruction]; the SM's pool of its warps' visits `VP`
(segment, or < 0 a marker; start of its wavefronts in `SHP`) and `SHP` (per shared-memory access of
a visit, in segment order: wavefronts, -1 none). Each array's columns are an IntEnum (`TIcol`,
`WFcol`, `WIcol`, `SPFcol`, `SPIcol`, `Fcol`, `Icol`, `Ccol`: what each column holds) and `LAYOUT`
lists them in order with the blocks' widths; the loop indexes with their short names (`T_SASS` is
`TIcol.SASS`, `W_READY` `WFcol.READY`). numba folds an IntEnum member to its constant: the machine
code is the one plain ints give (numba 0.68; tests/timing/test_issue_loop_layout.py checks that and
the table against the code and the arrays sm.py, static.py and fetch.py allocate).

Stepping through it: with `NUMBA_DISABLE_JIT=1` in the environment (before numba is imported) these
functions run as plain Python on the same numpy arrays, so a debugger stops at a breakpoint in
`run` or `prepare` and `WIcol(c).name` names a column. The other numba functions (`stream_kernels.py`,
the functional core's `lsu_kernels.py`) run as Python too; the functional core's llvmlite segments
stay compiled. Predictions are the same (every metric and stall table, checked on small cases of
programs/ and on tests/timing's issue-loop, async-group and tensor-pipe tests); a launch takes
about 8 to 15 times longer, so step through a small one.

One file: numba's cache (`cache=True`) is invalidated only by changes to the file that
defines a function, so everything compiled, and every constant it uses, lives here (the
constants taken from elsewhere are literals checked at import).
"""
from __future__ import annotations

import math
import warnings
from enum import IntEnum, unique

import numpy as np
from numba import njit

from gpusim.frontend.sass import operands
from gpusim.timing import async_groups, static

INF = math.inf
REG_SLOTS = 352                             # scoreboard slots: operands.B_BASE + N_B
GROUP_RING = 8                              # async_groups.RING
GROUP_COUNTERS = 2                          # async_groups.COUNTERS
if REG_SLOTS != operands.B_BASE + operands.N_B or (static.FIXED, static.SHARED, static.GLOBAL) != (0, 1, 2) \
        or (async_groups.RING, async_groups.COUNTERS, async_groups.WGMMA) != (GROUP_RING, GROUP_COUNTERS, 0):
    raise ImportError("gpusim.timing.issue_loop: REG_SLOTS must be operands.B_BASE + N_B, the result kinds "
                      "FIXED, SHARED, GLOBAL 0, 1, 2 and the group counters 2 of RING 8, WGMMA first (the compiled "
                      "loop's cache sees only this file)")

# events
EV_DONE, EV_MEM, EV_VISIT, EV_BARRIER, EV_PICK, EV_ISSUE = 0, 1, 2, 3, 4, 5
# resume phases
PH_SCAN, PH_PICKED, PH_ISSUE, PH_MEM, PH_VISIT, PH_BARRIER = 0, 1, 2, 3, 4, 5
# stall reasons (Nsight Compute warp states; the rows of STALL) and their indices
STALL_REASONS = ("selected", "not_selected", "wait", "short_scoreboard", "long_scoreboard", "barrier",
                 "math_pipe_throttle", "mio_throttle", "lg_throttle", "dispatch_stall", "no_instructions", "imc_miss",
                 "gmma")
R_SELECTED, R_NOT_SELECTED, R_WAIT, R_BARRIER, R_DISPATCH, R_NO_INSTR, R_IMC, R_GMMA = 0, 1, 2, 5, 9, 10, 11, 12
R_LONG = 4
R_DEP0, R_THROTTLE0 = 2, 6                  # + result kind (FIXED, SHARED, GLOBAL)
# policies
P_GTO, P_OLDEST, P_PYTHON = 0, 1, 2

# The packed arrays' columns: one IntEnum per array, what each column holds, then the short names
# the loop indexes with (`T_SASS` is `TIcol.SASS`) and `LAYOUT`, each array's columns in order.
# numba folds a member to its constant: the machine code is the one plain ints give.


@unique
class TIcol(IntEnum):
    """TI (`static.IssueTable.ti`): one row per instruction; its lists are offsets into TX."""
    SASS = 0                                # its SASS instruction (STALL's column)
    RESULT = 1                              # result kind: FIXED, SHARED, GLOBAL
    LAT = 2                                 # result latency (cycles)
    ILINE = 3                               # instruction-cache line
    BAR = 4                                 # a CTA barrier
    NUNIT = 5                               # its pipes (several: the first free): how many ...
    UNIT = 6                                # ... and where in TX
    NREG = 7                                # registers read
    REG = 8
    NDST = 9                                # registers written
    DST = 10
    NCONST = 11                             # constant-cache lines (their slots in CCA)
    CONST = 12
    SHQ = 13                                # a shared-memory access: its place among its segment's, else -1
    IVL = 14                                # the F slot of its own issue interval (tensor_pipe.py), else -1: its pipe's
    # group scoreboards (async_groups.py): the counter it joins, commits, waits on (-1 none), the groups its
    # wait leaves incomplete; its completion after issue when the issue loop decides it (HGMMA; 0: the memory
    # model's, LDGSTS); the F slot of its cycles on the SM's shared-memory path (wgmma operands), else -1
    AJOIN = 15
    ACOMMIT = 16
    AWAIT = 17
    AWAITN = 18
    ALAT = 19
    SHC = 20
    STALL = 21                              # ptxas' stall count: cycles before the warp's next issue (0: none known)


@unique
class WFcol(IntEnum):
    """WF: one row per warp slot, floats."""
    REG = 0                                 # REG_SLOTS register ready times (-inf: never written)
    READY = REG_SLOTS                       # when it may issue as far as its own state goes
    LAST = REG_SLOTS + 1                    # its last issue
    CAND = REG_SLOTS + 2                    # the cycle its scheduler considers it (INF: at a barrier)
    GOPEN = REG_SLOTS + 3                   # per counter: completion of its open (uncommitted) group
    GRING = REG_SLOTS + 3 + GROUP_COUNTERS  # per counter: GROUP_RING completion times of committed groups


@unique
class WIcol(IntEnum):
    """WI: one row per warp slot, ints."""
    REG = 0                                 # REG_SLOTS register result kinds (FIXED, SHARED, GLOBAL)
    REASON = REG_SLOTS                      # the stall reason of READY
    THROT = REG_SLOTS + 1                   # held by a busy pipe (math_pipe / mio / lg throttle)
    ATBAR = REG_SLOTS + 2                   # waiting at a CTA barrier
    ILINE = REG_SLOTS + 3                   # the instruction-cache line of its latest fetch
    CUR = REG_SLOTS + 4                     # its next instruction (TI row)
    END = REG_SLOTS + 5                     # the end of its segment (TI row)
    SP = REG_SLOTS + 6                      # its sub-partition
    V0 = REG_SLOTS + 7                      # its visits' rows in VP: first, end, current
    VN = REG_SLOTS + 8
    V = REG_SLOTS + 9
    SH = REG_SLOTS + 10                     # where its visit's shared-memory wavefronts start in SHP
    GN = REG_SLOTS + 11                     # per counter: groups committed so far


@unique
class SPFcol(IntEnum):
    """SPF: one row per sub-partition, floats."""
    NEXT = 0                                # no warp of it issues before this cycle (a lower bound)
    SHFREE = 1                              # its own port to the shared-memory data path is free
    PIPE = 2                                # per pipe (static.PIPE_NAMES): when it is free


@unique
class SPIcol(IntEnum):
    """SPI: one row per sub-partition, ints."""
    LAST = 0                                # the warp it issued last (-1 none, -2 one no longer resident)
    ISSUED = 1                              # instructions issued
    N = 2                                   # resident warps ...
    W = 3                                   # ... their WF/WI rows, oldest first


@unique
class Fcol(IntEnum):
    """F: the SM's float scalars."""
    T = 0                                   # its clock: every cycle before it is done
    TCUR = 1                                # the cycle `run` stopped in
    PENDING = 2                             # EV_MEM: the memory model's ready time
    SHFREE = 3                              # the shared-memory data path's first lane is free
    WFSTEP = 4                              # cycles a wavefront holds the path
    SHLAT = 5                               # shared-memory latency
    WFCYC = 6                               # cycles a sub-partition's wavefront takes: result latency a further
    #                                         wavefront adds, and the lane's time (shared_access)
    ADONE = 7                               # the completion of the async operation being issued (HGMMA)
    SHFREE2 = 8                             # the path's second lane is free (shared_access)
    INTERVAL = 9                            # per pipe its issue interval; after the pipes', the instructions'
    #                                         own constants (static.IssueTable.intervals)


@unique
class Icol(IntEnum):
    """I: the SM's int scalars; where `run` stopped and resumes, and what the event is about."""
    PHASE = 0                               # the phase to resume in (PH_*)
    K = 1                                   # the sub-partition
    ISSUED = 2                              # whether one issued in this cycle
    EVW = 3                                 # the event's warp (EV_PICK: the policy's pick)
    EVJ = 4                                 # the event's instruction (TI row)
    WDONE = 5                               # EV_VISIT: the warp is done
    NREADY = 6                              # EV_PICK: ready warps in BUF
    POLICY = 7                              # P_GTO, P_OLDEST, P_PYTHON
    HOOK = 8                                # EV_ISSUE before each issue (the recording SM)
    NSP = 9                                 # sub-partitions
    WAVEFRONTS = 10                         # shared-memory wavefronts served


@unique
class Ccol(IntEnum):
    """A read-only cache's array (fetch.ReadOnlyCache.a): scalars, then one ready time per line
    (NaN: absent)."""
    FREE = 0                                # when the stream delivered its latest line
    FILL = 1                                # fill latency (cycles)
    CPL = 2                                 # cycles per line of the stream
    FRONT = 3                               # highest line requested
    MISS = 4                                # misses
    PREF = 5                                # lines the sequential prefetch keeps ahead
    PLINES = 6                              # the first lines (slots) are bank 0's: their misses cost PFILL, then PNEXT
    PFILL = 7                               # the first miss on a bank-0 line (cycles)
    PNEXT = 8                               # every later miss on a bank-0 line (cycles)
    PSEEN = 9                               # 1 once a bank-0 line missed
    LINES = 10


(T_SASS, T_RESULT, T_LAT, T_ILINE, T_BAR, T_NUNIT, T_UNIT, T_NREG, T_REG, T_NDST, T_DST, T_NCONST, T_CONST, T_SHQ,
 T_IVL, T_AJOIN, T_ACOMMIT, T_AWAIT, T_AWAITN, T_ALAT, T_SHC, T_STALL) = TIcol
T_COLS = len(TIcol)
_, W_READY, W_LAST, W_CAND, W_GOPEN, W_GRING = WFcol
WF_COLS = W_GRING + GROUP_COUNTERS * GROUP_RING
_, W_REASON, W_THROT, W_ATBAR, W_ILINE, W_CUR, W_END, W_SP, W_V0, W_VN, W_V, W_SH, W_GN = WIcol
WI_COLS = W_GN + GROUP_COUNTERS
S_NEXT, S_SHFREE, S_PIPE = SPFcol
S_LAST, S_ISSUED, S_N, S_W = SPIcol
F_T, F_TCUR, F_PENDING, F_SHFREE, F_WFSTEP, F_SHLAT, F_WFCYC, F_ADONE, F_SHFREE2, F_INTERVAL = Fcol
I_PHASE, I_K, I_ISSUED, I_EVW, I_EVJ, I_WDONE, I_NREADY, I_POLICY, I_HOOK, I_NSP, I_WAVEFRONTS = Icol
I_SIZE = len(Icol)
C_FREE, C_FILL, C_CPL, C_FRONT, C_MISS, C_PREF, C_PLINES, C_PFILL, C_PNEXT, C_PSEEN, C_LINES = Ccol

# Each array's columns in order: a name is one column, (name, width) a block; a width in words is
# fixed when the array is allocated (sm.SM, fetch.ReadOnlyCache): "pipes" len(static.PIPE_NAMES),
# "intervals" len(IssueTable.intervals), "warps" SMSpec.max_warps_per_sm, "lines" the cache's lines.
# tests/timing/test_issue_loop_layout.py checks it against the enums, the short names, the widths
# and the arrays sm.py, static.py and fetch.py allocate.
LAYOUT = {
    "TI": ("SASS", "RESULT", "LAT", "ILINE", "BAR", "NUNIT", "UNIT", "NREG", "REG", "NDST", "DST", "NCONST", "CONST",
           "SHQ", "IVL", "AJOIN", "ACOMMIT", "AWAIT", "AWAITN", "ALAT", "SHC", "STALL"),
    "WF": (("REG", REG_SLOTS), "READY", "LAST", "CAND", ("GOPEN", GROUP_COUNTERS),
           ("GRING", GROUP_COUNTERS * GROUP_RING)),
    "WI": (("REG", REG_SLOTS), "REASON", "THROT", "ATBAR", "ILINE", "CUR", "END", "SP", "V0", "VN", "V", "SH",
           ("GN", GROUP_COUNTERS)),
    "SPF": ("NEXT", "SHFREE", ("PIPE", "pipes")),
    "SPI": ("LAST", "ISSUED", "N", ("W", "warps")),
    "F": ("T", "TCUR", "PENDING", "SHFREE", "WFSTEP", "SHLAT", "WFCYC", "ADONE", "SHFREE2",
          ("INTERVAL", "pipes + intervals")),
    "I": ("PHASE", "K", "ISSUED", "EVW", "EVJ", "WDONE", "NREADY", "POLICY", "HOOK", "NSP", "WAVEFRONTS"),
    "C": ("FREE", "FILL", "CPL", "FRONT", "MISS", "PREF", "PLINES", "PFILL", "PNEXT", "PSEEN", ("LINES", "lines")),
}

_UNCACHED: list = []


def _compiled(fn):
    """`numba.njit` with numba's on-disk cache (compiled once per machine, loaded afterwards);
    where numba finds no writable cache directory (`NUMBA_CACHE_DIR` names one), compiled
    in each process instead, with one warning."""
    try:
        return njit(cache=True)(fn)
    except RuntimeError:                         # numba: "cannot cache function ...: no locator available"
        if not _UNCACHED:
            warnings.warn("gpusim: numba finds no writable cache directory for the compiled issue loop; it is "
                          "compiled in this process (a few seconds). Set NUMBA_CACHE_DIR to a writable directory "
                          "to compile it once.", RuntimeWarning, stacklevel=2)
        _UNCACHED.append(fn.__name__)
        return njit(fn)


@_compiled
def _request(C, t, line):
    if line < C[C_PLINES]:                       # a bank-0 line (fetch.ReadOnlyCache)
        r = t + (C[C_PNEXT] if C[C_PSEEN] > 0 else C[C_PFILL])
        C[C_PSEEN] = 1
        C[C_LINES + line] = r
        return r
    r = t + C[C_FILL]
    if C[C_FREE] + C[C_CPL] > r:
        r = C[C_FREE] + C[C_CPL]
    C[C_FREE] = r
    C[C_LINES + line] = r
    return r


@_compiled
def cache_ready(C, t, line):
    """fetch.ReadOnlyCache.ready: when `line` is present; requests it if absent and keeps the
    sequential prefetch ahead of it."""
    r = C[C_LINES + line]
    if np.isnan(r):
        C[C_MISS] += 1
        r = _request(C, t, line)
    pref = int(C[C_PREF])
    front = int(C[C_FRONT])
    if line + pref > front:
        lo = front if front > line else line
        for k in range(lo + 1, line + pref + 1):
            if np.isnan(C[C_LINES + k]):
                _request(C, t, k)
        C[C_FRONT] = line + pref
    return r


@_compiled
def shared_access(F, I, SPF, k, t, wf):
    """The SM's shared-memory data path, an access of `wf` wavefronts issued at t by
    sub-partition k. One sub-partition's wavefronts come one every `F_WFCYC` cycles, the path
    takes one every `F_WFSTEP`: it serves F_WFCYC / F_WFSTEP sub-partitions at once (two lanes
    on Hopper, each a sub-partition's stream at half the path's rate; one lane, the path's
    rate, where F_WFCYC <= F_WFSTEP). The access starts when k's previous one is done and a
    lane is free (the one free latest before then, so that a sub-partition's run of accesses
    keeps to one lane and leaves the other to the next sub-partition), holds it wf * F_WFCYC
    cycles; its result is ready the shared latency after it starts plus F_WFCYC per further
    wavefront. `SPF[k, S_SHFREE]` is also k's queue: a barrier arrival waits for it and holds it
    (sm.py `_arrive`, `sm.barrier_behind_shared`)."""
    I[I_WAVEFRONTS] += wf
    if F[F_WFCYC] <= F[F_WFSTEP]:                 # one lane: the path's rate
        start = t if t > F[F_SHFREE] else F[F_SHFREE]
        if SPF[k, S_SHFREE] > start:             # a barrier ahead of it in k's queue (sm.py `_arrive`)
            start = SPF[k, S_SHFREE]
        F[F_SHFREE] = start + wf * F[F_WFSTEP]
        F[F_SHFREE2] = F[F_SHFREE]
        SPF[k, S_SHFREE] = F[F_SHFREE]
        return start + F[F_SHLAT] + (wf - 1) * F[F_WFCYC]
    s = t if t > SPF[k, S_SHFREE] else SPF[k, S_SHFREE]
    late, early = (F_SHFREE, F_SHFREE2) if F[F_SHFREE] >= F[F_SHFREE2] else (F_SHFREE2, F_SHFREE)
    lane = late if F[late] <= s else early        # the one free latest by s, else the one free first
    start = s if s > F[lane] else F[lane]
    end = start + wf * F[F_WFCYC]
    F[lane] = end
    SPF[k, S_SHFREE] = end
    return start + F[F_SHLAT] + (wf - 1) * F[F_WFCYC]


@_compiled
def path_book(F, t, cycles):
    """The whole shared-memory data path for `cycles` (a cp.async fill, an HGMMA's operands, a
    compare-and-swap loop): each lane from when it is free after t, the lanes apart (the path's
    capacity, without waiting for both to be free at once); when the later lane is done."""
    a = (t if t > F[F_SHFREE] else F[F_SHFREE]) + cycles
    b = (t if t > F[F_SHFREE2] else F[F_SHFREE2]) + cycles
    F[F_SHFREE] = a
    F[F_SHFREE2] = b
    return a if a > b else b


@_compiled
def shared_fill(F, I, t, wf, cycles):
    """A cp.async's bytes written into shared memory (`payloads.CpAsyncPayload`): `wf`
    wavefronts holding the SM's shared-memory data path `cycles` each, from when it is free
    after t (booked when the copy issues: the path's share of time, not the moment its sectors
    return); when the fill is done."""
    I[I_WAVEFRONTS] += wf
    return path_book(F, t, wf * cycles)


@_compiled
def prepare(w, t_min, TI, TX, WF, WI, SPF, ICA, CCA):
    """SM._prepare: when w's next instruction may issue as far as its own state goes (after
    t_min, an external hold, its registers, its instruction and constant lines)."""
    if WI[w, W_ATBAR]:
        WF[w, W_CAND] = INF
        return
    j = WI[w, W_CUR]
    r = t_min
    reason = R_WAIT
    if WF[w, W_READY] > r:
        r = WF[w, W_READY]
        reason = WI[w, W_REASON]
    o = TI[j, T_REG]
    for q in range(TI[j, T_NREG]):
        reg = TX[o + q]
        v = WF[w, reg]
        if v > r:
            r = v
            reason = R_DEP0 + WI[w, reg]
    c = TI[j, T_AWAIT]
    if c >= 0:                                 # a group scoreboard wait: all but the newest N groups
        n = WI[w, W_GN + c]
        g = n - 1 - TI[j, T_AWAITN]
        if g >= 0:
            if g < n - GROUP_RING:
                g = n - GROUP_RING
            v = WF[w, W_GRING + c * GROUP_RING + g % GROUP_RING]
            if v > r:
                r = v
                reason = R_GMMA if c == 0 else R_LONG
    il = TI[j, T_ILINE]
    if il == WI[w, W_ILINE]:
        f = ICA[C_LINES + il]
    else:
        f = cache_ready(ICA, t_min, il)
        WI[w, W_ILINE] = il
    if f > r:
        r = f
        reason = R_NO_INSTR
    o = TI[j, T_CONST]
    for q in range(TI[j, T_NCONST]):
        f = cache_ready(CCA, t_min, TX[o + q])
        if f > r:
            r = f
            reason = R_IMC
    WF[w, W_READY] = r
    WI[w, W_REASON] = reason
    WF[w, W_CAND] = r
    sp = WI[w, W_SP]
    if r < SPF[sp, S_NEXT]:
        SPF[sp, S_NEXT] = r


@_compiled
def add_warp(k, sp, t0, v0, vn, WF, WI, SPF, SPI):
    """A warp arrives in row k, the youngest of sub-partition sp, dispatched at t0, its visits
    in rows v0..vn-1 of VP: nothing written yet, its first instruction held until t0
    (`dispatch_stall`)."""
    for r in range(REG_SLOTS):
        WF[k, r] = -INF                        # never written
        WI[k, r] = 0                           # FIXED
    WF[k, W_READY] = t0
    WF[k, W_LAST] = t0 - 1
    WF[k, W_CAND] = t0
    for c in range(GROUP_COUNTERS):
        WF[k, W_GOPEN + c] = -INF
        WI[k, W_GN + c] = 0
    WI[k, W_REASON] = R_DISPATCH
    WI[k, W_THROT] = 0
    WI[k, W_ATBAR] = 0
    WI[k, W_ILINE] = -1
    WI[k, W_CUR] = 0
    WI[k, W_END] = 0
    WI[k, W_SP] = sp
    WI[k, W_V0] = v0
    WI[k, W_VN] = vn
    WI[k, W_V] = v0 - 1                        # before its first visit
    n = SPI[sp, S_N]
    SPI[sp, S_W + n] = k
    SPI[sp, S_N] = n + 1
    if t0 < SPF[sp, S_NEXT]:
        SPF[sp, S_NEXT] = t0


@_compiled
def enter(w, v, TS, WI, VP):
    """Warp w starts visit row v of VP: the first instruction of its segment."""
    WI[w, W_V] = v
    seg = VP[v, 0]
    WI[w, W_CUR] = TS[seg]
    WI[w, W_END] = TS[seg + 1]
    WI[w, W_SH] = VP[v, 1]


@_compiled
def remove_warp(k, sp, SPI):
    """Warp row k leaves sub-partition sp (the others keep their age order); if it issued
    last there, `last` becomes -2 (a warp no longer resident)."""
    n = SPI[sp, S_N]
    q = 0
    while SPI[sp, S_W + q] != k:
        q += 1
    for r in range(q, n - 1):
        SPI[sp, S_W + r] = SPI[sp, S_W + r + 1]
    SPI[sp, S_N] = n - 1
    if SPI[sp, S_LAST] == k:
        SPI[sp, S_LAST] = -2


@_compiled
def next_time(WF, SPI, nsp):
    """SM.next_time: the earliest candidate cycle of a resident warp."""
    best = INF
    for k in range(nsp):
        for q in range(SPI[k, S_N]):
            c = WF[SPI[k, S_W + q], W_CAND]
            if c < best:
                best = c
    return best


@_compiled
def _scan(k, t, TI, TX, WF, WI, SPF, SPI, I, BUF):
    """Sub-partition k's scheduler at cycle t: the warp it issues, -1 if none is ready, -2 if
    the policy is Python's (BUF[:I[I_NREADY]] the ready warps, oldest first)."""
    later = INF
    n = 0
    for q in range(SPI[k, S_N]):
        w = SPI[k, S_W + q]
        c = WF[w, W_CAND]
        if c <= t:
            j = WI[w, W_CUR]
            o = TI[j, T_UNIT]
            pf = SPF[k, S_PIPE + TX[o]]
            for u in range(1, TI[j, T_NUNIT]):
                f = SPF[k, S_PIPE + TX[o + u]]
                if f < pf:
                    pf = f
            if pf > t:
                WF[w, W_CAND] = pf
                WI[w, W_THROT] = 1
                if pf < later:
                    later = pf
            else:
                BUF[n] = w
                n += 1
        elif c < later:
            later = c
    if n == 0:
        SPF[k, S_NEXT] = later
        return -1
    if n == 1:
        SPF[k, S_NEXT] = later                 # its next candidate lowers it (prepare)
        return BUF[0]
    SPF[k, S_NEXT] = t                         # the others stay ready
    policy = I[I_POLICY]
    if policy == P_GTO:
        last = SPI[k, S_LAST]
        if last >= 0:
            for q in range(n):
                if BUF[q] == last:
                    return last
        return BUF[0]
    if policy == P_OLDEST:
        return BUF[0]
    I[I_NREADY] = n
    return -2


@_compiled
def _book(k, w, t, TI, TX, WF, WI, SPF, SPI, F, STALL):
    """The issue itself: stall cycles since the warp's previous issue, its pipe booked.
    Returns the flat instruction issued."""
    j = WI[w, W_CUR]
    idx = TI[j, T_SASS]
    gap0 = WF[w, W_LAST] + 1
    if t > gap0:
        dep_end = WF[w, W_READY]               # min(max(ready_at, gap0), t)
        if dep_end < gap0:
            dep_end = gap0
        if dep_end > t:
            dep_end = t
        if dep_end > gap0:
            STALL[WI[w, W_REASON], idx] += dep_end - gap0
        rest = t - dep_end
        if rest > 0:
            if WI[w, W_THROT]:
                STALL[R_THROTTLE0 + TI[j, T_RESULT], idx] += rest
            else:
                STALL[R_NOT_SELECTED, idx] += rest
    STALL[R_SELECTED, idx] += 1
    WI[w, W_THROT] = 0
    o = TI[j, T_UNIT]
    u = TX[o]
    nu = TI[j, T_NUNIT]
    if nu > 1:                                 # the first free of its pipes (FP32: fmalite or fmaheavy)
        for q in range(nu):
            v = TX[o + q]
            if SPF[k, S_PIPE + v] <= t:
                u = v
                break
    iv = TI[j, T_IVL]
    SPF[k, S_PIPE + u] = t + (F[F_INTERVAL + u] if iv < 0 else F[iv])
    SPI[k, S_ISSUED] += 1
    return j


@_compiled
def _async_done(j, t, TI, F):
    """F[F_ADONE]: when HGMMA row j issued at t completes: its latency after issue, and its
    tail (latency less issue interval) after its shared-memory operands have passed the SM's
    shared-memory path, booked from t for their cycles (T_SHC)."""
    done = t + TI[j, T_ALAT]
    q = TI[j, T_SHC]
    if q >= 0:
        end = path_book(F, t, F[q])
        iv = TI[j, T_IVL]
        tail = TI[j, T_ALAT] - (F[iv] if iv >= 0 else 0.0)
        if end + tail > done:
            done = end + tail
    F[F_ADONE] = done


@_compiled
def _groups(w, j, ready, TI, WF, WI, F):
    """Row j's part in warp w's group scoreboards (async_groups.py): its completion joins the
    open group of its counter (HGMMA: F[F_ADONE]; LDGSTS: `ready`, the memory model's); a
    commit closes the open group, completing no earlier than the group before it."""
    c = TI[j, T_AJOIN]
    if c >= 0:
        done = F[F_ADONE] if TI[j, T_ALAT] > 0 else ready
        if done > WF[w, W_GOPEN + c]:
            WF[w, W_GOPEN + c] = done
    c = TI[j, T_ACOMMIT]
    if c >= 0:
        n = WI[w, W_GN + c]
        v = WF[w, W_GOPEN + c]
        if n > 0:
            p = WF[w, W_GRING + c * GROUP_RING + (n - 1) % GROUP_RING]
            if p > v:
                v = p
        WF[w, W_GRING + c * GROUP_RING + n % GROUP_RING] = v
        WI[w, W_GN + c] = n + 1
        WF[w, W_GOPEN + c] = -INF


@_compiled
def _stop(F, I, t, k, issued, w, j, phase, event):
    """Where `run` stops (it resumes there): cycle, sub-partition, whether one issued in this
    cycle, the warp and instruction of the event, the phase to resume in."""
    F[F_TCUR] = t
    I[I_K] = k
    I[I_ISSUED] = issued
    I[I_EVW] = w
    I[I_EVJ] = j
    I[I_PHASE] = phase
    return event


@_compiled
def run(until, TI, TX, TS, WF, WI, SPF, SPI, F, I, ICA, CCA, STALL, BUF, VP, SHP):
    """SM.advance until `until` or the next event (module docstring)."""
    nsp = I[I_NSP]
    phase = I[I_PHASE]
    I[I_PHASE] = PH_SCAN
    t = F[F_TCUR]
    k = I[I_K]
    issued = I[I_ISSUED]
    w = I[I_EVW]
    j = I[I_EVJ]
    while True:
        if phase == PH_SCAN:                   # a new cycle: the earliest `next` of a sub-partition
            t = INF
            for q in range(nsp):
                if SPF[q, S_NEXT] < t:
                    t = SPF[q, S_NEXT]
            if t < F[F_T]:
                t = F[F_T]
            if t >= until or t == INF:
                m = until if until < t else t
                if m > F[F_T]:
                    F[F_T] = m
                return EV_DONE
            k = 0
            issued = 0
        while k < nsp:
            if phase == PH_SCAN:
                if SPF[k, S_NEXT] > t:
                    k += 1
                    continue
                w = _scan(k, t, TI, TX, WF, WI, SPF, SPI, I, BUF)
                if w == -1:
                    k += 1
                    continue
                if w == -2:
                    return _stop(F, I, t, k, issued, w, j, PH_PICKED, EV_PICK)
                phase = PH_PICKED
            if phase == PH_PICKED:              # w: the scan's pick or, resumed, the policy's (I[I_EVW])
                SPI[k, S_LAST] = w
                if I[I_HOOK]:
                    return _stop(F, I, t, k, issued, w, j, PH_ISSUE, EV_ISSUE)
                phase = PH_ISSUE
            if phase == PH_ISSUE:
                j = _book(k, w, t, TI, TX, WF, WI, SPF, SPI, F, STALL)
                ready = t + TI[j, T_LAT]
                if TI[j, T_ALAT] > 0:          # an HGMMA: completes on its own (async_groups.py)
                    _async_done(j, t, TI, F)
                q = TI[j, T_SHQ]
                if q >= 0 and I[I_HOOK] == 0:  # shared memory: here (its wavefronts, -1 no access)
                    wf = SHP[WI[w, W_SH] + q]
                    if wf >= 0:
                        ready = shared_access(F, I, SPF, k, t, wf)
                elif TI[j, T_RESULT] != 0:     # not FIXED: the memory model says when
                    F[F_PENDING] = ready
                    return _stop(F, I, t, k, issued, w, j, PH_MEM, EV_MEM)
                phase = PH_MEM
            elif phase == PH_MEM:
                ready = F[F_PENDING]
            if phase == PH_MEM:
                o = TI[j, T_DST]
                kind = TI[j, T_RESULT]
                for q in range(TI[j, T_NDST]):
                    d = TX[o + q]
                    WF[w, d] = ready
                    WI[w, d] = kind
                if TI[j, T_AJOIN] >= 0 or TI[j, T_ACOMMIT] >= 0:
                    _groups(w, j, ready, TI, WF, WI, F)
                h = t + TI[j, T_STALL]         # its stall count holds the warp ('wait'); prepare sees the hold
                if h > t + 1 and h > WF[w, W_READY]:
                    WF[w, W_READY] = h
                    WI[w, W_REASON] = R_WAIT
                WF[w, W_LAST] = t
                if j + 1 >= WI[w, W_END]:       # the segment's last instruction: the next visit
                    v = WI[w, W_V] + 1
                    if v < WI[w, W_VN] and VP[v, 0] >= 0:
                        enter(w, v, TS, WI, VP)
                    else:                      # a marker, or the warp is done: Python
                        return _stop(F, I, t, k, issued, w, j, PH_VISIT, EV_VISIT)
                else:
                    WI[w, W_CUR] = j + 1
                I[I_WDONE] = 0
                phase = PH_VISIT
            if phase == PH_VISIT:
                if I[I_WDONE]:
                    I[I_WDONE] = 0
                    issued = 1
                    k += 1
                    phase = PH_SCAN
                    w = -1
                    continue
                if TI[j, T_BAR]:
                    return _stop(F, I, t, k, issued, w, j, PH_BARRIER, EV_BARRIER)
                prepare(w, t + 1, TI, TX, WF, WI, SPF, ICA, CCA)
            elif phase == PH_BARRIER:
                if WI[w, W_ATBAR]:
                    WF[w, W_CAND] = INF
            issued = 1
            k += 1
            phase = PH_SCAN
            w = -1
        # nothing issued: candidates were stale (pipeline became busy) or `next` was below
        # the earliest candidate; both moved forward; loop again
        F[F_T] = t + 1 if issued else t
        phase = PH_SCAN
