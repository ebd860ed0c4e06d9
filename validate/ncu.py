"""Nsight Compute (`ncu`): the metric list `validate measure` collects, the command line
that profiles a worker process, and the parser of its CSV output.

ncu profiles every kernel the worker launches (the worker launches each case exactly
once); rows come back in launch order with an "ID" per kernel, so the i-th profiled
kernel is the i-th launched case (`match`, which also checks that the kernel's name holds
the Python function's name).

Options used, and why:
- `--clock-control none`: clocks as found (ncu otherwise locks them to base); the SM
  clock actually run is `sm__cycles_elapsed.max / gpu__time_duration.sum`.
- `--cache-control all` (ncu's default, written out): L1 and L2 are flushed before each
  replay pass, so every kernel starts cold and passes agree.
- `--replay-mode kernel`: each kernel is replayed once per counter pass, memory saved and
  restored between passes, so outputs are as after one launch.
- `--csv --print-units base`: values in base units (ns, bytes, cycles), one row per
  (kernel, metric); numbers may carry thousands separators, stripped here.

Sources: Nsight Compute CLI guide and Kernel Profiling Guide (2025.3): "Metrics
Reference", "--cache-control", "--clock-control", "regex:" metric filters.
"""
from __future__ import annotations

import glob
import csv
import io
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

# What the simulator predicts (gpusim.functional.counters.METRICS and the timing model)
# and what calibration needs. Kept as literal names so this module imports nothing of gpusim.
METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.max",
    "sm__cycles_elapsed.avg",
    "gpc__cycles_elapsed.max",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_atom.sum",
    "lts__t_sectors_op_red.sum",
    "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__waves_per_multiprocessor",
)
# Executed warp instructions per pipe: optional (dropped as a group if this ncu refuses any).
EXTRA = tuple(f"sm__inst_executed_pipe_{p}.sum" for p in
              ("alu", "fma", "fmaheavy", "fp64", "xu", "lsu", "uniform", "adu", "cbu"))
# Issue 24's mechanism microbenchmarks (`--suite mechanisms`) also ask for these: what the L1's
# tag stage (set accesses / conflicts, output wavefronts) and data stage (wavefronts) did, the
# L1 <-> crossbar bytes, L2 requests beside sectors (atomics and reductions too), far-partition
# lookups, DRAM fills, the L2 atomic unit's busy cycles, pipe busy cycles and issue slots, and
# the shared atomics executed (CAS retries included). Names this ncu refuses are dropped at the
# preflight, one a try (`validate.passes.run_ncu`).
MECHANISM_METRICS = (
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_set_conflicts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_lg.sum",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_set_accesses_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "l1tex__m_l1tex2xbar_write_bytes.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum",
    "lts__t_requests_srcunit_tex_op_read.sum",
    "lts__t_requests_srcunit_tex_op_write.sum",
    "lts__t_requests_op_red.sum",
    "lts__t_requests_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sectors_op_read_lookup_miss.sum",
    "lts__t_sectors_op_write_lookup_miss.sum",
    "lts__d_atomic_input_cycles_active.sum",
    "lts__d_sectors_fill_device.sum",
    "sm__pipe_fp64_cycles_active.sum",
    "sm__pipe_alu_cycles_active.sum",
    "sm__pipe_fmaheavy_cycles_active.sum",
    "smsp__issue_active.sum",
    "sm__sass_inst_executed_op_shared_atom.sum",
)
# The tensor set (`--suite tensor`, validate/tensor_set) also asks for the tensor pipes' instructions and
# busy cycles, ldmatrix / cp.async (LDGSTS) / TMA traffic; names this ncu refuses are dropped at the preflight.
TENSOR_METRICS = (
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__inst_executed_pipe_tensor.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.sum",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum",
    "sm__pipe_tensor_cycles_active.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "smsp__inst_executed_op_ldgsts.sum",
    "smsp__inst_executed_pipe_tensor_op_gmma.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
    "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum",
    "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "smsp__inst_executed_pipe_uniform.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "smsp__issue_active.sum",
)
# The list of GPU_NOTES.md, known to work on H200 with ncu 2025.3: the fallback if the full list fails.
CORE = tuple(m for m in METRICS if not m.startswith(("launch__", "sm__maximum", "gpc__", "sm__cycles_elapsed.avg"))
             and "lookup_hit" not in m and "hit_rate" not in m and not m.startswith(("lts__t_sectors_op_atom",
                                                                                    "lts__t_sectors_op_red")))
# Warp-stall reasons by PC sampling (one extra pass), the names gpusim's timing model reports.
STALL_REGEX = "regex:^smsp__pcsamp_warps_issue_stalled_[a-z_]+$"
SAMPLE_COUNT = "smsp__pcsamp_sample_count"


def find_ncu() -> str:
    """Path of the `ncu` executable (PATH, then the usual install folders)."""
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    raise FileNotFoundError("validate measure: no `ncu` on PATH, in /usr/local/cuda/bin or "
                            "/opt/nvidia/nsight-compute/*; install Nsight Compute or pass --ncu PATH")


def command(ncu: str, metrics, log_file: str, app: list[str]) -> list[str]:
    """The ncu command line that profiles `app` (argv) and writes its CSV to `log_file`."""
    return [ncu, "--csv", "--print-units", "base", "--clock-control", "none",
            "--cache-control", "all", "--replay-mode", "kernel", "--target-processes", "all",
            "--metrics", ",".join(metrics), "--log-file", log_file, *app]


