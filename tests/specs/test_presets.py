"""The GPU presets, one hardware property per test, each with the number its source gives.

Sources are the tags in gpusim/specs/presets/__init__.py ([H100-WP], [CUDA-PG], [MEAS], ...); the
last tests check that every number there carries one.
"""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from gpusim.specs.interconnect import NCCLSpec, NVLinkSpec, PCIeSpec, SystemSpec

from gpusim.errors import ConfigError
from gpusim.specs import presets
from gpusim.specs.describe import describe, leaves
from gpusim.specs.gpu import GPUSpec
from gpusim.specs.limits import LaunchLimits
from gpusim.specs.tensor import TensorSpec
from gpusim.specs.parts import (ClockSpec, HBMSpec, L1Spec, L2Spec, LaunchSpec, NoCSpec, PipeSpec, PipesSpec,
                                SMSpec)

H100, H200, A100, V100 = presets.H100, presets.H200, presets.A100, presets.V100
KiB, MiB = 1024, 1024 * 1024
# every module of the presets package: (file name, source)
PRESETS_SRCS = [(f.name, f.read_text()) for f in sorted(Path(presets.__file__).parent.glob("*.py"))]


def peak_tflops(spec: GPUSpec, *pipes: str) -> float:
    """FMA = 2 flops, lanes = 32 / issue interval per SMSP, summed over the pipes (0: none)."""
    lanes = sum(32 / spec.sm.pipes.of(p).issue_interval_cycles for p in pipes
                if spec.sm.pipes.of(p).issue_interval_cycles)
    return spec.sm_count * spec.sm.sub_partitions * lanes * 2 * spec.clocks.sm_clock_mhz / 1e6


# ----------------------------------------------------------------------------------- SM counts and clocks

def test_h100_has_132_sms():
    assert H100.sm_count == 132


def test_h200_has_132_sms_like_h100_sxm5():
    assert H200.sm_count == 132


def test_a100_has_108_sms():
    assert A100.sm_count == 108


def test_v100_has_80_sms():
    assert V100.sm_count == 80


def test_h100_sm_clock_is_1980_mhz():
    assert H100.clocks.sm_clock_mhz == 1980.0


def test_a100_boost_clock_is_1410_mhz():
    assert A100.clocks.sm_clock_mhz == 1410.0


def test_v100_boost_clock_is_1530_mhz():
    assert V100.clocks.sm_clock_mhz == 1530.0


def test_h200_compute_is_h100_compute():
    assert (H200.sm, H200.l1, H200.sm_count, H200.clocks.sm_clock_mhz, H200.compute_capability) == \
           (H100.sm, H100.l1, H100.sm_count, H100.clocks.sm_clock_mhz, H100.compute_capability)


# ----------------------------------------------------------------------------------- peak arithmetic rates

@pytest.mark.parametrize("spec, tflops", [(H100, 66.9), (A100, 19.5), (V100, 15.7)])
def test_peak_fp32_matches_the_datasheet(spec, tflops):
    assert peak_tflops(spec, "fmaheavy", "fmalite") == pytest.approx(tflops, abs=0.05)


@pytest.mark.parametrize("spec, tflops", [(H100, 33.5), (A100, 9.7), (V100, 7.8)])
def test_peak_fp64_matches_the_datasheet(spec, tflops):
    assert peak_tflops(spec, "fp64") == pytest.approx(tflops, abs=0.05)


def test_a100_fp32_issues_every_2_cycles_per_smsp():
    assert A100.sm.pipes.fmaheavy.issue_interval_cycles == 2.0     # 16 FP32 lanes per SMSP on GA100


def test_a100_has_no_fmalite_pipe():
    assert A100.sm.pipes.fmalite.issue_interval_cycles == 0.0      # GA100: one FMA pipe for FP32 and IMAD


def test_h100_fp32_has_two_pipes_of_16_lanes():
    assert (H100.sm.pipes.fmaheavy.issue_interval_cycles, H100.sm.pipes.fmalite.issue_interval_cycles) == (2.0, 2.0)


def test_h100_fp64_issues_every_2_cycles_per_smsp():
    assert H100.sm.pipes.fp64.issue_interval_cycles == 2.0     # 16 FP64 lanes per SMSP


def test_v100_fp64_issues_every_4_cycles_per_smsp():
    assert V100.sm.pipes.fp64.issue_interval_cycles == 4.0     # 8 FP64 lanes per SMSP


@pytest.mark.parametrize("spec", [H100, A100, V100], ids=lambda s: s.name)
def test_xu_issues_every_8_cycles_per_smsp(spec):
    assert spec.sm.pipes.xu.issue_interval_cycles == 8.0           # 16 results per clock per SM


def test_h100_lsu_issues_every_4_cycles_per_smsp():
    assert H100.sm.pipes.lsu.issue_interval_cycles == 4.0          # 32 LD/ST units (and shuffles) per SM


# ----------------------------------------------------------------------------------- per-SM limits

