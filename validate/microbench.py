"""Microbenchmarks: Numba kernels that each isolate one hardware property, in the
`ProgramSpec`/`Case` form of `programs/`, so `validate measure` times them on a GPU and
gpusim runs the same kernels (`MICROBENCHMARKS[name].case(size)`). The kernels themselves are in
`microbench_kernels.py`; this module has their sizes, builders and what each record is about.

| name               | property                                   | sizes                           |
|--------------------|--------------------------------------------|---------------------------------|
| pointer_chase      | dependent-load latency, L1 / L2 / HBM       | fp_4KiB .. fp_256MiB footprints |
| bandwidth          | L2 (16 MiB) and HBM (2 GiB) read/write/copy | {read,write,copy}_{l2,hbm}      |
| random_access      | HBM at random 4-byte loads / stores (1 GiB) | read, write                     |
| smem_stride        | shared-memory bank conflicts, 1..32-way     | ld_s1 .. ld_s32, st_s{1,..,32}  |
| issue_throughput   | warp-instruction throughput per op class    | fp32_fma, fp64_fma, ...         |
| atomic_throughput  | atomics, one address vs distinct addresses  | {global,shared}_{same,distinct} |
| launch_overhead    | an (almost) empty kernel                    | default                         |
| block_dispatch     | many one-warp blocks that do nothing        | b8448 .. b540672                |

'default' is always a small launch the simulator runs in about a second; the other sizes
are the measured points. `RECORDED` names outputs that are results rather than checked
values (read back and stored, e.g. the chase's clock64 cycle count), and `derive(record,
sms)` turns one measured kernel record into the figures each benchmark is about.

Method notes: the pointer chase is one thread walking a random cyclic permutation of
128-byte-spaced 8-byte slots (every hop a new line), `warm` hops first (the whole cycle
when it has at most 2^18 lines, so the timed hops hit whatever level holds the
footprint; 2^16 hops otherwise, warming the TLB while the timed hops stay cold), then
`hops` hops between two `%clock64` reads: cycles per load = cycles / hops, address
arithmetic of the dependent chain included (Numba's index arithmetic adds ~20 cycles to
a bare load). Bandwidth kernels stream int32 with 4 independent loads (stores) per thread
and loop iteration; the L2 cases re-read one 16 MiB buffer 32 times. Shared-memory
kernels make 4 accesses per iteration at words w + k*1024 (same bank), unsigned indices
so Numba emits no negative-index code. Issue kernels run 8 independent chains per thread,
4 steps of each per loop iteration (a device function with a constant trip count, fully
unrolled), so the loop's own 64-bit counter code is a small share; ncu's per-pipe
instruction counts (`sm__inst_executed_pipe_*`) say what the pipes actually executed.
Grids of 1024 x 256 threads (bandwidth) or 1056 x 256 (8 blocks of 256 threads on each
of 132 SMs) fill an H100/H200.

Sources: Mei and Chu, "Dissecting GPU Memory Hierarchy through Microbenchmarking" (2016,
pointer chase); Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
Microbenchmarking" (2018, issue and shared-memory methods).
"""
from __future__ import annotations

import math

import numpy as np

from programs.base import Case, ProgramSpec
from validate.microbench_kernels import (BW_BLOCKS, CHAINS, FILL_BLOCKS, GiB, KiB, MiB, OMEGA, SMEM_PER_ITER,
                                         SMEM_WORDS, STEPS, THREADS, _random_indices, atomic_global, atomic_shared,
                                         block_dispatch, bw_copy, bw_read, bw_write, issue_fp32_fma,
                                         issue_fp64_fma, issue_int32_add, issue_int32_mul, issue_sfu_exp, launch_empty,
                                         pointer_chase, random_read, random_write, smem_load_stride, smem_store_stride)

# ---- builders ----------------------------------------------------------------------

