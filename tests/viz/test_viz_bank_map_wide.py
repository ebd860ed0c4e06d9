"""The bank map of a wide shared access (LDS.64 / LDS.128 and stores) shows the lane groups
the H200 serves it in and the count Nsight reports (gpusim/viz/bank_map.py,
gpusim/functional/shared_banks.py; data/measurements/wide_shared_h200.json)."""
import numpy as np

from gpusim.viz.bank_map import from_access, wavefronts
from gpusim.viz.capture import WarpAccess


def _access(offsets, nbytes, store=False):
    return WarpAccess(0, 1, "ld.shared.v4.f32", "shared", 0, 0, 0, np.arange(32), np.asarray(offsets, np.uint64),
                      nbytes, store, False)


def test_a_broadcast_ldS128_is_two_wavefronts_one_a_half_warp_and_no_conflict():
    m = from_access(_access(np.zeros(32), 16))
    assert (m.wavefronts, m.bank_conflicts, wavefronts(_access(np.zeros(32), 16))) == (2, 0, 2)
    assert set(m.grid_wavefront[:16][m.grid_wavefront[:16] >= 0].tolist()) == {0}
    assert set(m.grid_wavefront[16:][m.grid_wavefront[16:] >= 0].tolist()) == {1}


def test_its_store_is_four_one_a_quarter_warp():
    m = from_access(_access(np.zeros(32), 16, store=True))
    assert (m.wavefronts, m.bank_conflicts) == (4, 0)


def test_quarter_warps_with_four_words_a_bank_take_sixteen_with_twelve_conflicts():
    lanes = np.arange(32)
    offsets = ((lanes % 4) * 8 + lanes // 4) * 16            # the probe's seq_interleaved
    m = from_access(_access(offsets, 16))
    assert (m.wavefronts, m.bank_conflicts, wavefronts(_access(offsets, 16))) == (16, 12, 16)
