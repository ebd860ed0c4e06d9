"""A GPU spec as a parts list: every settable field by its dotted key, with its value in
units, its valid range and its one-line description (what `gpusim presets --show h100` prints).

What it does: walks the frozen dataclasses of `GPUSpec` (`schema` for the types, `leaves`
for the values), formats each value by the unit its field name ends in (`_bytes`,
`_mhz`, `_cycles`, `_ns`, `_GBps`, ...), and adds a few derived figures (peak FP32/FP64
rates, HBM and L2 bytes per cycle) that can be checked against the datasheets.
What it does not: validate anything (the dataclasses do) or cite sources (the presets package does).
"""
from __future__ import annotations

import dataclasses
import functools
import typing

from gpusim.specs.gpu import GPUSpec
from gpusim.specs.fields import field_docs, format_range, range_of

NOT_SETTABLE = frozenset({"source"})       # recorded by presets and overrides, not a hardware number


@functools.lru_cache(maxsize=None)
def schema(cls: type = GPUSpec, prefix: str = "") -> dict[str, tuple[type, type, str]]:
    """Dotted key -> (field type, owning dataclass, field name), for every leaf field."""
    out: dict[str, tuple[type, type, str]] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if not prefix and f.name in NOT_SETTABLE:
            continue
        key, typ = prefix + f.name, hints[f.name]
        if dataclasses.is_dataclass(typ):
            out.update(schema(typ, key + "."))
        else:
            out[key] = (typ, cls, f.name)
    return out


@functools.lru_cache(maxsize=None)
def groups(cls: type = GPUSpec, prefix: str = "") -> tuple[str, ...]:
    """Dotted keys that name a sub-spec rather than a value ('sm', 'sm.pipes.fp64')."""
    out: list[str] = []
    for f in dataclasses.fields(cls):
        typ = typing.get_type_hints(cls)[f.name]
        if dataclasses.is_dataclass(typ):
            out.append(prefix + f.name)
            out.extend(groups(typ, prefix + f.name + "."))
    return tuple(out)


def value_at(spec, key: str):
    """The value of dotted `key` in `spec`."""
    for part in key.split("."):
        spec = getattr(spec, part)
    return spec


def leaves(spec: GPUSpec) -> list[tuple[str, object, str]]:
    """(dotted key, value, description) for every settable field of `spec`."""
    return [(key, value_at(spec, key), field_docs(owner).get(name, ""))
            for key, (_, owner, name) in schema().items()]


def _num(v) -> str:
    if isinstance(v, float):
        return f"{v:g}" if abs(v) < 1e6 else f"{v:.6g}"
    return str(v)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % (scale // 16) == 0:
            return f"{_num(n / scale)} {unit}"
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n} B"


_UNITS = (("_bytes_per_cycle_per_slice", "B/cycle/slice"), ("_bytes_per_cycle", "B/cycle"),
          ("_warp_inst_per_cycle", "warp inst/cycle"), ("_mhz", "MHz"), ("_GBps", "GB/s"), ("_ns", "ns"),
          ("_cycles", "cycles"), ("_bits", "bits"), ("_threads", "threads"))