def build_chase(rng, footprint_bytes, hops, warm, stride_bytes=128):
    n_lines = footprint_bytes // stride_bytes
    per = stride_bytes // 8
    order = rng.permutation(n_lines)
    order = np.roll(order, -int(np.flatnonzero(order == 0)[0]))        # the walk starts at slot 0
    nxt = np.zeros(footprint_bytes // 8, np.uint64)
    nxt[order * per] = np.roll(order, -1) * per
    last = np.zeros(1, np.uint64)
    want = np.array([order[(warm + hops) % n_lines] * per], np.uint64)
    return Case("pointer_chase", pointer_chase, (1,), (1,), (nxt, last, np.zeros(1, np.int64), warm, hops), {1: want})


def build_bandwidth(rng, op, nbytes, reps, blocks=BW_BLOCKS):
    T = blocks * THREADS
    n = nbytes // 4 if op != "copy" else nbytes // 8         # copy: half read, half written
    if n % (4 * T):
        raise ValueError(f"bandwidth: {n} elements is not a multiple of 4 * {T} threads")
    grid, block = (blocks,), (THREADS,)
    # Inputs are one random tile of 4 * T elements repeated (fast to build at 2 GiB).
    tile = rng.integers(-(1 << 20), 1 << 20, 4 * T, dtype=np.int32)
    if op == "read":
        x = np.tile(tile, n // tile.size)
        want = tile.reshape(-1, T).sum(axis=0, dtype=np.int64) * (n // tile.size) * reps
        return Case("bandwidth", bw_read, grid, block, (x, np.zeros(T, np.int64), reps), {1: want})
    if op == "write":
        x = np.full(n, -1, np.int32)
        want = np.arange(reps - 1, n + reps - 1, dtype=np.int32)
        return Case("bandwidth", bw_write, grid, block, (x, reps), {0: want})
    x = np.tile(tile, n // tile.size)
    return Case("bandwidth", bw_copy, grid, block, (x, np.full(n, -1, np.int32), reps), {1: x})


def build_random(rng, op, nbytes, iters, blocks=BW_BLOCKS):
    n = nbytes // 4
    if n & (n - 1) or not 1 << 10 <= n <= 1 << 32:
        raise ValueError(f"random_access: {n} int32 elements must be a power of two in 2^10..2^32")
    shift = 32 - (n.bit_length() - 1)
    threads = blocks * THREADS
    idx = _random_indices(threads, iters, shift)
    if op == "read":
        x = rng.integers(0, 1 << 16, n, dtype=np.uint32)
        want = x[idx].astype(np.uint64).sum(axis=1).astype(np.uint32)
        return Case("random_access", random_read, (blocks,), (THREADS,),
                    (x, np.zeros(threads, np.uint32), iters, shift), {1: want})
    want = np.zeros(n, np.int32)
    want[idx.ravel()] = 1
    return Case("random_access", random_write, (blocks,), (THREADS,), (np.zeros(n, np.int32), iters, shift), {0: want})


def build_smem(rng, op, stride, reps, blocks=FILL_BLOCKS):
    if op == "ld":
        lane = np.arange(THREADS) & 31
        words = lane[:, None] * stride + (np.arange(reps)[None, :] & 31)
        want = np.tile(4 * (words & 255).sum(axis=1).astype(np.float32), blocks)   # 4 copies of w & 255
        out = np.full(blocks * THREADS, np.nan, np.float32)
        return Case("smem_stride", smem_load_stride, (blocks,), (THREADS,), (out, stride, reps), {0: want})
    want = np.tile((np.arange(SMEM_WORDS) & 255).astype(np.float32), blocks)
    out = np.full(blocks * SMEM_WORDS, np.nan, np.float32)
    return Case("smem_stride", smem_store_stride, (blocks,), (THREADS,), (out, stride, reps), {0: want})


def _mat_pow_mod32(mat, k):
    """[[a, b], [c, d]] ** k modulo 2^32, in Python integers."""
    result, base = ((1, 0), (0, 1)), mat
    mul = lambda p, q: tuple(tuple(sum(p[i][t] * q[t][j] for t in range(2)) % (1 << 32) for j in range(2))
                             for i in range(2))
    while k:
        if k & 1:
            result = mul(result, base)
        base, k = mul(base, base), k >> 1
    return result


def _pow_mod32(m, k):
    """m ** k modulo 2^32 elementwise (uint32 array m)."""
    result, base, mask = np.ones(m.size, np.uint64), m.astype(np.uint64), np.uint64(0xFFFFFFFF)
    while k:
        if k & 1:
            result = (result * base) & mask
        base, k = (base * base) & mask, k >> 1
    return result


def build_issue(rng, op, iters, blocks=FILL_BLOCKS, threads=THREADS):
    n = blocks * threads
    grid, block = (blocks,), (threads,)
    steps = iters * STEPS
    if op in ("fp32_fma", "fp64_fma"):
        dt = np.float32 if op == "fp32_fma" else np.float64
        x = rng.uniform(-1, 1, (n, CHAINS)).astype(dt)
        m, d = rng.uniform(0.5, 0.75, n).astype(dt), rng.uniform(0.5, 1, n).astype(dt)
        # |m| <= 0.75: after >= 128 steps every chain sits at d / (1 - m) within a few ulp.
        want = (CHAINS * d.astype(np.float64) / (1 - m.astype(np.float64))).astype(dt)
        kernel = issue_fp32_fma if op == "fp32_fma" else issue_fp64_fma
        return Case("issue_throughput", kernel, grid, block, (x, m, d, np.full(n, np.nan, dt), iters), {3: want},
                    rtol=1e-5 if dt == np.float32 else 1e-12)
    if op == "int32_add":
        x = rng.integers(0, 1 << 32, (n, 4), dtype=np.uint32)
        y = rng.integers(0, 1 << 32, (n, 4), dtype=np.uint32)
        (p, q), (r, s) = _mat_pow_mod32(((1, 1), (1, 2)), steps // 2)     # (a, b) -> (a+b, a+2b)
        a, b, u = x.astype(np.uint64), y.astype(np.uint64), np.uint64
        want = np.concatenate([u(p) * a + u(q) * b, u(r) * a + u(s) * b], axis=1).astype(np.uint32)
        return Case("issue_throughput", issue_int32_add, grid, block, (x, y, np.zeros((n, CHAINS), np.uint32), iters),
                    {2: want})
    if op == "int32_mul":
        x = rng.integers(0, 1 << 32, (n, CHAINS), dtype=np.uint32)
        m = (rng.integers(0, 1 << 31, n, dtype=np.uint32) * 2 + 1).astype(np.uint32)
        want = (x.astype(np.uint64) * _pow_mod32(m, steps)[:, None]).astype(np.uint32)
        return Case("issue_throughput", issue_int32_mul, grid, block, (x, m, np.zeros((n, CHAINS), np.uint32), iters),
                    {2: want})
    if op == "sfu_exp":
        x = rng.uniform(0, 1, (n, CHAINS)).astype(np.float32)
        want = np.full(n, CHAINS * OMEGA, np.float32)
        return Case("issue_throughput", issue_sfu_exp, grid, block, (x, np.full(n, np.nan, np.float32), iters), {1: want},
                    rtol=1e-5)
    raise ValueError(f"issue_throughput: unknown op {op!r}")


def build_atomic(rng, space, same, iters, blocks=FILL_BLOCKS, threads=THREADS):
    n = blocks * threads
    if space == "global":
        counts = np.zeros(1 if same else n, np.int32)
        want = np.full(counts.size, (n if same else 1) * iters, np.int32)
        return Case("atomic_throughput", atomic_global, (blocks,), (threads,), (counts, 0 if same else -1, iters),
                    {0: want})
    if threads != THREADS:
        raise ValueError(f"atomic_throughput: shared runs {THREADS} threads per block")
    per_block = np.zeros(threads, np.int32)
    per_block[:] = 0 if same else iters
    per_block[0] = threads * iters if same else iters
    return Case("atomic_throughput", atomic_shared, (blocks,), (threads,),
                (np.full(n, -1, np.int32), 0 if same else -1, iters), {0: np.tile(per_block, blocks)})


def build_launch(rng, threads=32):
    return Case("launch_overhead", launch_empty, (1,), (threads,), (np.zeros(1, np.int32),),
                {0: np.ones(1, np.int32)})


def build_dispatch(rng, blocks):
    return Case("block_dispatch", block_dispatch, (blocks,), (32,), (np.full(blocks, -1, np.int32),),
                {0: np.arange(blocks, dtype=np.int32)})


def _footprints():
    sizes = {}
    for p in range(12, 29):                     # 4 KiB .. 256 MiB
        b = 1 << p
        label = f"{b >> 10}KiB" if b < MiB else f"{b >> 20}MiB"
        lines = b // 128
        sizes[f"fp_{label}"] = {"footprint_bytes": b, "hops": 4096, "warm": lines if lines <= 1 << 18 else 1 << 16}
    return sizes


MICROBENCHMARKS: dict[str, ProgramSpec] = {s.name: s for s in (
    ProgramSpec("pointer_chase", "one thread chasing a random cycle of 128 B-spaced slots; cycles per dependent load",
                build_chase, sizes={"default": {"footprint_bytes": 4 * KiB, "hops": 256, "warm": 32}, **_footprints()},
                tags=("latency", "memory")),
    ProgramSpec("bandwidth", "streaming int32 read / write / copy over 16 MiB (L2-resident, 32 passes) or 2 GiB (HBM)",
                build_bandwidth, sizes={
                    "default": {"op": "read", "nbytes": 256 * KiB, "reps": 2, "blocks": 16},
                    **{f"{op}_l2": {"op": op, "nbytes": 16 * MiB, "reps": 32} for op in ("read", "write", "copy")},
                    **{f"{op}_hbm": {"op": op, "nbytes": 2 * GiB, "reps": 1} for op in ("read", "write", "copy")}},
                tags=("bandwidth", "memory")),
    ProgramSpec("random_access", "int32 loads (4-byte stores) at random elements of 1 GiB: HBM without row hits",
                build_random, sizes={
                    "default": {"op": "read", "nbytes": 64 * KiB, "iters": 4, "blocks": 8},
                    "read": {"op": "read", "nbytes": GiB, "iters": 64},
                    "write": {"op": "write", "nbytes": GiB, "iters": 32}},
                tags=("bandwidth", "memory", "dram")),
    ProgramSpec("smem_stride", "shared loads (stores) at word stride s: gcd(s, 32)-way bank conflicts",
                build_smem, sizes={
                    "default": {"op": "ld", "stride": 2, "reps": 16, "blocks": 2},
                    **{f"ld_s{s}": {"op": "ld", "stride": s, "reps": 256} for s in range(1, 33)},
                    **{f"st_s{s}": {"op": "st", "stride": s, "reps": 256} for s in (1, 2, 4, 8, 16, 32)}},
                tags=("bank-conflicts", "shared-memory")),
    ProgramSpec("issue_throughput", "8 independent chains per thread, 4 steps each per iteration, of one op class",
                build_issue, sizes={
                    "default": {"op": "fp32_fma", "iters": 32, "blocks": 2, "threads": 64},
                    "fp32_fma": {"op": "fp32_fma", "iters": 1024}, "fp64_fma": {"op": "fp64_fma", "iters": 256},
                    "int32_add": {"op": "int32_add", "iters": 512}, "int32_mul": {"op": "int32_mul", "iters": 512},
                    "sfu_exp": {"op": "sfu_exp", "iters": 256}},
                tags=("throughput", "compute")),
    ProgramSpec("atomic_throughput", "atomicAdd on one address (same) or one per thread (distinct)",
                build_atomic, sizes={
                    "default": {"space": "global", "same": True, "iters": 4, "blocks": 2, "threads": 64},
                    "global_same": {"space": "global", "same": True, "iters": 16, "blocks": 132},
                    "global_distinct": {"space": "global", "same": False, "iters": 64},
                    "shared_same": {"space": "shared", "same": True, "iters": 16},
                    "shared_distinct": {"space": "shared", "same": False, "iters": 256}},
                tags=("atomics", "throughput")),
    ProgramSpec("launch_overhead", "one warp, one store: what a launch costs", build_launch,
                sizes={"default": {"threads": 32}}, tags=("launch",)),
    ProgramSpec("block_dispatch", "many one-warp blocks that store one word each", build_dispatch,
                sizes={"default": {"blocks": 64}, **{f"b{132 * k}": {"blocks": 132 * k} for k in (64, 512, 4096)}},
                tags=("launch", "block-scheduling")),
)}

# Outputs that are results, read back and stored by `validate measure`: name -> {arg index: label}.
RECORDED: dict[str, dict[int, str]] = {"pointer_chase": {2: "cycles"}}


def derive(rec: dict, sms: int) -> dict[str, float]:
    """The figures a microbenchmark record is about, from its params, metrics and outputs."""
    name, p, m = rec["microbenchmark"], rec["params"], rec.get("metrics", {})
    ns, cyc = m.get("gpu__time_duration.sum"), m.get("sm__cycles_elapsed.max")
    threads = math.prod(rec["grid"]) * math.prod(rec["block"])
    out: dict[str, float] = {}
    if name == "pointer_chase":
        for key, src in (("cycles_per_load", "outputs"), ("cycles_per_load_events_pass", "outputs_events")):
            if rec.get(src, {}).get("cycles") is not None:
                out[key] = rec[src]["cycles"] / p["hops"]
    elif name == "bandwidth":
        nbytes = p["nbytes"] * p["reps"]
        if ns:
            out["GB_per_s"] = nbytes / ns
        if rec.get("event_time_us"):
            out["GB_per_s_events"] = nbytes / (rec["event_time_us"] * 1e3)
    elif name == "random_access":
        accesses = threads * p["iters"]
        if ns:
            out["G_accesses_per_s"] = accesses / ns
            out["dram_GB_per_s"] = (m.get("dram__bytes_read.sum", 0.0) + m.get("dram__bytes_write.sum", 0.0)) / ns
    elif name == "smem_stride":
        warp_ops = threads // 32 * p["reps"] * SMEM_PER_ITER
        out["ways"] = math.gcd(p["stride"], 32)
        if cyc:
            out["sm_cycles_per_warp_access"] = cyc * sms / warp_ops
    elif name == "issue_throughput":
        ops = threads * CHAINS * STEPS * p["iters"]
        if cyc:
            out["thread_ops_per_cycle_per_sm"] = ops / (cyc * sms)
        if ns:
            out["G_thread_ops_per_s"] = ops / ns
        for k, v in m.items():                  # warp instructions per SM cycle, per pipe (ncu counts)
            if k.startswith("sm__inst_executed_pipe_") and v and cyc:
                out[k[len("sm__inst_executed_pipe_"):-4] + "_warp_inst_per_sm_cycle"] = v / (cyc * sms)
    elif name == "atomic_throughput":
        ops = threads * p["iters"]
        if ns:
            out["atomics_per_ns"] = ops / ns
        if cyc:
            out["atomics_per_cycle"] = ops / cyc
    elif name == "block_dispatch" and ns:
        out["ns_per_block"] = ns / p["blocks"]
        if cyc:
            out["sm_cycles_per_block_per_sm"] = cyc * sms / p["blocks"]
    elif name == "launch_overhead":
        for k in ("event_time_us", "event_single_us"):
            if rec.get(k) is not None:
                out[k] = rec[k]
        if ns:
            out["gpu_time_us"] = ns / 1e3
    return out
