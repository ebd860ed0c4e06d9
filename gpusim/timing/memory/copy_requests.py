"""How a bypassing cp.async (LDGSTS.BYPASS) asks the L2 for its sectors: the lengths of its
requests (`repeat_runs`), for `l1.L1Cache.copy_in`.

What is measured (data/measurements/gemm_parts_h100.json, `python -m
validate.tensor_timing.gemm_parts`, H100): the copies of `mma_gemm`'s tiles alone, 64-B rows of A
80 B apart and 128-B rows of B 144 B apart in shared memory (every other row 16 B off a 32-B
boundary), take 11.8 L2 requests (`lts__t_requests_srcunit_tex_op_read`) and 22.1 sector lookups
a LDGSTS; the same copies into unpadded rows 5.8 and 15.7. The copies' time follows the
requests, not the bytes: 111 / 62 us (2048^3), 862 / 511 us (4096^3), 1.78 and 1.69 times (H200:
1.80 and 1.71, gemm_parts_h200.json), where the sectors are 1.4-1.5 times, and the padded copies run
at 0.79-0.84 requests a cycle a slice, near the 0.92 of 1-sector requests ([MEAS-L2REQ]). The fill wavefronts of the same LDGSTS
(`gpusim.functional.copy_counts.fill_wavefronts`: the pieces of one global line bound for one
shared 128-B window and 16-B phase) are 15 (A) and 10 (B): 12.5 a LDGSTS, and 8 and 4 (6) unpadded,
which the requests follow.

The model: a bypassing copy's distinct sectors go in one request a line, as a load's; the
sectors it reads again (`repeated`, those whose halves fill two shared sectors) go in requests
of their own, as many as its fill wavefronts exceed its lines (at least one a line, at most one
a sector), each line's repeated sectors split as evenly as they go. The L2 books each request at
least one request's share of its slice (`l2.requests_per_cycle_per_slice`), so a second read
of one or two sectors costs the slice a request where it cost its bytes before.

Not modelled: which sectors are read again (the first `repeated` of the copy's, as before), and
extra requests of copies that read no sector twice (rows that cross windows at 32-B-aligned
pitches: their wavefronts exceed their lines too; not measured)."""
from __future__ import annotations


def repeat_runs(lst: list, again: list, requests: int, line_shift: int) -> list[int]:
    """Request lengths of `lst + again`: one request per run of `lst`'s sectors in one line,
    then `again` (the sectors read a second time) in max(its lines, min(len(again), requests -
    lst's lines)) requests, each within one line, a line's split as evenly as it goes (module
    docstring). `requests`: the copy's fill wavefronts (0: one request a line of `again`)."""
    runs = _line_runs(lst, line_shift)
    reps = _line_runs(again, line_shift)
    want = max(len(reps), min(len(again), requests - len(runs)))
    parts = [1] * len(reps)
    for _ in range(want - len(reps)):            # one more request to the line with most sectors a request
        k = max(range(len(reps)), key=lambda i: (reps[i] / parts[i] if parts[i] < reps[i] else -1.0, -i))
        if parts[k] >= reps[k]:
            break
        parts[k] += 1
    for c, k in zip(reps, parts):
        q, r = divmod(c, k)
        runs.extend(q + 1 if i < r else q for i in range(k))
    return runs


def _line_runs(sectors: list, line_shift: int) -> list[int]:
    """Lengths of the runs of consecutive sectors in one line."""
    runs: list[int] = []
    prev = None
    for s in sectors:
        line = s >> line_shift
        if line == prev:
            runs[-1] += 1
        else:
            runs.append(1)
            prev = line
    return runs
