"""The L2's atomic units (gpusim/timing/memory/l2_atomics.py): one hardware property per test.
Test spec: _memory_spec (one partition; the unit 1.5 cycles a pass, 512-B granules; passes
on one sector 2.0 cycles apart, float ones 3.5; a far pass holds its near slice 2.5 cycles); the last tests
run small kernels through gpusim.launch."""
import dataclasses

import numpy as np
import pytest
from numba import cuda

import gpusim
from _memory_spec import L2_HIT as L2HIT, SPEC, replace
from gpusim.errors import ConfigError
from gpusim.specs.parts import L2Spec
from gpusim.timing.memory import L2Cache, MemorySystem
from gpusim.timing.memory.l2_atomics import AtomicUnits

PASS = SPEC.l2.atomic_unit_cycles_per_pass           # 1.5
INT = SPEC.l2.atomic_int_sector_interval_cycles      # 2.0
FLOAT = SPEC.l2.atomic_float_sector_interval_cycles  # 3.5
SECTORS_PER_GRANULE = SPEC.l2.atomic_unit_granule_bytes // 32    # 16: 4 lines


def _warm(ms, sectors):
    ms.read(0.0, 0, list(sectors))                    # every sector L2-resident before the atomics


def test_passes_to_different_lines_of_one_512_byte_granule_take_turns():
    ms = MemorySystem(SPEC)
    _warm(ms, [0, 4, 8, 12])
    done = [ms.atomic(2000.0, sm, [4 * sm], reduction=True) for sm in range(4)]    # lines 0..3
    assert [d - done[0] for d in done] == [0.0, PASS, 2 * PASS, 3 * PASS]


def test_passes_to_two_granules_overlap():
    ms = MemorySystem(SPEC)
    _warm(ms, [0, SECTORS_PER_GRANULE])
    done = [ms.atomic(2000.0, sm, [sm * SECTORS_PER_GRANULE], reduction=True) for sm in range(2)]
    assert done[0] == done[1] == 2000.0 + L2HIT + 40


def _span(l2, sectors, rounds=32):
    """Cycles from the first to the last pass start of `rounds` passes on each of `sectors`
    (L2-resident), requests arriving together."""
    l2.read(0.0, list(sectors))
    done = [l2.atomic(2000.0, [s], reduction=True) for _ in range(rounds) for s in sectors]
    return max(done) - min(done)


def test_256_bins_on_8_lines_take_their_passes_two_at_a_time():
    # 256 int32 bins: 32 sectors of 8 lines, 2 granules; one pass a sector a round
    two = _span(L2Cache(SPEC), range(32))
    one = _span(L2Cache(SPEC), range(16))              # the first granule's 16 sectors alone
    assert two == pytest.approx((32 * 32 / 2 - 1) * PASS)
    assert one == pytest.approx((16 * 32 - 1) * PASS)  # half the passes in the same time


def test_integer_passes_on_one_sector_are_the_sector_interval_apart():
    ms = MemorySystem(SPEC)
    _warm(ms, [7])
    done = [ms.atomic(2000.0, sm, [7], reduction=True) for sm in range(10)]
    assert done[-1] - done[0] == pytest.approx(9 * INT)


def test_integer_passes_over_the_sectors_of_a_granule_take_the_unit_interval():
    ms = MemorySystem(SPEC)
    _warm(ms, range(4))
    done = [ms.atomic(2000.0, 0, [k % 4], reduction=True) for k in range(12)]
    assert done[-1] - done[0] == pytest.approx(11 * PASS)


def test_float_passes_on_one_sector_are_the_float_interval_apart():
    ms = MemorySystem(SPEC)
    _warm(ms, [7])
    done = [ms.atomic(2000.0, sm, [7], reduction=True, float_op=True) for sm in range(10)]
    assert done[-1] - done[0] == pytest.approx(9 * FLOAT)


def test_float_passes_hold_their_sector_not_the_unit():
    # round robin over 4 sectors of one granule: a sector's next pass comes 4 turns later
    ms = MemorySystem(SPEC)
    _warm(ms, range(4))
    done = [ms.atomic(2000.0, 0, [k % 4], reduction=True, float_op=True) for k in range(12)]
    assert done[-1] - done[0] == pytest.approx(11 * PASS)


def test_each_pass_counts_one_l2_sector_lookup_and_one_atomic_input_cycle():
    ms = MemorySystem(SPEC)
    ms.atomic(0.0, 0, [7, 8], passes=[3, 1])
    c = ms.counters()
    assert c["lts__t_sectors_op_atom.sum"] == 4
    assert c["lts__d_atomic_input_cycles_active.sum"] == 4


