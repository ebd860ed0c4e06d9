"""`python -m validate compare --data FILE [--preset NAME] [--json] [--plot PNG]`: the
simulator's predictions against committed measurements, metric by metric.

Every kernel of the data file (a program at one size, a microbenchmark, or a held-out kernel
of `validate.heldout` or `validate.heldout2`) is rebuilt
from its recorded name, size and seed and run through `gpusim.launch(timing=True)` on
the chosen preset (default: the measured GPU's preset, which is its calibrated one where
`python -m validate calibrate` wrote one, else the cited datasheet). Launches of more blocks than SMs use sampled timing, with
functional execution of the sampled blocks only (outputs are not needed here: the
measurement checked them on the GPU); the tensor set's launches are predicted with
`outputs=False`, so their tensor-core numerics that no path or address depends on are left
out (`gpusim/functional/relevance.py`; the same prediction, sooner).

Per kernel and metric: predicted, measured, relative error. Summary (errors in percent):
- duration: MAPE of `gpu__time_duration.sum`, and Spearman rank correlation;
- bank conflicts (ld, st) where the measured counter exceeds 1,000: max and mean relative
  error where the lanes' addresses conflict (the model's count is exact on addresses). Where
  the addresses prove the accesses conflict-free (the model counts 0, as Nsight does at the
  small sizes) but Nsight still reports conflicts (a few % of wavefronts on large launches,
  GPU_NOTES.md), the count is reported separately as Nsight's noise, with its largest share of
  the wavefronts;
- thread/instruction ratio (`smsp__thread_inst_executed` / `smsp__inst_executed`): max and mean
  error, over all kernels and over the programs (the microbenchmarks' tiny kernels are where
  ptxas's SASS differs most from the PTX the simulator counts);
- global sectors per request (ld and st): the share of kernels where they match exactly;
- L2 sectors (read + write), DRAM read and write bytes: MAPE and the share within 5%, over
  kernels that move > 1 MiB. Each launch starts with the dirty L2 data that ncu's kernel
  replay leaves before every profiled kernel (`data/measurements/ncu_replay.json`, about 2.4 MB
  on H100 and H200, measured by `benchmarks/ncu_dirty_probe.py`): a kernel whose traffic
  exceeds the L2 writes it back, as Nsight counts; and over each predicted duration the
  writes that reach the L2 and DRAM from outside the kernel while it runs (about 18 MB/s of
  DRAM writes and 0.9-1.0 M L2 write sectors per second, measured beside one spinning
  thread: `ncu_dirty_probe.py --background`);
- SASS warp instructions (`smsp__inst_executed.sum`): MAPE and the share within 5%;
- sampling: the predictions' own sampling-error estimates (`timing__sampling_error_pct`);
- per kind (program, microbenchmark, heldout, heldout2): duration MAPE; the eight worst kernels;
- for heldout2 kernels, the suite's textbook orderings (`validate.orderings.summary`): how many
  the measurement shows, and how many of those the predictions show.
`--jobs N` predicts in N processes (default: the CPU count), the costliest kernels first.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpusim.errors import GpusimError
from validate import journal
from validate.datadir import DATA_DIR, measurement_file

ROOT = Path(__file__).resolve().parents[1]

DURATION = "gpu__time_duration.sum"
COUNTERS = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum", "dram__bytes_read.sum",
            "dram__bytes_write.sum", "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__cycles_elapsed.max")
MIB = 1 << 20
# the tensor set's own counters (validate.ncu.TENSOR_METRICS that the model predicts)
TENSOR_COUNTERS = ("smsp__inst_executed_op_ldsm.sum", "smsp__inst_executed_op_ldgsts.sum",
                   "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum")
# written per kernel into `--out` next to the duration
COMPARED_COUNTERS = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "lts__t_sectors_op_read.sum",
                     "lts__t_sectors_op_write.sum", "dram__bytes_read.sum", "dram__bytes_write.sum")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=measurement_file, required=True, help="a measurement file, e.g. data/measurements/h200.json")
    p.add_argument("--preset", help="GPU preset or .toml spec to predict with (default: the measured GPU's "
                   "preset, calibrated where a calibration exists)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the summary figures")
    p.add_argument("--plot", type=Path, help="write the predicted-vs-measured duration scatter plot here (PNG)")
    p.add_argument("--only", help="regex on kernel names")
    p.add_argument("--table", action="store_true", help="print the per-kernel table (default unless --json)")
    p.add_argument("--budget", type=float, default=None, help="skip kernels whose simulation would exceed about "
                   "this many warp instructions (estimated from the measured counts and the sampling); default: none")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: the CPU count)")
    p.add_argument("--out", type=Path, help="also write the summary and every kernel's figures here (JSON)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the predictions an interrupted run of the same model, preset and data finished "
                        "(its journal: <--out>.partial.jsonl, or $GPUSIM_CACHE_DIR/compare/; validate.journal)")
    p.add_argument("--clock", choices=CLOCKS, default="preset",
                   help="SM clock the predicted cycles become nanoseconds at: the preset's (default); 'file': the "
                        "measurement's median observed clock (provenance.sm_clock_mhz_observed); 'kernel': each "
                        "kernel's own, sm__cycles_elapsed.max / gpu__time_duration.sum, where the clocks were not "
                        "locked (the GPU's boost chose them: 1603-1992 MHz on the H100 tensor set)")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="give up a kernel's prediction after this many seconds (listed under no_prediction); "
                        "default: no limit")


@dataclass
class Row:
    name: str
    kind: str
    measured: dict
    predicted: dict
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    error: str = ""                  # why the model gave no prediction (predicted is then empty)


def default_preset(data: dict) -> str:
    """The measured GPU's short name: its calibrated preset where one exists (`gpusim.specs.get`)."""
    from gpusim.specs.presets import GPUS
    short = data["provenance"].get("gpu_short_name") or "h100"
    return short if short in GPUS else "h100"


