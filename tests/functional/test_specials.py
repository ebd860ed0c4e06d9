"""The special registers of a batch (gpusim/functional/specials.py), the per-lane arrays the
compiled segments read (`SpecialRegisters.lanes`) and the uniform values. One property per test."""
from types import SimpleNamespace

import numpy as np

from gpusim.functional.geometry import Geometry
from gpusim.functional.specials import SpecialRegisters


def _batch(block_ids, block=(32, 2, 1), grid=(8, 1, 1)):
    geo = Geometry(grid, block)
    wpc = geo.warps_per_block
    x = SimpleNamespace(geo=geo, wpc=wpc, nlanes=len(block_ids) * wpc * 32, block_ids=np.array(block_ids, np.int64),
                        sm_count=132, kernel_name="k", steps=7, lsu=SimpleNamespace(shared_bytes=1024),
                        state=SimpleNamespace(lo=0, hi=len(block_ids) * wpc * 32))
    return SpecialRegisters(x)


def test_per_lane_registers_follow_the_batch_blocks_and_their_threads():
    sr = _batch([5, 6])                          # blocks 5 and 6 of 32 x 2 threads: two warps each
    tid_y, ctaid = sr.lanes("%tid.y"), sr.lanes("%ctaid.x")
    assert tid_y.tolist() == ([0] * 32 + [1] * 32) * 2
    assert ctaid.tolist() == [5] * 64 + [6] * 64 and ctaid.dtype == np.uint32


def test_a_uniform_register_is_one_value_of_the_type_asked():
    v = _batch([0]).read("%nctaid.x", np.dtype(np.uint64))
    assert v == 8 and v.dtype == np.uint64