def test_a_pass_holds_its_home_slice_for_the_unit_time_and_a_far_one_its_near_slice_too():
    spec = replace(l2={"partitions": 2})
    l2 = L2Cache(spec)
    lines = range(0, 4000, 4)                          # one line a granule: no two passes wait for each other
    for line in lines:
        l2.atomic(0.0, [4 * line], reduction=True, part=0)
    far = sum(l2.home_of(line) != 0 for line in lines)
    assert 0 < far < len(lines)
    bw = spec.l2.bandwidth_bytes_per_cycle_per_slice
    home, near = spec.l2.atomic_unit_cycles_per_pass * bw, spec.l2.atomic_near_slice_cycles_per_pass * bw
    assert sum(l2.slice_bytes()) == pytest.approx(home * len(lines) + near * far)


def test_sampled_a_granule_only_one_simulated_sm_uses_keeps_its_whole_unit():
    units = AtomicUnits(SPEC, sm_fraction=8 / 132)
    starts = [units.rmw(0.0, 0, k, 1, False, sm=3) for k in range(4)]     # 4 sectors of line 0
    assert np.diff(starts).tolist() == [PASS] * 3


def test_sampled_a_granule_every_simulated_sm_uses_gives_them_their_fraction_of_it():
    units = AtomicUnits(SPEC, sm_fraction=8 / 132)     # 8 of 132 SMs simulated
    for sm in range(8):
        units.rmw(0.0, 0, sm % 4, 1, False, sm=sm)
    a = units.rmw(0.0, 0, 0, 1, False, sm=0)
    b = units.rmw(0.0, 0, 1, 1, False, sm=1)
    assert b - a == pytest.approx(PASS * 132 / 8)


def test_sampled_a_line_the_whole_grid_shares_gives_the_simulated_sms_their_fraction_from_the_first_pass():
    from gpusim.timing.sampling.warming import SharedFootprint
    units = AtomicUnits(SPEC, sm_fraction=8 / 132)
    # one region of 8 lines that 1056 blocks touch 1056 times each: every SM of the GPU on it
    units.footprint = SharedFootprint([0], [8], [8 * 1056], capacity_lines=1e6)
    a = units.rmw(0.0, 0, 0, 1, False, sm=0)
    b = units.rmw(0.0, 0, 1, 1, False, sm=0)
    assert b - a == pytest.approx(PASS * 132 / 8)


# the unit hash (l2.atomic_unit_hash_masks): 256-B granules, unit bit 0 = parity of address bit 8,
# bit 1 = parity of address bits 10 ^ 11; bit 9 enters no mask (validate/data/atomic_units_h200.json)
HASHED = replace(l2={"atomic_unit_granule_bytes": 256, "atomic_unit_hash_masks": (0x100, 0xC00)})