def estimated_cost(k: dict, sample_sms: int = 8, max_waves: int = 4, blocks_per_sm: int = 8,
                   sm_count: int = 132) -> float:
    """Warp instructions the timing model would simulate for kernel record `k`: its measured
    instruction count times the share of blocks that full or sampled simulation runs."""
    nblocks = math.prod(k["grid"]) if k.get("grid") else 1
    inst = k["metrics"].get("smsp__inst_executed.sum", 0.0)
    if nblocks <= sm_count:                           # TimingOptions' auto rule: full up to one block per SM
        return inst
    simulated = min(math.ceil(nblocks * sample_sms / sm_count), max_waves * sample_sms * blocks_per_sm)
    return inst * simulated / nblocks


CLOCKS = ("preset", "file", "kernel")


def observed_clock_mhz(k: dict, data: dict, clock: str) -> float | None:
    """The SM clock to predict kernel record `k` at (`--clock`), or None for the preset's. The
    model times cycles; with clocks not locked (`--clock-control none`) the GPU's boost picks
    the clock each kernel runs at (lower under tensor-core load: 1603-1830 MHz against 1941-1992
    for the CUDA-core SGEMM on the H100 tensor set), which Nsight records as the kernel's
    sm__cycles_elapsed.max over its gpu__time_duration.sum."""
    if clock == "preset":
        return None
    if "not locked" not in data.get("provenance", {}).get("sm_clock_policy", ""):
        return None
    if clock == "file":
        return data["provenance"].get("sm_clock_mhz_observed")
    m = k.get("metrics", {})
    cycles, ns = m.get("sm__cycles_elapsed.max"), m.get(DURATION)
    return cycles / ns * 1e3 if cycles and ns else None


def usable(k: dict) -> bool:
    return k.get("check") == "passed" and bool(k.get("metrics")) and DURATION in k["metrics"]


