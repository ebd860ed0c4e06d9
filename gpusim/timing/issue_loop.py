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

Layout (column indices below): per warp row `k` of `WF` (floats: register ready times,
then ready_at, last issue, candidate cycle) and `WI` (ints: register result kinds, then
reason, throttled, at barrier, instruction-cache line, current flat instruction, end of
its segment, sub-partition, its visits' rows in `VP`: first, end, current, and where its
visit's shared-memory wavefronts start in `SHP`); per sub-partition row of `SPF` (next, pipe free times) and
`SPI` (last issued warp, issued count, resident warps, their rows in age order); the
SM's scalars `F`, `I`; one array per read-only cache (`fetch.py`); the kernel's
instruction table `TI`, `TX`, `TS` (`static.IssueTable`); `STALL` [reason, SASS
instruction]; the SM's pool of its warps' visits `VP` (segment, or < 0 a marker; start of
its wavefronts in `SHP`) and `SHP` (per shared-memory access of a visit, in segment order:
wavefronts, -1 none).

One file: numba's cache (`cache=True`) is invalidated only by changes to the file that
defines a function, so everything compiled, and every constant it uses, lives here (the
constants taken from elsewhere are literals checked at import).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from numba import njit

from gpusim.frontend.sass import operands
from gpusim.timing import async_groups, static

INF = math.inf
REG_SLOTS = 352                             # scoreboard slots: operands.B_BASE + N_B
GROUP_RING = 8                              # async_groups.RING
if REG_SLOTS != operands.B_BASE + operands.N_B or (static.FIXED, static.SHARED, static.GLOBAL) != (0, 1, 2) \
        or (async_groups.RING, async_groups.COUNTERS, async_groups.WGMMA) != (GROUP_RING, 2, 0):
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
# TI columns (static.IssueTable); lists are offsets into TX
T_SASS, T_RESULT, T_LAT, T_ILINE, T_BAR, T_NUNIT, T_UNIT, T_NREG, T_REG, T_NDST, T_DST, T_NCONST, T_CONST = range(13)
T_SHQ = 13                                  # a shared-memory access: its place among its segment's, else -1
T_IVL = 14                                  # the F slot of its own issue interval (tensor_pipe.py), else -1: its pipe's
# group scoreboards (async_groups.py): the counter it joins, commits, waits on (-1 none), the groups its
# wait leaves incomplete; its completion after issue when the issue loop decides it (HGMMA; 0: the memory
# model's, LDGSTS); the F slot of its cycles on the SM's shared-memory path (wgmma operands), else -1
T_AJOIN, T_ACOMMIT, T_AWAIT, T_AWAITN, T_ALAT, T_SHC = 15, 16, 17, 18, 19, 20
T_STALL = 21                                # ptxas' stall count: cycles before the warp's next issue (0: none known)
T_COLS = 22
# WF / WI columns after the REG_SLOTS register columns
W_READY, W_LAST, W_CAND = REG_SLOTS, REG_SLOTS + 1, REG_SLOTS + 2
W_GOPEN = REG_SLOTS + 3                     # per counter: completion of its open (uncommitted) group
W_GRING = W_GOPEN + 2                       # per counter: GROUP_RING completion times of committed groups
WF_COLS = W_GRING + 2 * GROUP_RING
W_REASON, W_THROT, W_ATBAR, W_ILINE, W_CUR, W_END, W_SP, W_V0, W_VN, W_V, W_SH = range(REG_SLOTS, REG_SLOTS + 11)
W_GN = REG_SLOTS + 11                       # per counter: groups committed so far
WI_COLS = W_GN + 2
# SPF / SPI columns
S_NEXT, S_PIPE = 0, 1
S_LAST, S_ISSUED, S_N, S_W = 0, 1, 2, 3
# F / I entries
F_T, F_TCUR, F_PENDING, F_SHFREE, F_WFSTEP, F_SHLAT, F_WFCYC = range(7)
F_ADONE = 7                                 # the completion of the async operation being issued (HGMMA)
F_INTERVAL = 8                              # F_INTERVAL + pipe: its issue interval; after the pipes', the
#                                             instructions' own constants (static.IssueTable.intervals)
I_PHASE, I_K, I_ISSUED, I_EVW, I_EVJ, I_WDONE, I_NREADY, I_POLICY, I_HOOK, I_NSP, I_WAVEFRONTS = range(11)
I_SIZE = 11
# read-only cache arrays: scalars, then one ready time per line (NaN: absent)
C_FREE, C_FILL, C_CPL, C_FRONT, C_MISS, C_PREF, C_LINES = range(7)

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
def shared_access(F, I, t, wf):
    """The SM's shared-memory data path: an access of `wf` wavefronts issued at t starts when
    the path is free, takes one wavefront per `F_WFSTEP` cycles; its result is ready the
    shared latency after it starts plus `F_WFCYC` per further wavefront."""
    start = t if t > F[F_SHFREE] else F[F_SHFREE]
    F[F_SHFREE] = start + wf * F[F_WFSTEP]
    I[I_WAVEFRONTS] += wf
    return start + F[F_SHLAT] + (wf - 1) * F[F_WFCYC]


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
    for c in range(2):
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
        start = t if t > F[F_SHFREE] else F[F_SHFREE]
        end = start + F[q]
        F[F_SHFREE] = end
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
                        ready = shared_access(F, I, t, wf)
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
