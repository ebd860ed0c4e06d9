"""One measured kernel's prediction: the record of a measurement file (`data/measurements/`) rebuilt
as its launch (`build_case`), run through `gpusim.launch(timing=True)` on a GPU spec with what
Nsight's measurement adds to each kernel (`measurement_environment`) and at the chosen SM clock
(`observed_clock_mhz`), into a `Row` of measured and predicted metrics. `validate compare`
(`validate/compare.py`) runs it over a file; `validate/figures.py` sums the rows up.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass, field

import gpusim
from gpusim.errors import GpusimError
from gpusim.specs.presets import GPUS
from gpusim.timing.engine import TimingOptions
from validate.datadir import DATA_DIR
from validate.suites import spec_of

DURATION = "gpu__time_duration.sum"
COUNTERS = ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum", "dram__bytes_read.sum",
            "dram__bytes_write.sum", "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__cycles_elapsed.max")
# the tensor set's own counters (validate.ncu.TENSOR_METRICS that the model predicts)
TENSOR_COUNTERS = ("smsp__inst_executed_op_ldsm.sum", "smsp__inst_executed_op_ldgsts.sum",
                   "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum")


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
# the key of a record that names its suite (a record with none of them is a microbenchmark's)
KINDS = ("program", "heldout", "heldout2", "mechanism", "tensor")


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
    """The launch (`Case`) of measurement record `k`, rebuilt from its suite, name, size and seed."""
    kind = next((key for key in KINDS if key in k), "microbenchmark")
    return spec_of(kind, k[kind]).case(k["size"], seed=k.get("seed", 0))


REPLAY_FILE = DATA_DIR / "ncu_replay.json"


ENVIRONMENT = ("l2_dirty_bytes_at_launch", "background_dram_write_bytes_per_s", "background_l2_write_sectors_per_s")


def measurement_environment(data: dict) -> dict:
    """What Nsight's measurement adds to each kernel of a measurement file, as TimingOptions
    fields (`data/measurements/ncu_replay.json`, measured by `benchmarks/ncu_dirty_probe.py` on
    that GPU): the dirty L2 data its kernel replay leaves before the kernel, and the writes
    from outside the kernel while it runs; empty for a GPU without a probe."""
    short = data.get("provenance", {}).get("gpu_short_name")
    if not REPLAY_FILE.is_file():
        raise GpusimError(f"no {REPLAY_FILE} (what Nsight's replay adds to each measured kernel): set "
                          "GPUSIM_DATA_DIR to a folder that holds it (the repository's data/measurements/ does)")
    gpu = json.loads(REPLAY_FILE.read_text())["gpus"].get(short, {})
    return {k: (int(gpu[k]) if k == "l2_dirty_bytes_at_launch" else float(gpu[k])) for k in ENVIRONMENT if k in gpu}


def predict(k: dict, gpu, environment: dict | None = None, time_limit_s: float | None = None,
            clock_mhz: float | None = None) -> Row:
    """One kernel's prediction; `environment`: what the measurement added to the kernel
    (`measurement_environment`). A launch the model cannot predict (any error, or past
    `time_limit_s`) comes back as a Row with no prediction and the error's line, so that one
    kernel never costs the others theirs. `clock_mhz`: the SM clock to predict at instead of
    the preset's boost or tensor clock (`observed_clock_mhz`). The arrays go where the GPU had
    them where the record has their device addresses (`arg_addresses`: `validate.address_merge`)."""
    kind = next((key for key in KINDS if key in k), "microbenchmark")
    t = time.perf_counter()
    try:
        if clock_mhz:
            mhz = round(clock_mhz, 1)        # what the kernel ran at, tensor instructions or not
            gpu = dataclasses.replace(gpu, clocks=dataclasses.replace(gpu.clocks, sm_clock_mhz=mhz, tensor_clock_mhz=mhz))
        case = build_case(k)
        opts = TimingOptions(**{"mode": "auto", "functional": "sampled", **(environment or {})})
        r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu=gpu, shared_bytes=case.shared_bytes,
                          timing=True, timing_options=opts, time_limit_s=time_limit_s,
                          outputs=kind != "tensor", device_addresses=k.get("arg_addresses"), **case.options)
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
    pred["timing__sampling_settled"] = r.metrics.get("timing__sampling_settled", "")
    return Row(k["name"], kind, k["metrics"], pred,
               time.perf_counter() - t)