def build_case(k: dict):
    if "program" in k:
        import programs
        spec = programs.get(k["program"])
    elif "heldout" in k:
        from validate.heldout import HELDOUT
        spec = HELDOUT[k["heldout"]]
    elif "heldout2" in k:
        from validate.heldout2 import HELDOUT2
        spec = HELDOUT2[k["heldout2"]]
    elif "mechanism" in k:
        from validate.mechanisms import MECHANISMS
        spec = MECHANISMS[k["mechanism"]]
    elif "tensor" in k:
        from validate.tensor_set.suite import spec as tensor_spec
        spec = tensor_spec(k["tensor"])
    else:
        from validate.microbench import MICROBENCHMARKS
        spec = MICROBENCHMARKS[k["microbenchmark"]]
    return spec.case(k["size"], seed=k.get("seed", 0))


REPLAY_FILE = DATA_DIR / "ncu_replay.json"


ENVIRONMENT = ("l2_dirty_bytes_at_launch", "background_dram_write_bytes_per_s", "background_l2_write_sectors_per_s")


def measurement_environment(data: dict) -> dict:
    """What Nsight's measurement adds to each kernel of a measurement file, as TimingOptions
    fields (`data/measurements/ncu_replay.json`, measured by `benchmarks/ncu_dirty_probe.py` on
    that GPU): the dirty L2 data its kernel replay leaves before the kernel, and the writes
    from outside the kernel while it runs; empty for a GPU without a probe."""
    short = data.get("provenance", {}).get("gpu_short_name")
    if not REPLAY_FILE.is_file():
        raise GpusimError(f"no {REPLAY_FILE} (what Nsight's replay adds to each measured kernel): copy it from the "
                          "repository's data/measurements/ into GPUSIM_DATA_DIR")
    gpu = json.loads(REPLAY_FILE.read_text())["gpus"].get(short, {})
    return {k: (int(gpu[k]) if k == "l2_dirty_bytes_at_launch" else float(gpu[k])) for k in ENVIRONMENT if k in gpu}


def predict(k: dict, gpu, environment: dict | None = None, time_limit_s: float | None = None,
            clock_mhz: float | None = None) -> Row:
    """One kernel's prediction; `environment`: what the measurement added to the kernel
    (`measurement_environment`). A launch the model cannot predict (any error, or past
    `time_limit_s`) comes back as a Row with no prediction and the error's line, so that one
    kernel never costs the others theirs. `clock_mhz`: the SM clock to predict at instead of
    the preset's (`observed_clock_mhz`)."""
    import time

    import gpusim
    from gpusim.timing.engine import TimingOptions
    kind = next((key for key in ("program", "heldout", "heldout2", "mechanism", "tensor") if key in k),
                "microbenchmark")
    t = time.perf_counter()
    try:
        if clock_mhz:
            gpu = dataclasses.replace(gpu, clocks=dataclasses.replace(gpu.clocks, sm_clock_mhz=round(clock_mhz, 1)))
        case = build_case(k)
        opts = TimingOptions(mode="auto", functional="sampled", **(environment or {}))
        r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu, shared_bytes=case.shared_bytes,
                          timing=True, timing_options=opts, time_limit_s=time_limit_s,
                          outputs=kind != "tensor", **case.options)
    except Exception as e:           # recorded, not raised: the summary counts and names every failure
        line = str(e).splitlines()[0] if str(e) else ""
        return Row(k["name"], kind, k["metrics"], {}, time.perf_counter() - t, error=f"{type(e).__name__}: {line}")
    pred = {m: float(v) for m, v in r.metrics.items()
            if (m in COUNTERS or m in TENSOR_COUNTERS or m == DURATION
                or m.startswith(("sm__inst_executed_pipe_", "timing__sampl", "timing__loop")))
            and isinstance(v, (int, float))}
    pred["timing__mode"] = r.metrics.get("timing__mode")
    pred["timing__bound"] = r.metrics.get("timing__bound")
    pred["timing__sampling_note"] = r.metrics.get("timing__sampling_note", "")
    return Row(k["name"], kind, k["metrics"], pred,
               time.perf_counter() - t)


