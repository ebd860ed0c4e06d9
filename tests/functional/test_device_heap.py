"""The device heap behind PTX's `malloc`/`free` system calls (gpusim/functional/syscalls.py)."""
from __future__ import annotations

from gpusim.functional.syscalls import ALIGN_BYTES, HEAP_BYTES, DeviceHeap

BASE = 0x7000_0000


def test_default_heap_is_cudas_8_mib():
    assert HEAP_BYTES == 8 * 1024 * 1024


def test_malloc_returns_16_byte_aligned_addresses():
    h = DeviceHeap(BASE, 4096)
    addrs = [h.malloc(n) for n in (1, 3, 40, 17, 0)]
    assert [a % ALIGN_BYTES for a in addrs] == [0] * 5
    assert addrs[1] - addrs[0] == 16 and addrs[3] - addrs[2] == 48


def test_a_freed_block_is_reused_by_the_next_request_of_its_size():
    h = DeviceHeap(BASE, 4096)
    a = h.malloc(100)
    h.malloc(100)
    assert h.free(a)
    assert h.malloc(112) == a


def test_a_request_that_does_not_fit_gets_none():
    h = DeviceHeap(BASE, 256)
    assert h.malloc(200) is not None
    assert h.malloc(64) is None


def test_a_larger_freed_block_is_split_when_the_top_is_exhausted():
    h = DeviceHeap(BASE, 256)
    a = h.malloc(256)
    h.free(a)
    assert h.malloc(64) == a and h.malloc(64) == a + 64


def test_free_of_a_pointer_malloc_did_not_return_is_refused():
    h = DeviceHeap(BASE, 256)
    a = h.malloc(16)
    assert not h.free(a + 16)
    assert h.free(a) and not h.free(a)