@pytest.mark.parametrize("spec, kib", [(H100, 228), (H200, 228), (A100, 164), (V100, 96)], ids=lambda x: str(x))
def test_per_sm_shared_memory(spec, kib):
    assert spec.sm.shared_memory_per_sm_bytes == kib * KiB


@pytest.mark.parametrize("spec, kib", [(H100, 227), (A100, 163), (V100, 96)], ids=lambda x: str(x))
def test_per_block_opt_in_shared_memory(spec, kib):
    assert spec.limits.max_shared_bytes_per_block_optin == kib * KiB


@pytest.mark.parametrize("spec, kib", [(H100, 256), (A100, 192), (V100, 128)], ids=lambda x: str(x))
def test_unified_l1_shared_capacity(spec, kib):
    assert spec.sm.l1_shared_total_bytes == kib * KiB


@pytest.mark.parametrize("spec", [H100, A100, V100], ids=lambda s: s.name)
def test_2048_threads_64_warps_32_blocks_64k_registers_per_sm(spec):
    sm = spec.sm
    assert (sm.max_threads_per_sm, sm.max_warps_per_sm, sm.max_blocks_per_sm, sm.registers_per_sm) == \
           (2048, 64, 32, 65536)


def test_v100_reserves_no_shared_memory_per_block():
    assert V100.sm.reserved_shared_per_block_bytes == 0


def test_a100_reserves_1_kib_of_shared_memory_per_block():
    assert A100.sm.reserved_shared_per_block_bytes == 1024


def test_v100_shared_allocation_unit_is_256_bytes():
    assert V100.sm.shared_allocation_unit_bytes == 256


def test_h100_shared_allocation_unit_is_128_bytes():
    assert H100.sm.shared_allocation_unit_bytes == 128


@pytest.mark.parametrize("spec", list(presets.PRESETS.values()), ids=lambda s: s.name)
def test_largest_carveout_is_the_per_sm_shared_memory(spec):
    assert spec.sm.shared_carveouts_bytes[-1] == spec.sm.shared_memory_per_sm_bytes


def test_h100_driver_picks_the_100_kib_carveout_for_70_kib():
    assert H100.sm.carveout_bytes(70 * KiB) == 100 * KiB


# ----------------------------------------------------------------------------------- caches

@pytest.mark.parametrize("spec, mib", [(H100, 50), (H200, 60), (A100, 40), (V100, 6)], ids=lambda x: str(x))
def test_l2_size(spec, mib):
    assert spec.l2.size_bytes == mib * MiB


def test_h100_l1_hit_latency_is_32_cycles():
    assert H100.l1.hit_latency_cycles == 32


def test_a100_l1_hit_latency_is_33_cycles():
    assert A100.l1.hit_latency_cycles == 33


def test_v100_l1_hit_latency_is_28_cycles():
    assert V100.l1.hit_latency_cycles == 28


def test_h100_l2_hit_latency_is_276_cycles():
    assert H100.l2.hit_latency_cycles == 276


def test_h100_shared_load_latency_is_23_cycles():
    assert H100.sm.shared_latency_cycles == 23


@pytest.mark.parametrize("spec", list(presets.PRESETS.values()), ids=lambda s: s.name)
def test_shared_is_faster_than_l1_faster_than_l2_faster_than_dram(spec):
    dram = spec.l2.hit_latency_cycles + spec.hbm.latency_ns * spec.clocks.sm_clock_mhz / 1000
    assert spec.sm.shared_latency_cycles < spec.l1.hit_latency_cycles < spec.l2.hit_latency_cycles < dram


def test_h100_dram_load_is_680_cycles():
    dram = H100.l2.hit_latency_cycles + H100.hbm.latency_ns * H100.clocks.sm_clock_mhz / 1000
    assert dram == pytest.approx(680.7, abs=2)


def test_a100_l2_reads_5120_bytes_per_cycle():
    assert A100.l2.slices * A100.l2.bandwidth_bytes_per_cycle_per_slice == 5120


# ----------------------------------------------------------------------------------- HBM

@pytest.mark.parametrize("spec, gbps", [(H100, 3352), (H200, 4800), (A100, 2039), (V100, 900)], ids=lambda x: str(x))
def test_hbm_bandwidth(spec, gbps):
    assert spec.hbm.bandwidth_GBps == gbps


@pytest.mark.parametrize("spec", list(presets.PRESETS.values()), ids=lambda s: s.name)
def test_hbm_bandwidth_is_bus_width_times_double_data_rate_within_1_percent(spec):
    ddr = spec.hbm.bus_width_bits / 8 * 2 * spec.clocks.memory_clock_mhz / 1000
    assert ddr == pytest.approx(spec.hbm.bandwidth_GBps, rel=0.01)


@pytest.mark.parametrize("spec, stacks", [(H100, 5), (H200, 6), (A100, 5), (V100, 4)], ids=lambda x: str(x))
def test_hbm_stacks(spec, stacks):
    assert spec.hbm.stacks == stacks