def _pass_starts(spec, byte_addresses):
    """One integer pass on each address (L2-resident, different sectors), all at t = 0."""
    units = AtomicUnits(spec)
    return [units.rmw(0.0, a // 128, a // 32, 1, False) for a in byte_addresses]


@pytest.mark.parametrize("a, b", [(0, 0x200), (0x400, 0x800), (0x100, 0xF00)])
def test_granules_whose_addresses_differ_only_outside_the_hash_masks_share_a_unit(a, b):
    starts = _pass_starts(HASHED, [a, b])
    assert starts[1] - starts[0] == pytest.approx(PASS)


@pytest.mark.parametrize("a, b", [(0, 0x100), (0, 0x400), (0x200, 0x200 + 0x800), (0x100, 0x300 + 0x400)])
def test_granules_whose_addresses_differ_under_a_hash_mask_go_to_different_units(a, b):
    starts = _pass_starts(HASHED, [a, b])
    assert starts[1] == starts[0]


def test_the_hash_decides_how_many_passes_of_a_1_kib_histogram_run_at_once():
    # 1 KiB of bins at 0 (granules 0-3: units 0,1,0,1) takes its passes two at a time; the same
    # bins 512 B further (granules 2-5: units 0,1,2,3) four at a time
    def span(base):
        units = AtomicUnits(HASHED)
        done = [units.rmw(0.0, (base + 256 * g) // 128, (base + 256 * g) // 32 + r % 8, 1, False)
                for r in range(64) for g in range(4)]
        return max(done)
    assert span(0) == pytest.approx((128 - 1) * PASS)
    assert span(512) == pytest.approx((64 - 1) * PASS)


def test_no_hash_masks_keep_every_granule_its_own_unit():
    starts = _pass_starts(replace(l2={"atomic_unit_granule_bytes": 256}), [0, 0x200])
    assert starts[0] == starts[1]


def test_with_a_unit_count_granules_of_one_key_share_a_unit_and_keys_spread_over_every_unit():
    spec = replace(l2={"atomic_unit_granule_bytes": 256, "atomic_unit_hash_masks": tuple(1 << b for b in range(10, 30)),
                       "atomic_units": 5})
    units = AtomicUnits(spec)
    assert units.unit_of_granule(0) == units.unit_of_granule(1) == units.unit_of_granule(2)   # bits 8, 9 in no mask
    seen = {units.unit_of_granule(g << 2) for g in range(200)}
    assert seen == set(range(5))
    starts = _pass_starts(spec, [0x100, 0x200])          # one key: one unit, one pass after the other
    assert starts[1] - starts[0] == pytest.approx(PASS)


def test_hot_granules_spread_over_few_units_take_turns_in_proportion():
    # 64 granules with distinct keys over 4 units: the busiest unit holds at least 16 of them
    spec = replace(l2={"atomic_unit_granule_bytes": 256, "atomic_unit_hash_masks": tuple(1 << b for b in range(8, 30)),
                       "atomic_units": 4})
    units = AtomicUnits(spec)
    load = np.bincount([units.unit_of_granule(g) for g in range(64)], minlength=4)
    done = [units.rmw(0.0, 2 * g, 8 * g, 1, False) for g in range(64)]
    assert max(done) == pytest.approx((load.max() - 1) * PASS)
    assert load.max() >= 16


def test_a_unit_count_without_hash_masks_is_refused():
    with pytest.raises(ConfigError, match="atomic_units"):
        dataclasses.replace(L2Spec(), atomic_unit_granule_bytes=256, atomic_units=80)


@pytest.mark.parametrize("masks", [(0x80,), (0x180,), (-4,), (True,)])
def test_a_hash_mask_with_bits_below_a_granule_or_not_a_positive_mask_is_refused(masks):
    with pytest.raises(ConfigError, match="atomic_unit_hash_masks"):
        dataclasses.replace(L2Spec(), atomic_unit_granule_bytes=256, atomic_unit_hash_masks=masks)


@pytest.mark.parametrize("granule", [64, 768])
def test_an_atomic_granule_below_a_line_or_not_a_power_of_two_is_refused(granule):
    with pytest.raises(ConfigError, match="atomic_unit_granule_bytes"):
        dataclasses.replace(L2Spec(), atomic_unit_granule_bytes=granule)


def test_float_atomics_are_told_from_integer_ones_by_their_sass_type():
    from gpusim.frontend.sass.listing import SassInstr
    from gpusim.timing.static import sass_classifier
    classify = sass_classifier(gpusim.specs.get("h100"))

    def static(text):
        opcode, _, operands = text.partition(" ")
        return classify(0, SassInstr(offset=0, opcode=opcode, text=text, source_line=None, operands=operands), None)

    assert static("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5").float_atomic
    assert static("ATOMG.E.ADD.F64.RN.STRONG.GPU PT, R5, desc[UR4][R4.64], R6").float_atomic
    assert not static("REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R5").float_atomic


@cuda.jit
def _add_at(a, idx):
    cuda.atomic.add(a, idx[cuda.threadIdx.x], 1)


def _passes(idx):
    a = np.zeros(256, np.int32)
    r = gpusim.launch(_add_at, 1, 32, (a, np.asarray(idx, np.int32)), gpu=SPEC, timing=True)
    assert a.sum() == 32
    m = r.metrics
    l1 = sum(m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"] for op in ("atom", "red"))
    assert l1 == m["lts__d_atomic_input_cycles_active.sum"]          # the L1 and the L2 count passes alike
    return l1


@pytest.mark.slow
def test_a_warp_on_8_addresses_of_one_sector_4_lanes_each_takes_4_passes():
    assert _passes([lane % 8 for lane in range(32)]) == 4


@pytest.mark.slow
def test_a_warp_on_32_sectors_one_lane_each_takes_one_pass_a_sector():
    assert _passes([8 * lane for lane in range(32)]) == 32


@pytest.mark.slow
def test_a_sector_takes_as_many_passes_as_the_most_lanes_on_one_of_its_addresses():
    assert _passes([0] * 16 + list(range(1, 8)) * 2 + [1, 2]) == 16     # 16 lanes on word 0, 2-3 on the others