def rel_err(pred: float, meas: float) -> float:
    return (pred - meas) / meas if meas else (0.0 if pred == 0 else math.inf)


def spearman(a: list[float], b: list[float]) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    if len(a) < 2 or ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def summarize(rows: list[Row]) -> dict:
    def both(r, m):
        return m in r.measured and m in r.predicted

    dur = [r for r in rows if both(r, DURATION)]
    failed = {r.name: r.error for r in rows if r.error}
    ape = [abs(rel_err(r.predicted[DURATION], r.measured[DURATION])) for r in dur]
    out = {"kernels": len(rows), "duration_kernels": len(dur), "no_prediction": failed,
           "duration_mape_pct": 100 * float(np.mean(ape)) if ape else None,
           "duration_median_ape_pct": 100 * float(np.median(ape)) if ape else None,
           "duration_max_ape_pct": 100 * float(max(ape)) if ape else None,
           "duration_within_35pct_share": 100 * float(np.mean([e <= 0.35 for e in ape])) if ape else None,
           "spearman": spearman([r.predicted[DURATION] for r in dur], [r.measured[DURATION] for r in dur])}
    worst = sorted(dur, key=lambda r: -abs(rel_err(r.predicted[DURATION], r.measured[DURATION])))[:8]
    out["duration_worst"] = {r.name: round(100 * rel_err(r.predicted[DURATION], r.measured[DURATION]), 1)
                             for r in worst}
    for kind in sorted({r.kind for r in dur}):
        sub = [abs(rel_err(r.predicted[DURATION], r.measured[DURATION])) for r in dur if r.kind == kind]
        out[f"{kind}_duration_mape_pct"] = 100 * float(np.mean(sub))
    # launches whose sample cannot see a reuse distance (timing__sampling_note) are listed apart:
    # their estimates widen to cover either L2 outcome
    sampled = [r.predicted.get("timing__sampling_error_pct", 0.0) for r in dur
               if not r.predicted.get("timing__sampling_note")]
    out["sampling_error_max_pct"] = float(max(sampled)) if sampled else None
    out["sampling_error_mean_pct"] = float(np.mean(sampled)) if sampled else None
    out["sampling_noted"] = {r.name: round(r.predicted.get("timing__sampling_error_pct", 0.0), 1)
                             for r in dur if r.predicted.get("timing__sampling_note")}
    inst = [abs(rel_err(r.predicted["smsp__inst_executed.sum"], r.measured["smsp__inst_executed.sum"]))
            for r in rows if both(r, "smsp__inst_executed.sum") and r.measured["smsp__inst_executed.sum"]]
    out["inst_executed_within_5pct_share"] = 100 * float(np.mean([e <= 0.05 for e in inst])) if inst else None
    out["inst_executed_mape_pct"] = 100 * float(np.mean(inst)) if inst else None
    conf, noise = [], []
    for r in rows:
        for op in ("ld", "st"):
            m = f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"
            w = f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"
            if not (both(r, m) and r.measured[m] > 1000):
                continue
            share = r.measured[m] / r.measured[w] if r.measured.get(w) else 1.0
            if r.predicted[m] > 0:          # the lanes' addresses conflict: a real conflict to predict
                conf.append(abs(rel_err(r.predicted[m], r.measured[m])))
            else:                           # the addresses prove the accesses conflict-free: Nsight's noise
                noise.append(share)
    out["bank_conflicts_cases"] = len(conf)
    out["bank_conflicts_max_error_pct"] = 100 * max(conf) if conf else None
    out["bank_conflicts_mean_error_pct"] = 100 * float(np.mean(conf)) if conf else None
    out["bank_conflict_noise_cases"] = len(noise)
    out["bank_conflict_noise_max_share_pct"] = 100 * max(noise) if noise else None
    for label, subset in (("", rows), ("programs_", [r for r in rows if r.kind == "program"])):
        ratio = []
        for r in subset:
            a, b = "smsp__thread_inst_executed.sum", "smsp__inst_executed.sum"
            if both(r, a) and both(r, b) and r.measured[b] and r.predicted[b]:
                ratio.append(abs(rel_err(r.predicted[a] / r.predicted[b], r.measured[a] / r.measured[b])))
        out[f"{label}thread_inst_ratio_max_error_pct"] = 100 * max(ratio) if ratio else None
        out[f"{label}thread_inst_ratio_mean_error_pct"] = 100 * float(np.mean(ratio)) if ratio else None
        out[f"{label}thread_inst_ratio_within_2pct_share"] = \
            100 * float(np.mean([e <= 0.02 for e in ratio])) if ratio else None
    spr = exact = 0
    for r in rows:
        for op in ("ld", "st"):
            q, s = (f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum", f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")
            if both(r, q) and both(r, s) and r.measured[q] > 0:
                spr += 1
                if r.predicted[q] > 0 and round(r.predicted[s] / r.predicted[q], 3) == round(r.measured[s] / r.measured[q], 3):
                    exact += 1
    out["sectors_per_request_cases"] = spr
    out["sectors_per_request_exact_pct"] = 100 * exact / spr if spr else None
    for key, metrics in (("l2_sectors", ("lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum")),
                         ("dram_read_bytes", ("dram__bytes_read.sum",)),
                         ("dram_write_bytes", ("dram__bytes_write.sum",))):
        errs = []
        for r in rows:
            if all(both(r, m) for m in metrics):
                meas = sum(r.measured[m] for m in metrics)
                scale = 32 if key == "l2_sectors" else 1
                if meas * scale > MIB:
                    errs.append(abs(rel_err(sum(r.predicted[m] for m in metrics), meas)))
        out.update(_error_figures(key, errs))
    # DRAM writes that cannot all be the kernel's own: more bytes written to DRAM than the SMs
    # stored (32 B per stored sector, counted per request: an upper bound on what they dirtied);
    # the DRAM write figures again over the other kernels
    st = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
    foreign = {r.name for r in rows if both(r, "dram__bytes_write.sum") and r.measured["dram__bytes_write.sum"] > MIB
               and r.measured["dram__bytes_write.sum"] > 32 * r.measured.get(st, 0.0)}
    out["dram_write_bytes_beyond_stores"] = sorted(foreign)
    own = [abs(rel_err(r.predicted["dram__bytes_write.sum"], r.measured["dram__bytes_write.sum"])) for r in rows
           if both(r, "dram__bytes_write.sum") and r.measured["dram__bytes_write.sum"] > MIB and r.name not in foreign]
    out.update(_error_figures("dram_write_bytes_own", own))
    return out


