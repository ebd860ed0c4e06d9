"""Where `launch` places array arguments in global memory (gpusim/functional/memory.py)."""
from gpusim.functional.memory import GUARD_BYTES, Heap
from isa.memory_map import GLOBAL_BASE


def test_every_allocation_starts_at_a_512_byte_boundary_as_the_drivers_do():
    # a 1-KiB histogram after a 64-KiB input: its first and last 512 B are two aligned blocks
    # (the L2's atomic units serve one such block each, gpusim/timing/memory/l2_atomics.py)
    h = Heap(GLOBAL_BASE, "global")
    addrs = [h.alloc(n, f"a{k}") for k, n in enumerate((65536, 1024, 1, 700))]
    assert [a % 512 for a in addrs] == [0, 0, 0, 0]
    assert addrs[1] - addrs[0] >= 65536 + GUARD_BYTES       # the guard gap stays
