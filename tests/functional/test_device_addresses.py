"""`gpusim.launch(device_addresses=...)`: each array argument at the GPU's address modulo the
2-MiB large page (gpusim/functional/memory.py PLACEMENT_PAGE_BYTES), results unchanged, and a
clear LaunchError for what is not a device address list."""
import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim.errors import LaunchError
from gpusim.functional.memory import PLACEMENT_PAGE_BYTES


@cuda.jit
def _add_one(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i] + 1


def _args():
    return np.arange(1000, dtype=np.int32), np.zeros(1000, np.int32)


def _placed(addresses):
    prepared = gpusim.prepare(_add_one, 4, 256, _args(), gpu="h200", device_addresses=addresses)
    return [ranges[0][0] for ranges in prepared.plan.arrays]


def test_each_array_lies_at_its_address_modulo_the_large_page():
    want = [0x7F12_3400_0000, 0x7F12_3460_0A00]
    assert [a % PLACEMENT_PAGE_BYTES for a in _placed(want)] == [w % PLACEMENT_PAGE_BYTES for w in want]


def test_arrays_keep_their_order_and_do_not_overlap_when_placed_on_one_offset():
    first, second = _placed([0x200, 0x200])
    assert second >= first + 4000 and (second - first) % PLACEMENT_PAGE_BYTES == 0


def test_none_leaves_an_array_where_the_heap_would_put_it():
    assert _placed([None, None]) == _placed(None)


def test_placed_arrays_give_the_same_results():
    a, b = _args()
    gpusim.launch(_add_one, 4, 256, (a, b), gpu="h200", device_addresses=[0x300, 0x1_0000])
    assert (b == a + 1).all()


@pytest.mark.parametrize("bad, match", [([0x101], r"device_addresses\[0\] is 257"), ([True], r"is True"),
                                        ([-256], "non-negative"), ("0x200", "must be a sequence"),
                                        ([0, 256, 512], "names 3 addresses, but the launch copies 2 arrays")])
def test_what_is_not_a_device_address_list_is_a_launch_error(bad, match):
    with pytest.raises(LaunchError, match=match):
        gpusim.launch(_add_one, 4, 256, _args(), gpu="h200", device_addresses=bad)