def _error_figures(key: str, errs: list[float]) -> dict:
    """`key`_cases, _mape_pct and _within_5pct_share of relative errors."""
    return {f"{key}_cases": len(errs),
            f"{key}_mape_pct": 100 * float(np.mean(errs)) if errs else None,
            f"{key}_within_5pct_share": 100 * float(np.mean([e <= 0.05 for e in errs])) if errs else None}


def kernel_counters(r: Row) -> dict:
    """The compared counters of one kernel: {metric: [measured, predicted]}."""
    return {m: [r.measured[m], round(r.predicted[m], 1)] for m in COMPARED_COUNTERS
            if m in r.measured and m in r.predicted}


def plot(rows: list[Row], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 6))
    for kind, marker in (("program", "o"), ("microbenchmark", "^"), ("heldout", "s"), ("heldout2", "D"),
                         ("mechanism", "v"), ("tensor", "P")):
        pts = [(r.measured[DURATION] / 1e3, r.predicted[DURATION] / 1e3) for r in rows
               if r.kind == kind and DURATION in r.predicted]
        if pts:
            x, y = zip(*pts)
            ax.scatter(x, y, marker=marker, label=kind, alpha=0.75)
    timed = [r for r in rows if DURATION in r.predicted]
    lo = min(min(r.measured[DURATION], r.predicted[DURATION]) for r in timed) / 1e3 / 1.5
    hi = max(max(r.measured[DURATION], r.predicted[DURATION]) for r in timed) / 1e3 * 1.5
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    for f in (0.8, 1.25):
        ax.plot([lo, hi], [lo * f, hi * f], "k:", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured gpu__time_duration (us)")
    ax.set_ylabel("predicted (us)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare(data_path: Path, preset: str | None = None, only: str | None = None, progress=None,
            budget: float | None = None, jobs: int | None = 1,
            time_limit_s: float | None = None, journal_path: Path | None = None,
            resume: bool = False, clock: str = "preset") -> tuple[list[Row], dict, str]:
    """Predict the measured kernels and summarise. With `journal_path`, each finished prediction
    is appended there as it finishes (validate.journal); `resume` reuses the predictions that
    journal already holds for the same model, preset, clock and data."""
    import re

    from gpusim.api import resolve_gpu
    data = json.loads(Path(data_path).read_text())
    preset = preset or default_preset(data)
    gpu = resolve_gpu(preset)
    kernels = [k for k in data["kernels"] if usable(k) and (not only or re.search(only, k["name"]))]
    skipped = [k["name"] for k in kernels if budget is not None and estimated_cost(k) > budget]
    kernels = [k for k in kernels if k["name"] not in skipped]
    environment = measurement_environment(data)
    done: dict[str, Row] = {}
    on_row = None
    journal_note = {}
    if journal_path is not None:
        jr = journal.Journal(journal_path, journal.header(Path(data_path), preset, clock))
        if resume:
            by_name = {k["name"]: k for k in kernels}
            done = {n: _row_from_journal(r, by_name[n]) for n, r in jr.resume().items() if n in by_name}
            journal_note = {"journal": str(journal_path), "resumed": len(done)}
        else:
            journal_note = {"journal": str(journal_path), "journal_replaced": jr.start()}
        on_row = lambda r: jr.append(_row_to_journal(r))          # noqa: E731
    todo = [k for k in kernels if k["name"] not in done]
    clocks = [observed_clock_mhz(k, data, clock) for k in todo]
    new = iter(_predict_all(todo, gpu, jobs, progress, environment, time_limit_s, clocks, on_row))
    rows = [done[k["name"]] if k["name"] in done else next(new) for k in kernels]
    summary = summarize(rows)
    summary["clock"] = clock
    if any(r.kind in ("heldout2", "tensor") for r in rows):
        from validate import orderings     # lazy: imports the heldout2 kernels (numba)
        timed = [r for r in rows if DURATION in r.predicted]
        if any(r.kind == "tensor" for r in rows):
            from validate.tensor_set.suite import orderings as tensor_orderings
            which = {"orderings": tensor_orderings()}
        else:
            which = {}
        summary.update(orderings.summary({r.name: r.measured[DURATION] for r in timed},
                                         {r.name: r.predicted[DURATION] for r in timed}, **which))
    summary["skipped_over_budget"] = skipped
    summary.update(journal_note)
    summary.update(environment)
    return rows, summary, preset


def _row_to_journal(r: Row) -> dict:
    return {"name": r.name, "kind": r.kind, "seconds": r.seconds, "predicted": r.predicted, "error": r.error,
            "predicted_ns": r.predicted.get(DURATION)}


def _row_from_journal(j: dict, k: dict) -> Row:
    return Row(j["name"], j["kind"], k["metrics"], j["predicted"], j["seconds"], error=j.get("error", ""))


def _predict_all(kernels: list[dict], gpu, jobs: int | None, progress, environment: dict | None = None,
                 time_limit_s: float | None = None, clocks: list | None = None, on_row=None) -> list[Row]:
    """Predictions in the data file's order, in `jobs` processes (the costliest first);
    `clocks`: per kernel, the SM clock to predict at (None: the preset's); `on_row(row)` is
    called in this process as each one finishes."""
    import os
    jobs = jobs or os.cpu_count() or 1
    clocks = clocks or [None] * len(kernels)
    if jobs <= 1 or len(kernels) <= 1:
        rows = []
        for i, k in enumerate(kernels):
            rows.append(predict(k, gpu, environment, time_limit_s, clocks[i]))
            if on_row:
                on_row(rows[-1])
            if progress:
                progress(i + 1, len(kernels), rows[-1])
        return rows
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    order = sorted(range(len(kernels)), key=lambda i: -estimated_cost(kernels[i]))
    out: list[Row | None] = [None] * len(kernels)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(predict, kernels[i], gpu, environment, time_limit_s, clocks[i]): i for i in order}
        for done, f in enumerate(as_completed(futures), 1):
            out[futures[f]] = f.result()
            if on_row:
                on_row(out[futures[f]])
            if progress:
                progress(done, len(kernels), out[futures[f]])
    return out


