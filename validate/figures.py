"""The summary figures of a comparison (`validate compare`): over the rows of `validate/predict.py`,
duration MAPE and rank correlation, bank conflicts, thread/instruction ratio, sectors per request,
L2 and DRAM traffic, SASS instructions, sampling error (what each figure means: validate/compare.py);
each kernel's compared counters, and the predicted-vs-measured scatter plot.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from validate.predict import DURATION, Row

MIB = 1 << 20
# written per kernel into `--out` next to the duration
COMPARED_COUNTERS = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum", "lts__t_sectors_op_read.sum",
                     "lts__t_sectors_op_write.sum", "dram__bytes_read.sum", "dram__bytes_write.sum")


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
    # lazy: matplotlib (heavy) loads only when a plot is asked for
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, after the Agg backend is chosen
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
