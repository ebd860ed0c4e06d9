"""The tensor pipe's spec fields (specs/tensor.py) as the SM's issue loop honours them
(timing/tensor_pipe.py): synthetic SASS streams through one SM, each field varied and the
time it takes moving the right way (the group waits of wgmma and cp.async:
test_async_groups.py; real kernels: test_cp_async_pipeline.py)."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from gpusim import specs
from gpusim.errors import ConfigError
from gpusim.frontend.sass.listing import SassInstr
from gpusim.timing import tensor_pipe
from gpusim.timing.engine import TimingStats
from gpusim.timing.sm import SM
from gpusim.timing.static import IssueProgram, sass_classifier

H100 = specs.get("h100")


def _instr(i: int, text: str) -> SassInstr:
    opcode, _, operands = text.partition(" ")
    return SassInstr(offset=16 * i, opcode=opcode, text=text, source_line=None, operands=operands.strip())


def run_stream(texts, spec=H100, warps=1) -> float:
    """Cycles one SM takes to issue `texts` (SASS lines) in each of `warps` warps of one block."""
    classify = sass_classifier(spec)
    statics = tuple(classify(i, _instr(i, t), None) for i, t in enumerate(texts))
    program = IssueProgram((statics,), {0: 0}, {}, np.zeros(len(texts), dtype=np.int64), len(texts))
    stats = TimingStats(len(texts))
    done = []
    sm = SM(0, spec, program, None, stats, lambda sm, block, t: done.append(t))
    streams = [SimpleNamespace(visits=[(0, None, {})], warp_in_block=w, local_sectors=0, gid=w)
               for w in range(warps)]
    sm.add_cta(0, streams, 0.0)
    sm.advance(1e9)
    assert done, "the block did not finish"
    return done[0]


def per_instruction(make, spec=H100, n=32) -> float:
    """Cycles each further instruction adds: the time of 2n of `make(k)`'s less that of n
    (the cold instruction cache and the last result's latency cancel out)."""
    return (run_stream(make(2 * n), spec) - run_stream(make(n), spec)) / n


def with_tensor(spec=H100, **kw):
    return dataclasses.replace(spec, tensor=dataclasses.replace(spec.tensor, **kw))


def independent(op: str, n: int = 64) -> list[str]:
    """n instructions writing different accumulators (no dependency between them)."""
    return [f"{op} R{8 * (i % 16) + 128}, R4, R6, R{8 * (i % 16) + 128}" for i in range(n)]


def chain(op: str, n: int = 32) -> list[str]:
    return [f"{op} R16, R4, R6, R16" for _ in range(n)]


def test_mma_sync_issue_interval_is_the_shape_s_flops_over_the_sub_partition_s_share():
    # HMMA m16n8k16: 4096 FLOP; H100 4096 FLOP/cycle/SM over 4 SMSPs, of which mma.sync reaches 0.66
    # (measured): one per 4 / 0.66 = 6.06 cycles
    assert per_instruction(lambda n: independent("HMMA.16816.F32", n)) == pytest.approx(4.0 / 0.66, abs=0.5)


def test_mma_sync_reaches_the_whole_rate_when_its_fraction_is_one():
    full = per_instruction(lambda n: independent("HMMA.16816.F32", n), with_tensor(warp_mma_rate_fraction=1.0))
    assert full == pytest.approx(4.0, abs=0.5)


@pytest.mark.parametrize("op, field", [("HMMA.16816.F32", "fp16_dense_flop_per_cycle_per_sm"),
                                       ("HMMA.16816.F32.BF16", "fp16_dense_flop_per_cycle_per_sm"),
                                       ("HMMA.1684.F32.TF32", "tf32_dense_flop_per_cycle_per_sm"),
                                       ("HMMA.16832.F32.E4M3.E4M3", "fp8_dense_flop_per_cycle_per_sm"),
                                       ("IMMA.16832.S8.S8", "int8_dense_op_per_cycle_per_sm"),
                                       ("DMMA.884", "fp64_flop_per_cycle_per_sm")])
def test_halving_a_type_s_tensor_throughput_slows_a_stream_of_its_instructions(op, field):
    base = per_instruction(lambda n: independent(op, n))
    slow = per_instruction(lambda n: independent(op, n), with_tensor(**{field: getattr(H100.tensor, field) / 2}))
    assert slow == pytest.approx(2 * base, rel=0.05)


def test_a_dependent_mma_chain_takes_the_mma_latency_per_link():
    t = run_stream(chain("HMMA.16816.F32", 32))
    lat = H100.tensor.mma_latency_cycles
    longer = run_stream(chain("HMMA.16816.F32", 32), with_tensor(mma_latency_cycles=2 * lat))
    # every one of the 31 waits `lat` cycles more, in whole cycles (the issue loop's unit)
    assert longer - t == pytest.approx(31 * lat, abs=31 * 0.5 + 1)


def gmma(shape: str, n: int, sets: int = 4, a="R8") -> list[str]:
    """n wgmmas over `sets` accumulators of 32 registers (A from registers, or `a='gdesc'`)."""
    return [f"HGMMA.{shape}.F32 R{64 + 32 * (i % sets)}, {'gdesc[UR4]' if a == 'gdesc' else a + ', gdesc[UR8]'}, "
            f"R{64 + 32 * (i % sets)}" for i in range(n)]


def test_wgmma_interval_is_a_quarter_of_the_warpgroup_s_flops_and_falls_with_the_fp16_rate():
    # 64x64x16: 131072 FLOP per warpgroup, a quarter per warp at 1024 FLOP/cycle per SMSP: 32 cycles
    assert per_instruction(lambda n: gmma("64x64x16", n)) == pytest.approx(32.0, abs=0.5)
    fast = per_instruction(lambda n: gmma("64x64x16", n), with_tensor(fp16_dense_flop_per_cycle_per_sm=8192.0))
    assert fast == pytest.approx(16.0, abs=0.5)     # chained accumulations wait for the pipe, not the latency


def test_wgmma_with_operands_from_shared_memory_slows_when_their_bandwidth_shrinks():
    # A and B from shared: (64x16 + 64x16) x 2 B / 4 warps = 1024 B per warp instruction
    base = per_instruction(lambda n: gmma("64x64x16", n, a="gdesc"))
    slow = per_instruction(lambda n: gmma("64x64x16", n, a="gdesc"), with_tensor(shared_operand_bytes_per_cycle_per_sm=64.0))
    assert (base, slow) == (pytest.approx(32.0, abs=0.5), pytest.approx(64.0, abs=0.5))


def test_wgmma_latency_field_delays_the_consumer_of_its_accumulator():
    ops = ["HGMMA.64x128x16.F32 R24, gdesc[UR4], R24, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "FADD R200, R24, R25"]
    base = run_stream(ops)
    later = run_stream(ops, with_tensor(wgmma_latency_cycles=256.0))
    assert later - base == pytest.approx(256.0 - H100.tensor.wgmma_latency_cycles, abs=2)


def test_ldmatrix_x4_is_spaced_by_its_bytes_through_the_operand_bandwidth():
    def ops(n):
        return [f"LDSM.16.M88.4 R{4 * (i % 32) + 8}, [R2+{hex(512 * i)}]" for i in range(n)]
    base = per_instruction(ops)
    slow = per_instruction(ops, with_tensor(shared_operand_bytes_per_cycle_per_sm=32.0))
    # 512 B through the SM's whole operand bandwidth (one sub-partition's LDSMs alone): 128 / 32 B per cycle
    assert (base, slow) == (pytest.approx(4.0, abs=0.5), pytest.approx(16.0, abs=0.5))


def test_a_type_without_throughput_on_the_spec_is_refused():
    a100 = specs.get("a100")
    with pytest.raises(ConfigError, match="fp8.*no fp8 tensor throughput"):
        run_stream(["QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24"], a100)


@pytest.mark.parametrize("opcode, shape", [("HMMA.16816.F32", (16, 8, 16)), ("HMMA.1684.F32.TF32", (16, 8, 4)),
                                           ("HMMA.884.F32.F32.STEP0", (8, 8, 4)), ("IMMA.8816.S8.S8", (8, 8, 16)),
                                           ("IMMA.16864.S4.S4", (16, 8, 64)),
                                           ("HGMMA.64x256x16.F32.BF16", (64, 256, 16))])
def test_shapes_are_read_from_the_opcode(opcode, shape):
    parts = opcode.split(".")
    assert tensor_pipe.mma_shape(parts[0], parts[1:]) == shape


def test_hgmma_latency_at_the_reference_shape_is_the_spec_field():
    interval, latency = tensor_pipe.timing(_instr(0, "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24"), H100.tensor, 4, 4.0)
    assert (interval, latency) == (64.0, H100.tensor.wgmma_latency_cycles)
    assert math.isclose(tensor_pipe.timing(_instr(0, "HMMA.16816.F32 R4, R8, R12, R4"), H100.tensor, 4, 4.0)[1],
                        H100.tensor.mma_latency_cycles)
