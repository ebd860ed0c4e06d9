"""Which spec fields a sweep may replay a recorded functional run for, and which it refuses.

Replayable (the default for every field): a field that cannot change what a kernel
executes or which addresses it touches: latencies, bandwidths, SM count, clocks, cache
sizes and associativities, occupancy limits, pipes, the warp scheduler, the launch and
interconnect figures. The timing model reads them; the functional core never does.

Functional (`FUNCTIONAL`): a field the functional core reads, so a point that changes it
executes the kernel again (its recording is keyed by these values):
- `compute_capability`: the PTX target and the SASS ptxas makes of it;
- `sm.shared_banks`, `sm.shared_bank_width_bytes`: the wavefronts of every shared access;
- `l1.sector_bytes`, `l2.sector_bytes`: the sectors of every global access (the memory
  model refuses anything but 32 today, `REFUSED`);
- `sm_count` for a kernel that reads `%smid` or `%nsmid` (its values depend on it).

Refused (`REFUSED`): fields the model does not honour beyond one value. A sweep checks every
point against these before any work starts, so a sweep never reports a field it ignored.
"""
from __future__ import annotations

from gpusim.errors import ConfigError
from gpusim.specs.describe import value_at

FUNCTIONAL = ("compute_capability", "sm.shared_banks", "sm.shared_bank_width_bytes", "l1.sector_bytes",
              "l2.sector_bytes")
SMID_FIELDS = ("sm_count",)                  # functional for kernels that read %smid / %nsmid

# key -> (the only value the model honours, why)
REFUSED = {
    "l1.sector_bytes": (32, "the L1/L2 models and the functional core's sector streams use 32-byte sectors "
                            "(byte masks are 32 bits)"),
    "l2.sector_bytes": (32, "the L1/L2 models and the functional core's sector streams use 32-byte sectors "
                            "(byte masks are 32 bits)"),
    "limits.warp_size_threads": (32, "the SIMT core is 32 lanes wide"),
    "clocks.memory_clock_mhz": (None, "informational: HBM timing comes from hbm.bandwidth_GBps and the hbm.t_*_ns "
                                      "fields"),
    "marketing_name": (None, "a label, not a hardware number"),
}


def reads_smid(prepared) -> bool:
    ptx = prepared.compiled.ptx
    return "%smid" in ptx or "%nsmid" in ptx


def functional_key(spec, prepared=None) -> tuple:
    """The values of the fields that change functional results, for the recording's key."""
    keys = FUNCTIONAL + (SMID_FIELDS if prepared is not None and reads_smid(prepared) else ())
    return tuple((k, value_at(spec, k)) for k in keys)


def check_varied(key: str, values, base) -> None:
    """ConfigError if a sweep varies `key` over `values` though the model does not honour it."""
    if key not in REFUSED:
        return
    only, why = REFUSED[key]
    if only is None:
        raise ConfigError(f"{key} cannot be swept: it changes nothing the model predicts ({why})")
    bad = [v for v in values if v != only]
    if bad:
        raise ConfigError(f"{key}={bad[0]} is not modelled: only {only} is ({why})")
