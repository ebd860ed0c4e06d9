"""The Hopper presets' L2 atomic-unit hash against what the placement probes measured
(validate/data/atomic_banks_h200.json, atomic_units_h100_run2.json; gpusim/specs/presets/hopper.py
[MEAS-ATOM-HASH]): which 256-B chunks share a unit."""
import numpy as np
import pytest

import gpusim
from gpusim.timing.memory.l2_atomics import AtomicUnits

BASES = [k << 21 for k in (0, 1, 7, 300)] + [0x7000_0000_0000]       # 2-MiB boundaries, gpusim's heap start


@pytest.fixture(scope="module", params=["h100", "h200"])
def units(request):
    return AtomicUnits(gpusim.specs.get(request.param))


def _unit(units, address):
    return units.unit_of_granule(address // 256)


@pytest.mark.parametrize("base", BASES)
def test_chunks_512_bytes_apart_share_a_unit(units, base):
    assert all(_unit(units, base + off) == _unit(units, (base + off) ^ 0x200) for off in range(0, 1 << 16, 256))


def test_neighbouring_chunks_almost_never_share_a_unit(units):
    # the GPU never put chunks 256 B apart on one unit (atomic_banks_h200: two halves of a 512-B block,
    # 18 offsets; atomic_units_h100_run2: 1820 pairs); the model's mixer does so 1 time in `units`
    pairs = [(b + off, b + off + 0x100) for b in range(0, 64 << 16, 1 << 16) for off in range(0, 1 << 16, 1024)]
    shared = sum(_unit(units, a) == _unit(units, b) for a, b in pairs)
    assert shared <= 2 * len(pairs) / units.units


@pytest.mark.parametrize("base", BASES)
def test_chunks_differing_in_address_bits_8_12_16_together_share_a_unit(units, base):
    assert all(_unit(units, base + off) == _unit(units, (base + off) ^ 0x11100) for off in range(0, 1 << 16, 256))


def test_a_1_kib_histogram_takes_two_units_at_0_mod_1024_and_four_at_512(units):
    # atomic_banks_h200: 256 int bins 316 us at offsets 0, 256, 768 mod 1024 and 166 us at 512
    # (the model: at 0, 256, 768 at least two, by bit 9, and two unless its mixer pairs the two pairs;
    # at 512 one unless it pairs two of the four)
    def busiest(base, off):
        return np.bincount([_unit(units, base + off + 256 * c) for c in range(4)]).max()
    bases = [k << 16 for k in range(256)]
    assert all(busiest(b, off) >= 2 for b in bases for off in (0, 256, 768))
    assert sum([busiest(b, off) for off in (0, 256, 512, 768)] == [2, 2, 1, 2] for b in bases) >= 0.9 * len(bases)


def test_the_units_a_page_uses_are_the_preset_count(units):
    seen = {_unit(units, off) for off in range(0, 2 << 20, 256)}
    assert len(seen) == units.units