def test_h100_has_160_hbm3_pseudo_channels():
    assert H100.hbm.channels == 5 * 32


def test_h100_moves_1693_hbm_bytes_per_sm_cycle():
    assert H100.hbm_bytes_per_cycle == pytest.approx(3352 / 1.98, rel=1e-9)


def test_h200_has_more_than_139_gib_of_device_memory():
    assert H200.hbm.capacity_bytes > 139 * 1024 ** 3


# ----------------------------------------------------------------------------------- the table itself

def test_get_is_case_insensitive():
    assert presets.get("H100-Datasheet") is H100 and presets.get("H200").name == presets.get("h200").name


def test_get_returns_a_spec_unchanged():
    assert presets.get(A100) is A100


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ConfigError, match="a100, a100-datasheet, h100, h100-datasheet, h100-from-h200, h200, h200-datasheet"):
        presets.get("b200")


ZERO_ALLOWED = {"sm.reserved_shared_per_block_bytes", "sm.shared_carveouts_bytes", "compute_capability",
                "sm.pipes.fmalite.issue_interval_cycles", "sm.pipes.fp16.issue_interval_cycles",   # 0: no such pipe
                "system.switch_latency_ns",                                                            # 0: no switch
                "tensor.tf32_dense_flop_per_cycle_per_sm", "tensor.fp8_dense_flop_per_cycle_per_sm",    # 0: no such
                "tensor.int8_dense_op_per_cycle_per_sm", "tensor.fp64_flop_per_cycle_per_sm",          # tensor type
                "tensor.cp_async_fill_cycles",                                                         # 0: no cp.async
                "l2.atomic_units",                                                                     # 0: a unit per hash key
                "l2.requests_per_cycle_per_slice",                                                     # 0: bytes only
                "l2.fill_cost_bytes_per_byte",                                                         # 0: fills free
                "l2.write_miss_read_wait_ns_per_gline_per_s",                                       # 0: no wait
                "l2.partial_lines_per_slice",                                                          # 0: no limit
                "noc.gpc_merge_window_cycles",                                                         # 0: every read looked up
                "sm.constant_fill_cycles", "sm.parameter_fill_cycles",                                 # 0: the L2 hit
                "sm.parameter_next_fill_cycles",                                                       # latency (fetch.py)
                "clocks.l2_clock_mhz"}                                                                 # 0: the L2 at the SM clock


@pytest.mark.parametrize("spec", list(presets.PRESETS.values()), ids=lambda s: s.name)
def test_every_numeric_field_of_every_preset_is_positive(spec):
    for key, value, _ in leaves(spec):
        nums = value if isinstance(value, tuple) else (value,)
        for v in nums:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and key not in ZERO_ALLOWED:
                assert v > 0, f"{spec.name}: {key} = {v}"


SPEC_CLASSES = {c.__name__: c for c in (GPUSpec, ClockSpec, SMSpec, PipesSpec, PipeSpec, L1Spec, L2Spec,
                                         HBMSpec, NoCSpec, LaunchSpec, LaunchLimits, NVLinkSpec, PCIeSpec,
                                         SystemSpec, NCCLSpec, TensorSpec)}
SPEC_CLASSES["P"] = PipeSpec


def _spec_calls():
    """(file name, its lines, call) for every spec constructor call in the presets package."""
    for name, src in PRESETS_SRCS:
        lines = src.splitlines()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SPEC_CLASSES:
                yield name, lines, node


def test_every_spec_constructor_in_presets_names_every_field():
    for name, _, call in _spec_calls():
        cls = SPEC_CLASSES[call.func.id]
        given = len(call.args) + len(call.keywords)
        assert given == len(dataclasses.fields(cls)), \
            f"presets/{name} line {call.lineno}: {cls.__name__} gets {given} of {len(dataclasses.fields(cls))} fields"


def test_every_preset_field_has_a_citation_comment_in_its_preset_module():
    tags = set(re.findall(r"^- (\[[\w-]+\])", presets.__doc__, re.M))
    assert {"[H100-WP]", "[CUDA-PG]", "[MEAS]", "[Jia18]", "[Abdelkhalik22]"} <= tags
    checked = 0
    for name, lines, call in _spec_calls():
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Call) and getattr(arg.func, "id", None) in SPEC_CLASSES:
                continue                   # a nested parts list: its own fields are checked
            line = lines[arg.lineno - 1]
            comment = line.split("#", 1)[1] if "#" in line else ""
            cited = any(t in comment for t in tags) or "estimate" in comment or "cited above" in comment \
                or "preset name" in comment or "see _" in comment or "where these numbers" in comment
            assert cited, f"presets/{name} line {arg.lineno} has no source: {line.strip()}"
            checked += 1
    assert checked > 250


def test_describe_lists_h100_parts_with_units():
    text = describe(H100)
    assert "sm_count" in text and " 132 " in text
    assert "50 MiB (52428800 B)" in text
    assert "3352 GB/s" in text
    assert "66.9 TFLOP/s" in text
