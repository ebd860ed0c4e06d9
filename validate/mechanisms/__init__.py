"""Mechanism microbenchmarks of issue 24: Numba kernels that each sweep one parameter of a
hardware mechanism the model may lack, measured on the H100 and H200 with Nsight counters
that tell the mechanisms apart (`python -m validate measure --suite mechanisms`, the extra
counters in `validate.ncu.MECHANISM_METRICS`), in the `ProgramSpec`/`Case` form of
`programs/` so that gpusim runs the same kernels (`MECHANISMS[name].case(size)`).

| name           | mechanism                                            | module            |
|----------------|------------------------------------------------------|-------------------|
| atomic_bins    | L2 atomics: hot-set size (bins), spacing, dtype, ATOM | atomics.py        |
| atomic_lanes   | L2 atomics: lanes per address, addresses per sector   | atomics.py        |
| atomic_hot     | one hot address: active lanes per request, f32, ATOM  | atomics.py        |
| atomic_uniform | ptxas's warp aggregation (int) against none (float)   | atomics.py        |
| shared_bins    | shared atomics: POPC.INC, ADD, float CAS loop         | shared_atomics.py |
| shared_lanes   | shared atomics: same-address lanes, bank conflicts    | shared_atomics.py |
| stride_read    | lanes 4..1024 B apart: L1 hits, L2 hits, DRAM         | strides.py        |
| stride_copy    | strided copies (both sides, one side)                 | strides.py        |
| stride_write   | strided stores: partial sectors                       | strides.py        |
| stencil        | 2-D neighbour reuse in the L1, block shapes           | stencils.py       |
| copies         | 1-D/2-D copies, read/write halves, transposes         | copies.py         |
| i64_chains     | int64 add / multiply / IMAD.WIDE issue and latency    | arith64.py        |
| f64_fma        | DFMA throughput and latency                           | arith64.py        |
| horner         | Horner loops: DFMA amid 64-bit index arithmetic       | arith64.py        |
| ragged_rows    | warp per row, equal vs power-law rows                 | imbalance.py      |
| f64_ilp        | DFMA/DADD/DMUL: chains per thread against warps/SMSP  | latency64.py      |
| i64_wide_lat   | IMAD.WIDE.U32 dependent latency                       | latency64.py      |
| blelloch_scan  | work-efficient scan in a block, padded or not         | latency64.py      |

Each spec has a 'default' size the simulator runs in a few seconds (not measured) and
its measured sizes. `derive(record)` turns a measured record (or a prediction in the same
form) into the figures its mechanism is about. docs/mechanisms_24.md says what each
size decides; benchmarks/mechanisms_24.py predicts them and compares. Nothing of gpusim
is imported: `validate measure` imports this package on the GPU machine.
"""
from __future__ import annotations

import math

from validate.mechanisms import arith64, atomics, copies, imbalance, latency64, shared_atomics, stencils, strides

MECHANISMS = {s.name: s for mod in (atomics, shared_atomics, strides, stencils, copies, arith64, imbalance, latency64)
              for s in mod.SPECS}


def operations(name: str, p: dict, threads: int) -> float:
    """The operations a record of mechanism `name` with params `p` performs: lane atomics,
    loaded or stored elements, outputs, chain steps (per thread, summed over threads)."""
    it = p.get("iters", 1)
    if name in ("atomic_bins", "atomic_lanes", "atomic_uniform", "shared_bins", "shared_lanes"):
        return threads * it
    if name == "atomic_hot":
        return threads // 32 * p["nactive"] * it
    if name in ("stride_read", "stride_copy", "stride_write"):
        return threads * 4 * it
    if name in ("stencil", "copies"):
        return p["n"] * p["n"]
    if name == "i64_chains":
        return threads * it * arith64.STEPS * (arith64.CHAINS if p["op"] != "add_lat" else 1)
    if name == "f64_fma":
        return threads * it * arith64.STEPS * (arith64.CHAINS if p["op"] == "fma" else 1)
    if name == "horner":
        return threads * p["degree"]
    if name == "f64_ilp":
        return threads * it * latency64.STEPS * p["chains"]
    if name == "i64_wide_lat":
        return threads * it * latency64.STEPS
    if name == "blelloch_scan":
        return p["n"]
    return float("nan")


def derive(rec: dict, sms: int = 132) -> dict[str, float]:
    """Figures of one record ({"mechanism", "params", "grid", "block", "metrics"}): ops per
    ns and per SM cycle, and per mechanism what its counters mean per operation."""
    name, p, m = rec["mechanism"], rec["params"], rec.get("metrics", {})
    threads = math.prod(rec["grid"]) * math.prod(rec["block"])
    ops = operations(name, p, threads)
    ns, cyc = m.get("gpu__time_duration.sum"), m.get("sm__cycles_elapsed.max")
    out: dict[str, float] = {"ops": ops}
    if ns:
        out["ops_per_ns"] = ops / ns
    if cyc:
        out["ops_per_cycle"] = ops / cyc
    per = lambda key, metric: out.__setitem__(key, m[metric] / ops) if m.get(metric) is not None and ops else None
    if name.startswith("atomic"):
        per("lts_red_sectors_per_op", "lts__t_sectors_op_red.sum")
        per("lts_atom_sectors_per_op", "lts__t_sectors_op_atom.sum")
        per("lts_red_requests_per_op", "lts__t_requests_op_red.sum")
        per("l2_atomic_active_cycles_per_op", "lts__d_atomic_input_cycles_active.sum")
    elif name.startswith("shared"):
        per("wavefronts_per_op", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum")
        per("shared_atom_inst_per_op", "sm__sass_inst_executed_op_shared_atom.sum")
        if cyc and ops:
            out["sm_cycles_per_warp_op"] = cyc * sms / (ops / 32)
    elif name.startswith("stride") or name in ("stencil", "copies"):
        req = m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
        if req and cyc:
            out["sm_cycles_per_load_request"] = cyc * sms / req
        per("dram_read_bytes_per_op", "dram__bytes_read.sum")
        per("dram_write_bytes_per_op", "dram__bytes_write.sum")
        per("lts_read_sectors_per_op", "lts__t_sectors_op_read.sum")
        per("lts_write_sectors_per_op", "lts__t_sectors_op_write.sum")
        for k in ("l1tex__t_sector_hit_rate.pct", "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct"):
            if k in m:
                out["l1_hit_pct"] = m[k]
                break
    elif name in ("i64_chains", "f64_fma", "horner", "f64_ilp", "i64_wide_lat"):
        if cyc and ops:
            out["thread_ops_per_sm_cycle"] = ops / (cyc * sms)
        for k, v in m.items():
            if k.startswith("sm__inst_executed_pipe_") and v and ops:
                out[k[len("sm__inst_executed_pipe_"):-4] + "_warp_inst_per_op"] = v * 32 / ops
    return out
