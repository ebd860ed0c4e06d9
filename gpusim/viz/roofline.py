"""Roofline: the preset's compute and bandwidth ceilings, with a timed kernel's point at
each level of the memory hierarchy (a hierarchical roofline, as Nsight Compute draws).

Ceilings come from the GPU spec alone (`gpusim.specs`), the same arithmetic as
`gpusim presets --show` (`specs.describe.derived`):
- FP32: SMs x sub-partitions x FP32 lanes (32 / issue interval of `fmaheavy`, plus
  `fmalite` where it exists) x 2 (an FMA is 2 flops) x SM clock;
- FP16 (non-tensor, paired HFMA2): the `fp16` pipe's lanes x 2 halves x 2, or, where the
  spec has no fp16 pipe (interval 0: Hopper runs HFMA2 on the FMA pipes), the FP32
  lanes x 2 halves x 2;
- FP64: the `fp64` pipe's lanes x 2 x clock;
- tensor (FP16/BF16, TF32, FP8, INT8): SMs x the spec's dense rate per SM per cycle
  (`GPUSpec.tensor`, cited in the presets) x clock; a type the GPU lacks (rate 0) has none;
- HBM: `hbm.bandwidth_GBps`; L2: slices x `l2.bandwidth_bytes_per_cycle_per_slice` x
  clock; shared: SMs x banks x bank width (one 128-byte wavefront per SM cycle) x clock.

The kernel's point needs a timed Result (`launch(..., timing=True)`): time is
`gpu__time_duration.sum`. Bytes per level: HBM `dram__bytes_read.sum +
dram__bytes_write.sum`, L2 32 x `lts__t_sectors.sum` (Nsight's `lts__t_bytes.sum`),
shared 128 x shared wavefronts (`l1tex__data_pipe_lsu_wavefronts_mem_shared_op_*`: the
bytes the shared pipe could move in the cycles the kernel kept it busy, so a kernel at
the shared ceiling sits on it, conflicts included).

FLOPs: gpusim's metrics hold no FLOP counter, and the SASS pipe counters
(`sm__inst_executed_pipe_fma.sum`, `_fp64`) cannot give one: they count warp
instructions, and on Hopper the fma pipe also counts IMAD. So the FLOPs are derived, as
Nsight's roofline derives them from `smsp__sass_thread_inst_executed_op_{ffma,fadd,fmul,
hfma,hadd,hmul,dfma,dadd,dmul}_pred_on.sum`, from the executed SASS: per SASS instruction
its predicated-on thread instructions (`Result.sass.thread_inst_pred_on`) x flops per
thread by opcode (FFMA 2, FADD/FMUL 1, HFMA2 4, HADD2/HMUL2 2, DFMA 2, DADD/DMUL 1).
Tensor-core work is not counted yet (the tensor ceilings stand alone). Without the SASS tools the PTX arithmetic (fma/mad, add, sub, mul on f32, f64,
f16, f16x2) is counted instead (`flops_source` says which).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.api import resolve_gpu
from gpusim.viz import _mpl

SASS_FLOPS = {   # opcode -> (precision, flops per thread)
    "FFMA": ("fp32", 2), "FFMA32I": ("fp32", 2), "FADD": ("fp32", 1), "FADD32I": ("fp32", 1),
    "FMUL": ("fp32", 1), "FMUL32I": ("fp32", 1),
    "HFMA2": ("fp16", 4), "HFMA2_32I": ("fp16", 4), "HADD2": ("fp16", 2), "HADD2_32I": ("fp16", 2),
    "HMUL2": ("fp16", 2), "HMUL2_32I": ("fp16", 2),
    "DFMA": ("fp64", 2), "DADD": ("fp64", 1), "DMUL": ("fp64", 1),
}
PRECISIONS = ("fp32", "fp16", "fp64")
LEVELS = ("hbm", "l2", "shared")


@dataclass(frozen=True)
class Ceiling:
    name: str                  # 'FP32', 'HBM', ...
    value: float               # FLOP/s or bytes/s
    how: str                   # the arithmetic from the spec


@dataclass(frozen=True)
class Roofline:
    gpu: str
    compute: tuple[Ceiling, ...]          # FP32, FP16, FP64, then the tensor ceilings (FLOP/s, INT8: op/s)
    memory: tuple[Ceiling, ...]           # HBM, L2, shared (bytes/s)
    kernel: str = ""
    flops: dict | None = None             # precision -> FLOPs executed
    flops_source: str = ""                # 'sass' or 'ptx'
    bytes: dict | None = None             # level -> bytes moved
    time_s: float | None = None
    measured_time_s: float | None = None
    blocks: int = 0                       # the launch's thread blocks (0: unknown)
    sm_count: int = 0
    fixed_s: float = 0.0                  # the launch's fixed overhead in time_s (spec.launch.kernel_fixed_ns)

    def ceiling(self, name: str) -> float:
        for c in self.compute + self.memory:
            if c.name.lower() == name.lower():
                return c.value
        raise KeyError(name)

    @property
    def total_flops(self) -> float:
        return float(sum(self.flops.values())) if self.flops else 0.0

    @property
    def achieved_flops_per_s(self) -> float | None:
        return self.total_flops / self.time_s if self.time_s else None

    def intensity(self, level: str) -> float | None:
        """FLOPs per byte moved at `level` (None: no bytes there)."""
        b = (self.bytes or {}).get(level, 0)
        return self.total_flops / b if b else None

    def bound_at(self, level: str) -> float | None:
        """The roof at the kernel's intensity for `level`: min(peak, intensity x bandwidth),
        against the ceiling of the precision doing most of the FLOPs."""
        i = self.intensity(level)
        if i is None:
            return None
        prec = max(self.flops, key=self.flops.get) if self.flops else "fp32"
        return min(self.ceiling(prec), i * self.ceiling(level))


def ceilings(spec) -> tuple[tuple[Ceiling, ...], tuple[Ceiling, ...]]:
    """(compute, memory) ceilings of a GPUSpec (see the module docstring)."""
    sm, hz = spec.sm, spec.clocks.sm_clock_mhz * 1e6
    per_sm = spec.sm_count * sm.sub_partitions

    def lanes(*pipes):
        return sum(32.0 / sm.pipes.of(p).issue_interval_cycles for p in pipes
                   if sm.pipes.of(p).issue_interval_cycles > 0)
    fp32_lanes = lanes("fmaheavy", "fmalite")
    fp16_lanes, fp16_where = (lanes("fp16"), "fp16 pipe") if sm.pipes.fp16.issue_interval_cycles > 0 \
        else (fp32_lanes, "FMA pipes")
    clock = f"{spec.clocks.sm_clock_mhz:g} MHz"
    compute = (
        Ceiling("FP32", per_sm * fp32_lanes * 2 * hz,
                f"{spec.sm_count} SMs x {sm.sub_partitions} SMSPs x {fp32_lanes:g} lanes x 2 x {clock}"),
        Ceiling("FP16", per_sm * fp16_lanes * 4 * hz,
                f"{spec.sm_count} SMs x {sm.sub_partitions} SMSPs x {fp16_lanes:g} lanes ({fp16_where}) x 2 halves "
                f"x 2 x {clock}"),
        Ceiling("FP64", per_sm * lanes("fp64") * 2 * hz,
                f"{spec.sm_count} SMs x {sm.sub_partitions} SMSPs x {lanes('fp64'):g} lanes x 2 x {clock}"),
    ) + tensor_ceilings(spec)
    l2_slice_bpc = spec.in_sm_cycles().l2.bandwidth_bytes_per_cycle_per_slice   # an L2 on its own clock: per SM cycle
    l2_bpc = spec.l2.slices * l2_slice_bpc
    sh_bpc = spec.sm_count * sm.shared_banks * sm.shared_bank_width_bytes
    memory = (
        Ceiling("HBM", spec.hbm.bandwidth_GBps * 1e9, f"hbm.bandwidth_GBps = {spec.hbm.bandwidth_GBps:g}"),
        Ceiling("L2", l2_bpc * hz, f"{spec.l2.slices} slices x {l2_slice_bpc:.4g} "
                f"B/cycle x {clock}"),
        Ceiling("shared", sh_bpc * hz, f"{spec.sm_count} SMs x {sm.shared_banks} banks x "
                f"{sm.shared_bank_width_bytes} B x {clock}"),
    )
    return compute, memory


TENSOR_CEILINGS = (("FP16/BF16 tensor", "fp16", "FLOP"), ("TF32 tensor", "tf32", "FLOP"),
                   ("FP8 tensor", "fp8", "FLOP"), ("INT8 tensor", "int8", "op"))


def tensor_ceilings(spec) -> tuple[Ceiling, ...]:
    """Dense tensor-core peaks of a GPUSpec, one per type it has (`GPUSpec.tensor`), at the clock
    a kernel issuing them runs at (`clocks.tensor_mhz`, gpusim/timing/clock_domain.py)."""
    mhz = spec.clocks.tensor_mhz
    hz = mhz * 1e6
    out = []
    for name, kind, unit in TENSOR_CEILINGS:
        rate = spec.tensor.rate(kind)
        if rate > 0:
            out.append(Ceiling(name, spec.sm_count * rate * hz,
                               f"{spec.sm_count} SMs x {rate:g} dense {unit}/cycle/SM x {mhz:g} MHz (tensor clock)"))
    return tuple(out)


def flops_of(result) -> tuple[dict[str, float], str]:
    """`kernel_flops`, cached on the Result."""
    extra = getattr(result, "extra", None)
    if isinstance(extra, dict) and "_flops" in extra:
        return extra["_flops"]
    out = kernel_flops(result)
    if isinstance(extra, dict):
        extra["_flops"] = out
    return out


def kernel_flops(result) -> tuple[dict[str, float], str]:
    """({precision: FLOPs}, 'sass' | 'ptx') executed by a Result (see the module docstring)."""
    out = dict.fromkeys(PRECISIONS, 0.0)
    if result.sass is not None:
        for ins, t in zip(result.sass.instructions, np.asarray(result.sass.thread_inst_pred_on).tolist()):
            hit = SASS_FLOPS.get(ins.opcode.split(".")[0])
            if hit:
                out[hit[0]] += hit[1] * t
        return out, "sass"
    thread = np.asarray(result.table["thread_inst"])
    for info in result.infos:
        parts = info.mnemonic.split(".")
        per = {"fma": 2, "mad": 2, "add": 1, "sub": 1, "mul": 1}.get(parts[0])
        ty = parts[-1]
        prec = {"f32": "fp32", "f64": "fp64", "f16": "fp16", "f16x2": "fp16", "bf16": "fp16", "bf16x2": "fp16"}.get(ty)
        if per and prec:
            out[prec] += per * (2 if ty.endswith("x2") else 1) * float(thread[info.index])
    return out, "ptx"


def kernel_bytes(metrics: dict) -> dict[str, float]:
    """Bytes moved at each level by a timed Result's metrics."""
    g = lambda k: float(metrics.get(k, 0) or 0)    # noqa: E731
    wavefronts = sum(g(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{o}.sum") for o in ("ld", "st", "atom"))
    return {"hbm": g("dram__bytes_read.sum") + g("dram__bytes_write.sum"),
            "l2": 32.0 * g("lts__t_sectors.sum"),
            "shared": 128.0 * wavefronts}


def roofline(result=None, gpu=None, *, measured_time_ns: float | None = None) -> Roofline:
    """The ceilings of `gpu` (default: the Result's preset) and, given a timed Result,
    the kernel's FLOPs, bytes per level and time. `measured_time_ns` (e.g. from
    `data/measurements`) adds the measured point: the same work over the measured time."""
    if gpu is None and result is None:
        raise ValueError("roofline: give a Result or a gpu")
    spec = resolve_gpu(gpu if gpu is not None else result.gpu)
    compute, memory = ceilings(spec)
    if result is None:
        return Roofline(spec.name, compute, memory)
    t = result.metrics.get("gpu__time_duration.sum")
    if t is None:
        raise ValueError(f"roofline: {result.kernel}'s Result has no time; launch it with timing=True")
    flops, src = flops_of(result)
    blocks = int(np.prod(getattr(result, "grid", (0,))))
    return Roofline(spec.name, compute, memory, result.kernel, flops, src, kernel_bytes(result.metrics),
                    float(t) * 1e-9, measured_time_ns * 1e-9 if measured_time_ns else None, blocks, spec.sm_count,
                    spec.launch.kernel_fixed_ns * 1e-9)


def plot(r: Roofline, path=None):
    """Log-log roofline: each compute ceiling, each bandwidth slope up to the FP32 peak,
    and the kernel's point at each memory level's intensity (hollow: measured time)."""
    fig, axes = _mpl.figure(1, 1, figsize=(9.5, 5.2), dpi=120)
    fig.subplots_adjust(left=0.08, right=0.66, bottom=0.11, top=0.89)     # fixed (legend at the right): no layout pass
    ax = axes[0, 0]
    peak = max(c.value for c in r.compute)
    lo_i, hi_i = 1 / 64, 1024.0
    xs = np.logspace(np.log10(lo_i), np.log10(hi_i), 200)
    styles = {"HBM": "#1f5fa8", "L2": "#2ca02c", "shared": "#9467bd"}
    for c in r.memory:
        ys = np.minimum(xs * c.value, peak)
        ax.plot(xs, ys / 1e12, color=styles.get(c.name, "0.3"), linewidth=1.4,
                label=f"{c.name} {c.value / 1e12:.2f} TB/s")
    for c, ls in zip(r.compute, ("-", "--", ":", "-", "--", ":", "-.")):
        tensor = c.name.endswith("tensor")
        ax.axhline(c.value / 1e12, color="#b5651d" if tensor else "black", linestyle=ls, linewidth=1.0,
                   label=f"{c.name} {c.value / 1e12:.1f} {'TOP/s' if c.name.startswith('INT8') else 'TFLOP/s'}")
    note = ""
    if r.flops is not None:
        if r.total_flops > 0:
            for level, marker in zip(LEVELS, ("o", "s", "^")):
                i = r.intensity(level)
                if i is None:
                    continue
                name = {"hbm": "HBM", "l2": "L2", "shared": "shared"}[level]
                ax.plot([i], [r.achieved_flops_per_s / 1e12], marker=marker, markersize=8, linestyle="none",
                        color=styles[name], markeredgecolor="black", label=f"{r.kernel} @ {name}: {i:.3g} FLOP/B")
                if r.measured_time_s:
                    ax.plot([i], [r.total_flops / r.measured_time_s / 1e12], marker=marker, markersize=8,
                            linestyle="none", markerfacecolor="none", markeredgecolor=styles[name])
            note = (f"{r.kernel}: {r.total_flops:.3g} FLOP ({r.flops_source}) in {r.time_s * 1e6:.2f} µs = "
                    f"{r.achieved_flops_per_s / 1e12:.3g} TFLOP/s")
            if r.blocks and r.sm_count and r.blocks < r.sm_count:        # a small launch: most SMs stay idle
                share = r.blocks / r.sm_count
                ax.axhline(r.compute[0].value * share / 1e12, color="0.45", linestyle="-.", linewidth=1.0,
                           label=f"FP32 of the {r.blocks} SMs {r.blocks} blocks use")
                note += (f"\n{r.blocks} blocks on {r.sm_count} SMs: {share:.0%} of the GPU can work; "
                         f"{r.fixed_s / r.time_s:.0%} of the time is the launch's fixed overhead")
            if r.measured_time_s:
                note += f"; measured {r.measured_time_s * 1e6:.2f} µs (hollow)"
        else:
            note = f"{r.kernel} executes no floating-point arithmetic: no point on the roofline"
    from matplotlib.ticker import FuncFormatter, NullFormatter  # lazy: matplotlib, only when a figure is drawn
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):                 # plain-text labels: mathtext is most of the drawing time
        axis.set_major_formatter(FuncFormatter(_plain))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo_i, hi_i)
    ymin = min(peak / 1e4, (r.achieved_flops_per_s or peak) / 4) / 1e12
    ax.set_ylim(ymin, peak * 2.5 / 1e12)
    _mpl.minor_marks(ax)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"roofline, {r.gpu}" + (f"\n{note}" if note else ""), fontsize=9, y=1.0)
    ax.grid(True, which="major", alpha=0.25)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    _mpl.save(fig, path)
    return fig


def _plain(v: float, _pos=None) -> str:
    """A log-axis tick as plain text: 1/64 ... 1/2, 1, 2 ... 1024, or 0.001 ... 1000."""
    if v <= 0:
        return ""
    if v < 1:
        inv = 1 / v
        return f"1/{inv:.0f}" if abs(inv - round(inv)) < 1e-6 * inv else f"{v:g}"
    return f"{v:g}"
