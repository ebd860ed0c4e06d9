"""The measured L2 atomic-unit hash (gpusim/specs/presets/hopper.py HOPPER_ATOMIC_HASH_MASKS,
[MEAS-ATOM-HASH]) in the Hopper presets, against what the placement probes measured
(data/measurements/atomic_banks_h200.json, atomic_units_h100_run2.json): which 256-B chunks share
a unit; and a launch's histogram on four units or two by where its bins lie."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.specs.presets.hopper import HOPPER_ATOMIC_HASH_MASKS
from gpusim.timing.memory.l2_atomics import AtomicUnits

BASES = [k << 21 for k in (0, 1, 7, 300)] + [0x7000_0000_0000]       # 2-MiB boundaries, gpusim's heap start


@pytest.fixture(scope="module", params=["h100", "h200"])
def units(request):
    spec = gpusim.specs.get(request.param)
    assert (spec.l2.atomic_unit_granule_bytes, spec.l2.atomic_unit_hash_masks) == (256, HOPPER_ATOMIC_HASH_MASKS)
    return AtomicUnits(spec)


def _unit(units, address):
    return units.unit_of_granule(address // 256)


@pytest.mark.parametrize("base", BASES)
def test_chunks_512_bytes_apart_share_a_unit(units, base):
    assert all(_unit(units, base + off) == _unit(units, (base + off) ^ 0x200) for off in range(0, 1 << 16, 256))


@pytest.mark.parametrize("base", BASES)
def test_neighbouring_chunks_never_share_a_unit(units, base):
    # the GPU never put chunks 256 B apart on one unit (atomic_banks_h200: two halves of a 512-B block,
    # 18 offsets; atomic_units_h100_run2: 0 of 1820 pairs)
    assert all(_unit(units, base + off) != _unit(units, base + off + 0x100) for off in range(0, 1 << 16, 512))


@pytest.mark.parametrize("base", BASES)
def test_chunks_differing_in_address_bits_8_12_16_together_share_a_unit(units, base):
    assert all(_unit(units, base + off) == _unit(units, (base + off) ^ 0x11100) for off in range(0, 1 << 16, 256))


@pytest.mark.parametrize("base", BASES)
def test_a_1_kib_histogram_takes_two_units_at_0_mod_1024_and_four_at_512(units, base):
    # atomic_banks_h200: 256 int bins 316 us at offsets 0, 256, 768 mod 1024 and 166 us at 512
    def busiest(off):
        return np.bincount([_unit(units, base + off + 256 * c) for c in range(4)]).max()
    assert [busiest(off) for off in (0, 256, 512, 768)] == [2, 2, 1, 2]


def test_a_page_has_one_unit_per_pair_of_chunks_512_bytes_apart_and_triple_8_12_16(units):
    # the masks' measured invariances only: the unit count (80 on the H100) is not applied
    # (atomic_units 0)
    assert units.units == 0
    assert len({_unit(units, off) for off in range(0, 2 << 20, 256)}) == (2 << 20) // 256 // 4


@cuda.jit
def _histogram(keys, bins):
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(bins, keys[i], 1)


def _histogram_ns(gpu, bins_at):
    keys = np.random.default_rng(0).integers(0, 256, 1 << 17).astype(np.int32)
    bins = np.zeros(256, np.int32)
    r = gpusim.launch(_histogram, keys.size // 256, 256, (keys, bins), gpu=gpu, timing=True,
                      device_addresses=[0, bins_at])
    assert (bins == np.bincount(keys, minlength=256)).all()
    return r.metrics["gpu__time_duration.sum"]


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_a_launchs_1_kib_of_bins_at_512_mod_1024_runs_on_twice_the_units(gpu):
    # atomic_banks_h200: 256 int bins 316 us at 0 mod 1024, 166 us at 512 (1.90x); the held-out
    # hist_global_atomic/bins256 ran with its bins at 512 mod 1024 on both GPUs (arg_addresses)
    ratio = _histogram_ns(gpu, 0) / _histogram_ns(gpu, 0x200)
    assert 1.7 <= ratio <= 2.1
