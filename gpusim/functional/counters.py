"""Exact counters of the executed instruction stream, per PTX instruction, and their
totals under Nsight Compute's metric names.

Per basic block the executor adds how many warps ran it and how many of their
threads were active; every instruction of the block inherits those (an instruction
executes once per warp that reaches it, whatever its guard predicate). A block ending in
a conditional branch or exit also adds the active threads whose guard held (the lanes
that took it): the only guarded PTX instructions Numba emits are branches, so with the
block counts these give every PTX instruction's predicated-on threads, and the SASS
ones (`gpusim.frontend.sass.predication`). Memory instructions add requests, sectors
and wavefronts as the load/store unit counts them.

Names (Nsight Compute "Kernel Profiling Guide", metrics reference):
- smsp__inst_executed.sum: warp instructions executed (here: PTX, not SASS).
- smsp__thread_inst_executed.sum: active threads summed over those.
- smsp__thread_inst_executed_pred_on.sum: those whose guard predicate held (a conditional
  branch counts the threads that take it; a table without the field counts every active one).
- l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum: shared wavefronts.
- l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum: wavefronts - the conflict-free
  wavefronts (a request's one; a wide access's one a lane group, `shared_banks.shared_wavefronts`).
- l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st,atom,red}.sum, and _sectors_ likewise.
- l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum: shared atomics' wavefronts.
- l1tex__t_{requests,sectors}_pipe_lsu_mem_local_op_{ld,st}.sum (local memory is
  interleaved by 4-byte word across a warp's lanes, as the hardware lays it out).
- Tensor-core and asynchronous-copy instructions (`EXTRA_METRICS`; a field exists, and its
  metric is reported, only in kernels that execute such an instruction, so that other kernels'
  metric sets stay as they were): sm__inst_executed_pipe_tensor_op_{hmma,imma,dmma,gmma}.sum
  (warp instructions of mma.sync by input type, of wgmma.mma_async per warp),
  smsp__inst_executed_op_ldsm.sum, smsp__inst_executed_op_ldgsts.sum (cp.async),
  sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum (ldmatrix wavefronts; stmatrix counts
  as a shared store), l1tex__t_{requests,sectors}_pipe_lsu_mem_global_op_ldgsts_cache_access.sum
  (cp.async.ca), sm__sass_l1tex_t_{requests,sectors}_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum
  (cp.async.cg: LDGSTS.BYPASS) and sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum
  (the two sides of cp.async); names as ncu 2025.3 lists them on an H100
  (data/measurements/ncu_tensor_metric_names_h100.txt; tests/functional/test_nsight_metric_names.py);
  smsp__sass_inst_executed_op_tma_{ld,st}.sum (warp instructions of cp.async.bulk{.tensor} into
  / out of shared memory), l1tex__m_xbar2l1tex_read_{bytes,sectors}_mem_global_op_tma_ld.sum and
  l1tex__m_l1tex2xbar_write_{bytes,sectors}_mem_global_op_tma_st.sum (the 32-byte sectors of
  global memory they read / write, `gpusim.functional.bulk_ops`).
"""
from __future__ import annotations

import numpy as np

FIELDS = (
    "inst", "thread_inst",
    "shared_ld_requests", "shared_ld_wavefronts", "shared_st_requests", "shared_st_wavefronts",
    "global_ld_requests", "global_ld_sectors", "global_st_requests", "global_st_sectors",
    "global_atom_requests", "global_atom_sectors", "global_red_requests", "global_red_sectors",
    "local_ld_requests", "local_ld_sectors", "local_st_requests", "local_st_sectors",
    "const_ld_requests", "const_ld_sectors",
    "shared_atom_requests", "shared_atom_wavefronts",
)

METRICS = {
    "smsp__inst_executed.sum": ("inst",),
    "smsp__thread_inst_executed.sum": ("thread_inst",),
    "smsp__thread_inst_executed_pred_on.sum": ("thread_inst_pred_on",),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ("shared_ld_wavefronts",),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": ("shared_st_wavefronts",),
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum": ("shared_atom_wavefronts",),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("shared_ld_wavefronts", "-shared_ld_requests"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": ("shared_st_wavefronts", "-shared_st_requests"),
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("global_ld_requests",),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("global_ld_sectors",),
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": ("global_st_requests",),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": ("global_st_sectors",),
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum": ("global_atom_requests",),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum": ("global_atom_sectors",),
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": ("global_red_requests",),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum": ("global_red_sectors",),
    "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum": ("local_ld_requests",),
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": ("local_ld_sectors",),
    "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum": ("local_st_requests",),
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": ("local_st_sectors",),
}

