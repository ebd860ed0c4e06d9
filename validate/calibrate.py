"""`python -m validate calibrate --data FILE [--base NAME] [--name NAME] [--out TOML]
[--transfer-to GPU]`: fit spec numbers to the microbenchmarks of a measurement file and
write a calibrated preset (a TOML file under `gpusim/specs/calibrated/`, loaded by
`gpusim.specs.get("<gpu>")`, which is then the default preset of that GPU). The cited
datasheet preset (`<gpu>-datasheet`) is never edited; the file holds only the fitted
numbers, the fit's residuals and a `[calibration]` table (data file, GPU, date, command).

Fits (each from one microbenchmark family; residuals re-simulate it with the fit):
- `clocks.sm_clock_mhz`: the SM clock the kernels ran at (cycles / duration).
- `l1.hit_latency_cycles`, `l2.hit_latency_cycles`, `hbm.latency_ns`: the pointer-chase
  plateaus (cycles per dependent load read by `clock64` on the GPU) minus the model's own
  per-hop overhead (the chase's SASS index arithmetic), found by simulating the chase.
- Not fitted: `l2.bandwidth_bytes_per_cycle_per_slice`, measured directly with every SM
  pulling L2-resident data (the presets' [MEAS-XBAR], per L2 cycle); the `bandwidth/read_l2`
  stream it was once fitted to hits in L1 (16.2 M of its 16.8 M sectors on the H100) and is
  bound by its own issue, so fitting the slices to it made them 73.6 B a cycle where the
  probe measures 50 (it stays a residual below). HBM bandwidth is not fitted either: the
  datasheet's peak goes through the DRAM model (banks, row buffers, turnaround), whose
  sustained rates are checked by `validate compare`.
- `l2.atomic_int_sector_interval_cycles`: cycles per atomic on one global address (each
  lane there is a pass, and consecutive passes on one sector wait for each other).
- `l2.atomic_near_slice_cycles_per_pass`: what a pass to a line homed in the other partition
  costs its near slice, from the distinct-address microbenchmark (no contention: the slices
  limit it, each home slice taking the unit's time a pass).
- `l2.atomic_unit_cycles_per_pass`: the atomic unit's time per pass over different
  sectors of a hot 512-B granule, from `histogram_global/large` (16 M keys: every SM on
  the two granules of the bins for 3 ms, launch and ramp negligible), by bisection on
  the simulated duration; `/default` (65,536 keys) is re-simulated as a residual. The two
  are fitted in turn (each kernel depends a little on the other).
- `hbm.t_faw_ns`: the activation window, from the random 4-byte loads over 1 GiB
  (`random_access/read`: every access a row activation), by bisection on the simulated
  duration.
- `launch.block_dispatch_cycles`: SM cycles per block per SM with millions of tiny blocks.
- `launch.kernel_fixed_ns`: the empty kernel's duration minus its modelled cycles.

`--transfer-to h100` also writes `h100-from-<gpu>.toml`: the same fitted numbers on the
target's datasheet (its SM count, clocks, HBM and L2 size stay the datasheet's), the
cross-GPU check of how far a calibration carries to another configuration
(`python -m validate compare --data data/measurements/h100.json --preset h100-from-h200`).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import sys
from pathlib import Path

import gpusim
import programs
from gpusim import specs
from gpusim.timing.engine import TimingOptions
from validate.datadir import measurement_file
from validate.microbench import MICROBENCHMARKS

ROOT = Path(__file__).resolve().parents[1]
MAX_ITERATIONS = 5          # bandwidth fits: re-simulate and rescale until within TOLERANCE
TOLERANCE = 0.02


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=measurement_file, required=True, help="a measurement file, e.g. data/measurements/h200.json")
    p.add_argument("--base", help="GPU whose datasheet preset to start from (default: the measured GPU's short name)")
    p.add_argument("--name", help="name of the calibrated preset (default: the GPU's short name, e.g. h200)")
    p.add_argument("--out", type=Path, help="TOML to write (default gpusim/specs/calibrated/<name>.toml)")
    p.add_argument("--transfer-to", help="also write <GPU>-from-<gpu>.toml: the fitted numbers on GPU's datasheet "
                   "(the cross-GPU check)")


def _records(data: dict, family: str) -> dict[str, dict]:
    return {k["size"]: k for k in data["kernels"] if k.get("microbenchmark") == family and k.get("check") == "passed"}


def _cycles(spec, family: str, params: dict) -> float:
    c = MICROBENCHMARKS[family].case(params, seed=0)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=spec, shared_bytes=c.shared_bytes, timing=True,
                      timing_options=TimingOptions(mode="auto", functional="sampled"))
    return r.metrics["sm__cycles_elapsed.max"]


def _duration_ns(spec, family: str, params) -> float:
    c = MICROBENCHMARKS[family].case(params, seed=0)
    r = gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=spec, shared_bytes=c.shared_bytes, timing=True,
                      timing_options=TimingOptions(mode="auto", functional="sampled"))
    return float(r.metrics[DURATION_METRIC])


def _program_ns(spec, program: str, size: str) -> float:
    c = programs.get(program).case(size)
    return float(gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu=spec, timing=True).metrics[DURATION_METRIC])


def chase_per_hop(spec, footprint: int, hops=(256, 512)) -> float:
    """The model's cycles per dependent load of the pointer chase at `footprint` bytes."""
    warm = min(footprint // 128, 65536)
    c1 = _cycles(spec, "pointer_chase", {"footprint_bytes": footprint, "hops": hops[0], "warm": warm})
    c2 = _cycles(spec, "pointer_chase", {"footprint_bytes": footprint, "hops": hops[1], "warm": warm})
    return (c2 - c1) / (hops[1] - hops[0])


def read_GBps(spec, nbytes: int, reps: int, blocks: int) -> float:
    cyc = _cycles(spec, "bandwidth", {"op": "read", "nbytes": nbytes, "reps": reps, "blocks": blocks})
    return nbytes * reps / (cyc / spec.clocks.sm_clock_mhz * 1e-6) / 1e9


def rep(spec, **parts):
    """dataclasses.replace on nested sub-specs: rep(spec, l1={'hit_latency_cycles': 40})."""
    return dataclasses.replace(spec, **{k: dataclasses.replace(getattr(spec, k), **v) if isinstance(v, dict) else v
                                        for k, v in parts.items()})


def fit(data: dict, base) -> tuple[object, list[dict]]:
    notes: list[dict] = []
    prov = data["provenance"]
    spec = base
    mhz = prov.get("sm_clock_mhz_observed") or base.clocks.sm_clock_mhz
    spec = rep(spec, clocks={"sm_clock_mhz": float(mhz)})
    notes.append(dict(field="clocks.sm_clock_mhz", value=mhz, source="provenance.sm_clock_mhz_observed"))

    chase = _records(data, "pointer_chase")
    meas = {fp: chase[fp]["derived"]["cycles_per_load"] for fp in ("fp_4KiB", "fp_1MiB", "fp_256MiB") if fp in chase}
    overhead = chase_per_hop(spec, 4096) - spec.l1.hit_latency_cycles
    l1 = round(meas["fp_4KiB"] - overhead)
    l2 = round(meas["fp_1MiB"] - overhead)
    hbm_cycles = meas["fp_256MiB"] - overhead - l2
    spec = rep(spec, l1={"hit_latency_cycles": l1}, l2={"hit_latency_cycles": l2},
               hbm={"latency_ns": round(hbm_cycles / mhz * 1000, 1)})
    for fld, key, fp in (("l1.hit_latency_cycles", l1, "fp_4KiB"), ("l2.hit_latency_cycles", l2, "fp_1MiB"),
                         ("hbm.latency_ns", spec.hbm.latency_ns, "fp_256MiB")):
        notes.append(dict(field=fld, value=key, source=f"pointer_chase/{fp}: {meas[fp]:.1f} cycles/load measured, "
                          f"model overhead {overhead:.1f} cycles/hop"))

    at = _records(data, "atomic_throughput").get("global_same")
    if at:
        interval = round(1.0 / at["derived"]["atomics_per_cycle"], 3)
        spec = rep(spec, l2={"atomic_int_sector_interval_cycles": interval})
        notes.append(dict(field="l2.atomic_int_sector_interval_cycles", value=interval,
                          source=f"atomic_throughput/global_same: {at['derived']['atomics_per_cycle']:.3f} "
                                 f"atomics/cycle (one address: a pass each)"))
    spec = _fit_activation_window(spec, notes, data)
    bd = _records(data, "block_dispatch")
    big = max(bd.values(), key=lambda k: k["params"]["blocks"])
    per_block = round(big["derived"]["sm_cycles_per_block_per_sm"], 1)
    spec = rep(spec, launch={"block_dispatch_cycles": per_block})
    notes.append(dict(field="launch.block_dispatch_cycles", value=per_block,
                      source=f"{big['name']}: {per_block} SM cycles per block per SM"))

    lo = _records(data, "launch_overhead")["default"]
    zero = rep(spec, launch={"kernel_fixed_ns": 0.0})
    model_ns = _cycles(zero, "launch_overhead", {}) * 1000.0 / mhz
    fixed = round(lo["metrics"]["gpu__time_duration.sum"] - model_ns, 1)
    spec = rep(spec, launch={"kernel_fixed_ns": fixed})
    notes.append(dict(field="launch.kernel_fixed_ns", value=fixed,
                      source=f"launch_overhead: {lo['metrics']['gpu__time_duration.sum']:.0f} ns measured, "
                      f"{model_ns:.0f} ns modelled"))
    if at:
        for _ in range(2):
            spec = fit_atomic_slice(spec, notes, data)
            spec = fit_atomic_unit(spec, notes, data)
    return spec, notes


def _note(notes: list, **entry) -> None:
    """Add a fitted field's note, replacing an earlier fit of the same field."""
    notes[:] = [n for n in notes if n["field"] != entry["field"]] + [entry]


def fit_atomic_slice(spec, notes: list, data: dict):
    """`l2.atomic_near_slice_cycles_per_pass` from atomic_throughput/global_distinct (every lane
    its own address: a pass a sector, no contention), rescaled until the model's duration matches."""
    dist = _records(data, "atomic_throughput").get("global_distinct")
    if not dist:
        return spec
    target = dist["metrics"][DURATION_METRIC]
    cycles = spec.l2.atomic_near_slice_cycles_per_pass
    for _ in range(2 * MAX_ITERATIONS):          # converges slowly: part of the time is not the slices
        spec = rep(spec, l2={"atomic_near_slice_cycles_per_pass": cycles})
        got = _duration_ns(spec, "atomic_throughput", dist["size"])
        if abs(got / target - 1) < TOLERANCE / 2:
            break
        cycles = round(cycles * target / got, 3)
    _note(notes, field="l2.atomic_near_slice_cycles_per_pass", value=spec.l2.atomic_near_slice_cycles_per_pass,
          source=f"atomic_throughput/global_distinct: {target / 1000:.1f} us measured, {got / 1000:.1f} us modelled "
                 f"(a pass a sector: the unit's time at its home slice, this at a far line's near one)")
    return spec


def fit_atomic_unit(spec, notes: list, data: dict):
    """`l2.atomic_unit_cycles_per_pass` from histogram_global/large (normal keys over 256 bins:
    every SM on the two 512-B granules of the bins, several sectors each, for 3 ms), by
    bisection on the simulated duration; absent data leaves the preset's."""
    rec = next((k for k in data["kernels"] if k.get("program") == "histogram_global" and k.get("size") == "large"
                and k.get("check") == "passed"), None)
    if rec is None:
        return spec
    target = rec["metrics"][DURATION_METRIC]

    def duration(unit: float) -> float:
        return _program_ns(rep(spec, l2={"atomic_unit_cycles_per_pass": round(unit, 3)}), "histogram_global", "large")

    lo, hi = 0.25 * spec.l2.atomic_int_sector_interval_cycles, 2.0 * spec.l2.atomic_int_sector_interval_cycles
    if duration(lo) >= target or duration(hi) <= target:
        return spec
    for _ in range(10):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if duration(mid) < target else (lo, mid)
    unit = round((lo + hi) / 2, 3)
    spec = rep(spec, l2={"atomic_unit_cycles_per_pass": unit})
    _note(notes, field="l2.atomic_unit_cycles_per_pass", value=unit,
          source=f"histogram_global/large: {target / 1000:.1f} us measured, {duration(unit) / 1000:.1f} us "
                 f"modelled (every SM on the two hot 512-B granules of the bins)")
    return spec


def _fit_activation_window(spec, notes: list, data: dict):
    """`hbm.t_faw_ns` from random_access/read (no row hits: the DRAM's activation rate
    limits it), by bisection on the simulated duration; absent data leaves the preset's."""
    rec = _records(data, "random_access").get("read")
    if rec is None or rec.get("check") != "passed":
        return spec
    target = rec["metrics"][DURATION_METRIC]

    def duration(faw: float) -> float:
        return _duration_ns(rep(spec, hbm={"t_faw_ns": round(faw, 2)}), "random_access", rec["size"])

    lo, hi = 0.0, 64.0
    if duration(lo) >= target:
        return spec
    for _ in range(7):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if duration(mid) < target else (lo, mid)
    faw = round((lo + hi) / 2, 2)
    spec = rep(spec, hbm={"t_faw_ns": faw})
    _note(notes, field="hbm.t_faw_ns", value=faw,
          source=f"random_access/read: {target / 1000:.1f} us measured, {duration(faw) / 1000:.1f} us modelled "
                 f"({rec['derived']['G_accesses_per_s']:.1f} G random loads/s)")
    return spec


def residuals(spec, data: dict) -> list[dict]:
    """Re-simulate each fitted microbenchmark with the fitted spec."""
    chase = _records(data, "pointer_chase")
    out = []
    for fp, nbytes in (("fp_4KiB", 4096), ("fp_1MiB", 1 << 20), ("fp_256MiB", 256 << 20)):
        pred, meas = chase_per_hop(spec, nbytes), chase[fp]["derived"]["cycles_per_load"]
        out.append(dict(what=f"pointer_chase/{fp} cycles/load", predicted=pred, measured=meas))
    bw = _records(data, "bandwidth")
    out.append(dict(what="bandwidth/read_hbm GB/s", predicted=read_GBps(spec, 256 << 20, 1, bw["read_hbm"]["grid"][0]),
                    measured=bw["read_hbm"]["derived"]["GB_per_s"]))
    out.append(dict(what="bandwidth/read_l2 GB/s", predicted=read_GBps(spec, 16 << 20, 8, bw["read_l2"]["grid"][0]),
                    measured=bw["read_l2"]["derived"]["GB_per_s"]))
    hist = next((k for k in data["kernels"] if k.get("program") == "histogram_global" and k.get("size") == "default"
                 and k.get("check") == "passed"), None)
    if hist:                                     # 1/256 of the fitted size: the same two hot granules, short
        out.append(dict(what="histogram_global/default us", predicted=_program_ns(spec, "histogram_global", "default")
                        / 1000, measured=hist["metrics"][DURATION_METRIC] / 1000))
    for r in out:
        r["error_pct"] = 100.0 * (r["predicted"] - r["measured"]) / r["measured"]
    return out


DURATION_METRIC = "gpu__time_duration.sum"
TRANSFERRED_NOT = ("clocks.sm_clock_mhz",)       # a GPU's own clock stays its datasheet's on transfer


def write_toml(path: Path, name: str, base: str, notes: list[dict], res: list[dict], data_path: Path,
               prov: dict, command: str, note: str = "") -> None:
    tables: dict[str, list[str]] = {}
    for n in notes:
        table, key = n["field"].rsplit(".", 1)
        v = n["value"]
        tables.setdefault(table, []).append(f"{key} = {v!r}".replace("'", '"') + f"    # {n['source']}")
    lines = [f"# {name}: {base} with numbers fitted to {data_path} by `python -m validate calibrate`.{note}",
             f"# Measured on {prov.get('gpu_name')} (driver {prov.get('driver')}, {prov.get('date')}).",
             "# Residuals of the fit (re-simulated microbenchmarks):"]
    lines += [f"#   {r['what']}: predicted {r['predicted']:.1f}, measured {r['measured']:.1f} ({r['error_pct']:+.1f}%)"
              for r in res]
    lines += [f'base = "{base}"', f'name = "{name}"', "", "[calibration]",
              f'data = "{data_path}"', f'gpu = "{prov.get("gpu_name")}"', f'date = "{prov.get("date")}"',
              f'command = "{command}"', ""]
    for table, rows in tables.items():
        lines.append(f"[{table}]")
        lines += rows
        lines.append("")
    if path.exists():                            # tables other commands fit (calibrate-multi's [nccl]) stay
        kept = re.search(r"^\[nccl\][^\[]*", path.read_text(), flags=re.M)
        if kept:
            lines.append(kept.group(0).rstrip("\n") + "\n")
    path.write_text("\n".join(lines))


def run(args) -> int:
    data = json.loads(args.data.read_text())
    gpu = args.base or data["provenance"].get("gpu_short_name") or "h100"
    base_name = gpu if gpu.endswith("-datasheet") else f"{gpu}-datasheet"
    short = base_name[:-len("-datasheet")]
    name = args.name or short
    out = args.out or ROOT / "gpusim" / "specs" / "calibrated" / f"{name}.toml"
    command = "python -m validate " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else \
        f"python -m validate calibrate --data {args.data}"
    spec, notes = fit(data, specs.get(base_name))
    res = residuals(spec, data)
    for n in notes:
        print(f"{n['field']:45s} = {n['value']!s:>10}   ({n['source']})")
    print("residuals:")
    for r in res:
        print(f"  {r['what']:40s} predicted {r['predicted']:10.1f}  measured {r['measured']:10.1f}  {r['error_pct']:+6.1f}%")
    write_toml(out, name, base_name, notes, res, args.data, data["provenance"], command)
    print(f"wrote {out}")
    if args.transfer_to:
        target = args.transfer_to
        tname = f"{target}-from-{short}"
        tout = out.with_name(f"{tname}.toml")
        moved = [n for n in notes if n["field"] not in TRANSFERRED_NOT]
        write_toml(tout, tname, f"{target}-datasheet", moved, res, args.data, data["provenance"], command,
                   note=f" Transferred: {target}'s datasheet (SMs, clocks, HBM, L2 size) with {short}'s fitted "
                        f"microarchitectural numbers.")
        print(f"wrote {tout}")
    return 0