def format_value(key: str, v) -> str:
    """`v` with the unit its key's name ends in ('50 MiB (52428800 B)', '1980 MHz')."""
    if isinstance(v, bool) or isinstance(v, str):
        return str(v)
    if isinstance(v, tuple):
        if key.endswith("_bytes") and all(x % 1024 == 0 for x in v):
            return ", ".join(str(x // 1024) for x in v) + " KiB"
        if key == "compute_capability":
            return ".".join(map(str, v))
        return (" x " if key.endswith("_dims") else ", ").join(map(_num, v))
    for suffix, unit in _UNITS:
        if key.endswith(suffix):
            return f"{_num(v)} {unit}"
    if "_bytes" in key.rsplit(".", 1)[-1]:
        return _size(v) + (f" ({v} B)" if v >= 1024 else "")
    for suffix, unit in _UNITS:
        if key.endswith(suffix):
            return f"{_num(v)} {unit}"
    return _num(v)


def valid_range(key: str) -> str:
    """'[1..1024]' for a bounded field, in the unit its name ends in ('[1..64 MiB]'), else ''."""
    _, owner, name = schema()[key]
    r = range_of(owner, name)
    if r is None:
        return ""
    lo, hi = r
    if "_bytes" in name and isinstance(hi, int) and hi >= 1 << 20:
        return f"[{lo}..{_size(hi)}]"
    unit = next((u for suffix, u in _UNITS if key.endswith(suffix)), "")
    return f"[{format_range(lo, hi)}{' ' + unit if unit else ''}]"


def derived(spec: GPUSpec) -> list[tuple[str, str]]:
    """Figures that follow from the parts list, for checking against datasheets."""
    sm, ghz = spec.sm, spec.clocks.sm_clock_mhz / 1000.0
    lanes = lambda *pipes: sum(32.0 / sm.pipes.of(p).issue_interval_cycles for p in pipes   # noqa: E731
                               if sm.pipes.of(p).issue_interval_cycles > 0)
    peak = lambda *pipes: spec.sm_count * sm.sub_partitions * lanes(*pipes) * 2 * ghz / 1000.0   # noqa: E731
    l2_bpc = spec.l2.slices * spec.in_sm_cycles().l2.bandwidth_bytes_per_cycle_per_slice   # per SM cycle
    ddr_gbps = spec.hbm.bus_width_bits / 8 * 2 * spec.clocks.memory_clock_mhz / 1000
    return [
        ("peak FP32 (FMA = 2 flops)", f"{peak('fmaheavy', 'fmalite'):.1f} TFLOP/s"),
        ("peak FP64 (FMA = 2 flops)", f"{peak('fp64'):.1f} TFLOP/s"),
        ("HBM bandwidth per SM cycle", f"{spec.hbm_bytes_per_cycle:.1f} B/cycle"),
        ("HBM bus x 2 x memory clock", f"{ddr_gbps:.0f} GB/s"),
        ("L2 bandwidth, all slices", f"{l2_bpc:g} B/cycle ({l2_bpc * ghz / 1000:.1f} TB/s)"),
        ("HBM latency in SM cycles", f"{spec.hbm.latency_ns * ghz:.0f} cycles beyond an L2 hit"),
        ("resident threads, whole GPU", f"{spec.sm_count * sm.max_threads_per_sm}"),
    ] + tensor_peaks(spec)


_TENSOR_PEAKS = (("FP16/BF16", "fp16", "TFLOP/s"), ("TF32", "tf32", "TFLOP/s"), ("FP8", "fp8", "TFLOP/s"),
                 ("INT8", "int8", "TOP/s"), ("FP64", "fp64", "TFLOP/s"))


def tensor_peaks(spec: GPUSpec) -> list[tuple[str, str]]:
    """Dense tensor-core peaks (the roofline's tensor ceilings) with where their rates come from."""
    from gpusim.specs import presets     # here, not at the top: presets imports this module
    same = [p.name for p in presets.DATASHEETS.values() if p.tensor == spec.tensor]
    tags = {"[TC-WP]", "[TC-LAT]", "[MEAS-TC]"}
    cited = " ".join(line.strip() for line in _tagged(presets.__doc__, tags))
    source = (f"rates of preset {same[0]}: {cited}" if same else
              "rates not a preset's (a spec file or --set changed them)")
    out = []
    for name, kind, unit in _TENSOR_PEAKS:
        rate = spec.tensor.rate(kind)
        mhz = spec.clocks.sm_clock_mhz if kind == "fp64" else spec.clocks.tensor_mhz   # timing/clock_domain.py
        if rate > 0:
            out.append((f"peak {name} tensor (dense)", f"{spec.sm_count * rate * mhz / 1e6:.1f} {unit} = "
                        f"{spec.sm_count} SMs x {rate:g}/cycle/SM x {mhz:g} MHz"))
    out.append(("tensor sources", source))
    return out


def _tagged(doc: str, tags: set) -> list[str]:
    """The lines of the presets' source list under `tags` ('- [TAG] ...' and its continuation)."""
    out, keep = [], False
    for line in (doc or "").splitlines():
        if line.startswith("- "):
            keep = any(line.startswith(f"- {t}") for t in tags)
        elif not line.startswith("  "):
            keep = False
        if keep:
            out.append(line[2:] if line.startswith("- ") else line)
    return out


def describe(spec: GPUSpec) -> str:
    """A parts-list printout of `spec`: header, one line per dotted key, derived figures."""
    cc = spec.compute_capability
    lines = [f"{spec.name}: {spec.marketing_name} (compute capability {cc[0]}.{cc[1]}, PTX target sm_{cc[0]}{cc[1]})"]
    if spec.source:
        lines.append(f"source: {spec.source}")
    by_group: dict[str, list[str]] = {}
    for key, value, doc in leaves(spec):
        g = key.rsplit(".", 1)[0] if "." in key else "chip"
        rng = valid_range(key)
        by_group.setdefault(g, []).append(f"  {key:<44} {format_value(key, value):<26} {rng:<22} {doc}".rstrip())
    for g in by_group:                     # first-appearance order: a group's scalars stay together
        lines.append(f"[{g}]")
        lines.extend(by_group[g])
    lines.append("(each field: value, [valid range], description; set one with --set KEY=VALUE)")
    lines.append("[derived]")
    lines.extend(f"  {name:<44} {text}" for name, text in derived(spec))
    return "\n".join(lines)