#: counted only where used (module docstring): metric -> field
EXTRA_METRICS = {
    "sm__inst_executed_pipe_tensor_op_hmma.sum": "tensor_hmma_inst",
    "sm__inst_executed_pipe_tensor_op_imma.sum": "tensor_imma_inst",
    "sm__inst_executed_pipe_tensor_op_dmma.sum": "tensor_dmma_inst",
    "sm__inst_executed_pipe_tensor_op_gmma.sum": "tensor_gmma_inst",
    "smsp__inst_executed_op_ldsm.sum": "ldsm_inst",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum": "shared_ldsm_wavefronts",
    "smsp__inst_executed_op_ldgsts.sum": "ldgsts_inst",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum": "global_ldgsts_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum": "global_ldgsts_sectors",
    "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum": "global_ldgsts_bypass_requests",
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum": "global_ldgsts_bypass_sectors",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": "shared_ldgsts_wavefronts",
    "smsp__sass_inst_executed_op_tma_ld.sum": "tma_ld_inst",
    "smsp__sass_inst_executed_op_tma_st.sum": "tma_st_inst",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum": "tma_ld_bytes",
    "l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum": "tma_ld_sectors",
    "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum": "tma_st_bytes",
    "l1tex__m_l1tex2xbar_write_sectors_mem_global_op_tma_st.sum": "tma_st_sectors",
}


_ROW_FIELDS = frozenset(FIELDS[2:])