def profile_worker(module: str, metrics, log_file: Path, timeout_s: float = 400) -> tuple[list[str], object, list[dict]]:
    """Run `python -m <module> --worker` under ncu (`command`): the command, its completed process
    (output in `.stdout`) and the profiled kernels in launch order (`parse_csv`; none if no log)."""
    cmd = command(find_ncu(), metrics, str(log_file), [sys.executable, "-m", module, "--worker"])
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
    kernels = parse_csv(log_file.read_text()) if log_file.exists() else []
    return cmd, done, kernels


def profile_worker_known(module: str, metrics, log_file: Path) -> tuple[list[str], object, list[dict], list[str]]:
    """`profile_worker`, with a metric this ncu refuses dropped and the run tried again (at most
    3 runs): the command, its completed process, the profiled kernels and the metrics kept."""
    metrics = list(metrics)
    for _ in range(3):
        cmd, rc, kernels = profile_worker(module, metrics, log_file)
        refused = set(unknown_metrics(rc.stdout + (log_file.read_text() if log_file.exists() else "")))
        if kernels or not refused & set(metrics):
            return cmd, rc, kernels, metrics
        metrics = [m for m in metrics if m not in refused]
    return cmd, rc, kernels, metrics


def repeated_cases(kernels: list[dict], cases: int, repeats: int) -> tuple[list[list[dict]], list[str]]:
    """A probe's profiled kernels split per case (each case launched `repeats` times in a row),
    with the problem to report when ncu profiled another number of kernels than was launched."""
    problems = [] if len(kernels) == cases * repeats else [f"ncu profiled {len(kernels)} kernels, "
                                                           f"the worker launched {cases * repeats}"]
    return [kernels[i * repeats:(i + 1) * repeats] for i in range(cases)], problems


def median_cycles(got: list[dict]) -> tuple[float | None, list[float]]:
    """The median and the sorted `sm__cycles_elapsed.max` of one case's profiled runs."""
    cyc = sorted(k["metrics"].get("sm__cycles_elapsed.max") or 0 for k in got)
    return (cyc[len(cyc) // 2] if cyc else None), cyc


def gpu_identity() -> str:
    """nvidia-smi's name, driver version and maximum SM clock of the GPU, for a probe's provenance."""
    return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A", "nan"):
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_csv(text: str) -> list[dict]:
    """Kernels of an ncu `--csv` log (details page: one row per kernel and metric), in
    profiling order: [{"id", "kernel_name", "grid", "block", "metrics": {name: value}}].
    Lines that are not CSV (ncu's ==PROF== messages, the app's own output) are skipped;
    non-numeric values (n/a) are left out of "metrics"."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    header_at = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if header_at is None:
        raise ValueError("ncu CSV: no header line starting with \"ID\"")
    rows = csv.DictReader(io.StringIO("\n".join(lines[header_at:])))
    kernels: dict[str, dict] = {}
    for row in rows:
        if row.get("ID") == "ID":                       # a repeated header
            continue
        k = kernels.setdefault(row["ID"], {"id": int(row["ID"]), "kernel_name": row.get("Kernel Name", ""),
                                           "grid": row.get("Grid Size", ""), "block": row.get("Block Size", ""),
                                           "metrics": {}, "unavailable": []})
        name, value = row.get("Metric Name"), _number(row.get("Metric Value", ""))
        if not name:
            continue
        if value is None:
            k["unavailable"].append(name)
        else:
            k["metrics"][name] = value
    return sorted(kernels.values(), key=lambda k: k["id"])


def match(launched: list[dict], profiled: list[dict]) -> list[tuple[dict, dict | None]]:
    """Pair the worker's launches (each {"name", "kernel": Python function name,
    "launched": bool}, in launch order) with ncu's kernels, in order: a record that was
    not launched gets None; a profiled kernel whose name lacks the record's function
    name means the two lists are out of step (ValueError)."""
    pairs, j = [], 0
    for rec in launched:
        prof = None
        if rec.get("launched") and j < len(profiled):
            prof = profiled[j]
            if rec["kernel"] not in prof["kernel_name"]:
                raise ValueError(f"ncu kernel {j} is {prof['kernel_name'][:80]!r}, expected {rec['kernel']!r} "
                                 f"({rec['name']}): launches and profiled kernels are out of step")
            j += 1
        pairs.append((rec, prof))
    if j != len(profiled):
        raise ValueError(f"ncu profiled {len(profiled)} kernels; {j} matched the worker's launches")
    return pairs


def listed_metrics(query_output: str) -> set[str]:
    """Base metric names in the output of `ncu --query-metrics` (one metric a line, its name
    the first word; headers and descriptions are skipped), e.g. {"dram__bytes", ...}."""
    names = set()
    for line in query_output.splitlines():
        word = line.strip().strip('"').split('"')[0].split(",")[0].split()
        if word and re.fullmatch(r"[a-z0-9]+__[a-z0-9_]+", word[0]):
            names.add(word[0])
    return names


def not_listed(metrics, listed: set[str]) -> list[str]:
    """The metrics whose base name (before the rollup: `.sum`, `.pct`, ...) `listed` lacks;
    none unless `listed` holds the base name of every metric of CORE (which ncu 2025.3 is
    known to collect on H100/H200), so a listing in another form, or misread, drops nothing."""
    base = lambda m: m.split(".", 1)[0]
    if not all(base(m) in listed for m in CORE):
        return []
    return [m for m in metrics if base(m) not in listed]


def unknown_metrics(log_text: str) -> list[str]:
    """Metric names ncu refused ("Failed to find metric X"), to drop and retry."""
    return re.findall(r"[Ff]ailed to find metric (?:regex:)?['\"]?([A-Za-z0-9_.:\-\[\]^$+]+)", log_text)