def run(args) -> int:
    import sys
    show = (lambda i, n, r: print(f"[{i}/{n}] {r.name}: {r.seconds:.1f}s" + (f" no prediction: {r.error}" if r.error else ""),
                                  file=sys.stderr, flush=True))
    import time
    t0 = time.perf_counter()
    preset_name = args.preset or default_preset(json.loads(Path(args.data).read_text()))
    journal_path = journal.default_path(args.data, preset_name, args.out)
    rows, summary, preset = compare(args.data, args.preset, args.only, show, args.budget, args.jobs,
                                    getattr(args, "time_limit", None), journal_path, getattr(args, "resume", False),
                                    getattr(args, "clock", "preset"))
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    summary["preset"] = preset
    summary["data"] = str(args.data)
    if args.plot:
        plot(rows, args.plot, f"{preset} vs {Path(args.data).stem}")
        summary["plot"] = str(args.plot)
    if args.out:
        import shlex
        kernels = [{"name": r.name, "kind": r.kind, "seconds": round(r.seconds, 2),
                    "measured_ns": r.measured.get(DURATION), "predicted_ns": r.predicted.get(DURATION),
                    "no_prediction": r.error or None,
                    "error_pct": round(100 * rel_err(r.predicted[DURATION], r.measured[DURATION]), 2)
                    if DURATION in r.predicted else None,
                    "sampling_error_pct": r.predicted.get("timing__sampling_error_pct"),
                    "bound": r.predicted.get("timing__bound"), "counters": kernel_counters(r)} for r in rows]
        command = "python -m validate " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        args.out.write_text(json.dumps({"command": command, "summary": summary, "kernels": kernels}, indent=1))
        journal_path.unlink(missing_ok=True)          # the result holds every row now
    if args.json:
        print(json.dumps(summary))
        return 0
    if args.table or not args.json:
        print(f"{'kernel':46s} {'measured us':>12s} {'predicted us':>12s} {'error':>8s} {'sampling':>9s}  bound")
        for r in rows:
            m, p = r.measured[DURATION] / 1e3, r.predicted.get(DURATION, float('nan')) / 1e3
            se = r.predicted.get("timing__sampling_error_pct", 0.0)
            print(f"{r.name:46s} {m:12.2f} {p:12.2f} {100 * (p - m) / m:+7.1f}% {'+-%.1f%%' % se if se else '':>9s}"
                  f"  {r.predicted.get('timing__bound')}")
    for k, v in summary.items():
        print(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}")
    return 0