class Counters:
    """Per-instruction counter arrays (`n` instructions) and per-block visit counts."""

    def __init__(self, n_instructions: int, n_blocks: int):
        self.n = n_instructions
        # every count in one allocation (`snapshot` reads it at once): per block, then a row a field
        self._all = np.zeros(4 * n_blocks + (len(FIELDS) - 2) * n_instructions, np.int64)
        per_block = self._all[:4 * n_blocks].reshape(4, n_blocks)
        self.block_warps = per_block[0]
        self.block_threads = per_block[1]
        self.loop_back = per_block[2]           # warps that took a back edge to this loop header
        self.taken_threads = per_block[3]       # active threads whose branch/exit guard held
        self._rows = self._all[4 * n_blocks:].reshape(len(FIELDS) - 2, n_instructions)
        self.per_instr = dict(zip(FIELDS[2:], self._rows))
        self._present: dict = {}                 # `present_rows`: fields -> (rows then, their arrays or None)

    @property
    def rows(self) -> np.ndarray:
        """The FIELDS' per-instruction counts (FIELDS[2:], a row each): the arrays `per_instr`
        holds, for compiled code that adds to them (`fastpath.lsu_fused`)."""
        return self._rows

    def add_block(self, b: int, warps: int, threads: int) -> None:
        self.block_warps[b] += warps
        self.block_threads[b] += threads

    def add_loop_back(self, b: int, warps: int) -> None:
        self.loop_back[b] += warps

    def add_taken(self, b: int, threads: int) -> None:
        self.taken_threads[b] += threads

    def add_shared(self, i: int, op: str, requests: int, wavefronts: int) -> None:
        """`op` is 'ld', 'st' or 'atom' ('red' counts as 'atom')."""
        k = "shared_" + ("atom" if op == "red" else op)
        self.per_instr[k + "_requests"][i] += requests
        self.per_instr[k + "_wavefronts"][i] += wavefronts

    def add_memory(self, i: int, space: str, op: str, requests: int, sectors: int) -> None:
        """`op` is 'ld', 'st', 'atom' or 'red'."""
        key = f"{space}_{op}"
        if key + "_requests" in self.per_instr:
            self.per_instr[key + "_requests"][i] += requests
            self.per_instr[key + "_sectors"][i] += sectors

    def add_extra(self, i: int, field: str, n: int) -> None:
        """Add `n` to an `EXTRA_METRICS` field of instruction `i` (created on first use)."""
        arr = self.per_instr.get(field)
        if arr is None:
            arr = self.per_instr[field] = np.zeros(self.n, np.int64)
        arr[i] += n

    def present_rows(self, fields: tuple) -> tuple | None:
        """The arrays of `EXTRA_METRICS` `fields` where every one exists (compiled code adds to
        them), else None (the first `add_extras` makes them); looked up again only once a row has
        been made (rows are only ever added)."""
        n = len(self.per_instr)
        hit = self._present.get(fields)
        if hit is not None and hit[0] == n:
            return hit[1]
        rows = tuple(self.per_instr.get(f) for f in fields)
        out = rows if all(r is not None for r in rows) else None
        self._present[fields] = (n, out)
        return out

    def add_extras(self, i: int, fields: tuple, ns: tuple) -> None:
        """`add_extra` of each (field, n) of `fields` and `ns`."""
        rows = self.per_instr
        for field, n in zip(fields, ns):
            arr = rows.get(field)
            if arr is None:
                arr = rows[field] = np.zeros(self.n, np.int64)
            arr[i] += n

    def merge(self, other: "Counters") -> None:
        self.block_warps += other.block_warps
        self.block_threads += other.block_threads
        self.loop_back += other.loop_back
        self.taken_threads += other.taken_threads
        for k, v in other.per_instr.items():
            if k in self.per_instr:
                self.per_instr[k] += v
            else:
                self.per_instr[k] = v.copy()

    def snapshot(self) -> tuple[tuple, bytes]:
        """Every count, as (the extra fields' names, all the counts' bytes): equal snapshots, equal
        counters (`PreparedLaunch.finish` reuses the metrics of a launch that counted alike)."""
        extra = tuple(k for k in self.per_instr if k not in _ROW_FIELDS)
        if not extra:
            return extra, self._all.tobytes()
        return extra, b"".join([self._all.tobytes()] + [self.per_instr[k].tobytes() for k in extra])

    def totals(self) -> dict[str, int]:
        """Each FIELD's sum over the instructions (the block-visit ones aside: `instruction_table`
        spreads those), with one numpy call: what `metric_values` sums of an unscaled table."""
        return dict(zip(FIELDS[2:], self._rows.sum(1).tolist()))

    def instruction_table(self, block_of: np.ndarray, branch_of: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every FIELD per instruction (block visit counts spread over their instructions);
        with `branch_of` (per block: the index of its conditional branch or exit, -1 for
        none) also `thread_inst_pred_on`, the active threads whose guard held."""
        out = {"inst": self.block_warps[block_of], "thread_inst": self.block_threads[block_of]}
        if branch_of is not None:
            on = out["thread_inst"].copy()
            has = np.flatnonzero(branch_of >= 0)
            on[branch_of[has]] = self.taken_threads[has]
            out["thread_inst_pred_on"] = on
        out.update(self.per_instr)
        return out


def metric_values(table: dict[str, np.ndarray], select: np.ndarray | slice = slice(None),
                  totals: dict[str, int] | None = None) -> dict[str, int]:
    """Nsight-named metrics summed over the selected instructions (plus any per-instruction
    timing arrays stored in the table under their own Nsight names, e.g. warp stalls). Each
    field is summed once (several metrics share one), as a float rounded to an integer;
    `totals` (`Counters.totals`, of the table's unscaled counters over every instruction) gives
    the sums of the fields it has."""
    out = {}
    for name, arr in table.items():
        if name.startswith("smsp__pcsamp"):
            out[name] = float(np.asarray(arr)[select].sum())
    sums: dict[str, int] = dict(totals) if totals else {}

    def total(field: str) -> int:
        v = sums.get(field)
        if v is None:
            v = sums[field] = round(float(table[field][select].sum()))
        return v

    for name, parts in METRICS.items():
        v = 0
        for p in parts:
            if p.startswith("-"):
                v -= total(p[1:])
            else:
                v += total(p if p in table or p != "thread_inst_pred_on" else "thread_inst")
        out[name] = v
    for name, field in EXTRA_METRICS.items():
        if field in table:
            out[name] = int(np.asarray(table[field])[select].sum())
    return out
