"""marshal: the `.param` bytes of Numba's kernel ABI, and copy-back of arrays.

The expected values are computed by hand from the ABI table in gpusim/frontend/args.py
(checked against compile_ptx output of numba-cuda 0.30.4 for sm_90)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from gpusim.errors import LaunchError, UnsupportedKernel
from gpusim.frontend.args import marshal
from gpusim.frontend.compile import compile_kernel

pytest.importorskip("isa.parser")


def touch2d(a):
    a[0, 0] = 1


def touch3d(a):
    a[0, 0, 0] = 1


def touch1d(a):
    a[0] = 1


def read1d(out, a):
    out[0] = a[0]


def store(out, v):
    out[0] = v


def store_tuple(out, t):
    out[0] = t[0] + t[1]


def record_kernel(out, r):
    out[0] = r.b
    r.a = 5


def _params(ck, m) -> list[bytes]:
    return [m.params[p.name] for p in ck.kernel.params]


def _u64(chunks: list[bytes]) -> list[int]:
    assert all(len(c) == 8 for c in chunks)
    return [int.from_bytes(c, "little") for c in chunks]


def _run(fn, args, mem):
    ck = compile_kernel(fn, args)
    return ck, marshal(ck, args, mem)


def test_2d_c_float32_array_is_nine_u64_params(fake_mem):
    a = np.zeros((3, 4), np.float32)
    ck, m = _run(touch2d, (a,), fake_mem)
    addr = next(iter(fake_mem.buffers))
    assert [p.type for p in ck.kernel.params] == ["u64"] * 9
    # meminfo, parent, nitems, itemsize, data, shape[2], strides[2] (bytes)
    assert _u64(_params(ck, m)) == [0, 0, 12, 4, addr, 3, 4, 16, 4]


def test_2d_f_float32_array_passes_column_major_strides_and_bytes(fake_mem):
    a = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    ck, m = _run(touch2d, (a,), fake_mem)
    addr = next(iter(fake_mem.buffers))
    assert str(ck.argtypes[0]) == "array(float32, 2d, F)"
    assert _u64(_params(ck, m)) == [0, 0, 12, 4, addr, 3, 4, 4, 12]
    assert fake_mem.device(addr, np.float32, (12,)).tolist() == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]


def test_3d_int8_array_has_eleven_params(fake_mem):
    a = np.zeros((2, 3, 5), np.int8)
    ck, m = _run(touch3d, (a,), fake_mem)
    assert _u64(_params(ck, m))[5:] == [2, 3, 5, 15, 5, 1]


SCALARS = [
    # value, PTX param types, bytes
    (np.int8(-2), ["u8"], [b"\xfe"]),
    (np.uint8(200), ["u8"], [b"\xc8"]),
    (np.int16(-3), ["u16"], [(0xFFFD).to_bytes(2, "little")]),
    (np.uint16(65535), ["u16"], [b"\xff\xff"]),
    (np.int32(-5), ["u32"], [struct.pack("<i", -5)]),
    (np.uint32(4_000_000_000), ["u32"], [struct.pack("<I", 4_000_000_000)]),
    (np.int64(-7), ["u64"], [struct.pack("<q", -7)]),
    (np.uint64(2**64 - 1), ["u64"], [b"\xff" * 8]),
    (7, ["u64"], [struct.pack("<q", 7)]),                       # Python int -> int64
    (np.float16(1.5), ["u16"], [b"\x00\x3e"]),                  # float16 travels as its bits
    (np.float32(1.5), ["f32"], [struct.pack("<f", 1.5)]),
    (1.5, ["f64"], [struct.pack("<d", 1.5)]),                   # Python float -> float64
    (True, ["u8"], [b"\x01"]),
    (np.bool_(False), ["u8"], [b"\x00"]),
    (np.complex64(1 + 2j), ["f32", "f32"], [struct.pack("<f", 1), struct.pack("<f", 2)]),
    (3 - 4j, ["f64", "f64"], [struct.pack("<d", 3), struct.pack("<d", -4)]),   # Python complex -> complex128
]


@pytest.mark.parametrize("value,ptx_types,expected", SCALARS, ids=[f"{type(v).__name__}" for v, _, _ in SCALARS])
def test_scalar_params(fake_mem, value, ptx_types, expected):
    out = np.zeros(1, np.complex128 if isinstance(value, (complex, np.complexfloating)) else np.float64)
    ck, m = _run(store, (out, value), fake_mem)
    params = ck.kernel.params
    assert len(params) == 7 + len(expected)
    assert [p.type for p in params[7:]] == ptx_types
    assert _params(ck, m)[7:] == expected


def test_tuple_is_flattened(fake_mem):
    ck, m = _run(store_tuple, (np.zeros(1), (np.int32(2), 0.5)), fake_mem)
    assert [p.type for p in ck.kernel.params[7:]] == ["u32", "f64"]
    assert _params(ck, m)[7:] == [struct.pack("<i", 2), struct.pack("<d", 0.5)]


def test_non_contiguous_view_is_passed_contiguous_and_copied_back_into_the_view(fake_mem):
    parent = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = parent[::2, 1::2]                         # shape (2, 3), strides (48, 8)
    ck, m = _run(touch2d, (view,), fake_mem)
    assert ck.argtypes[0].layout == "A"
    addr = next(iter(fake_mem.buffers))
    assert _u64(_params(ck, m)) == [0, 0, 6, 4, addr, 2, 3, 12, 4]
    dev = fake_mem.device(addr, np.float32, (2, 3))
    assert dev.tolist() == view.tolist()
    dev[...] = -np.arange(1, 7).reshape(2, 3)        # what the kernel would write
    m.copy_back(fake_mem)
    assert parent[::2, 1::2].tolist() == [[-1, -2, -3], [-4, -5, -6]]
    assert parent[1].tolist() == list(range(6, 12))   # rows outside the view untouched
    assert parent[0, ::2].tolist() == [0, 2, 4]


def test_1d_strided_view_round_trip(fake_mem):
    parent = np.zeros(10, np.int32)
    ck, m = _run(touch1d, (parent[::2],), fake_mem)
    addr = next(iter(fake_mem.buffers))
    assert _u64(_params(ck, m))[5:] == [5, 4]
    fake_mem.device(addr, np.int32, (5,))[...] = [1, 2, 3, 4, 5]
    m.copy_back(fake_mem)
    assert parent.tolist() == [1, 0, 2, 0, 3, 0, 4, 0, 5, 0]


def test_zero_size_array(fake_mem):
    a = np.zeros((0, 3), np.float32)
    ck, m = _run(touch2d, (a,), fake_mem)
    assert _u64(_params(ck, m))[2:4] + _u64(_params(ck, m))[5:] == [0, 4, 0, 3, 12, 4]
    m.copy_back(fake_mem)


def test_readonly_array_is_not_copied_back(fake_mem):
    a = np.ones(4, np.float32)
    a.flags.writeable = False
    out = np.zeros(1, np.float32)
    ck, m = _run(read1d, (out, a), fake_mem)
    assert [host is out for host, _ in m.copyback] == [True]


def test_record_scalar_is_a_pointer_to_a_copy_written_back(fake_mem):
    dt = np.dtype([("a", np.int32), ("b", np.float64)], align=True)
    recs = np.zeros(2, dt)
    recs[1]["b"] = 2.5
    ck, m = _run(record_kernel, (np.zeros(1), recs[1]), fake_mem)
    assert [p.type for p in ck.kernel.params[7:]] == ["u64"]
    addr = _u64(_params(ck, m)[7:])[0]
    dev = fake_mem.device(addr, dt, (1,))
    assert dev[0]["b"] == 2.5
    dev[0]["a"] = 5
    m.copy_back(fake_mem)
    assert recs[1]["a"] == 5 and recs[0]["a"] == 0


def test_argument_count_mismatch_names_both_counts(fake_mem):
    ck = compile_kernel(store, (np.zeros(1), 1.0))
    with pytest.raises(LaunchError, match=r"store takes 2 arguments \(out, v\) but the launch passed 1"):
        marshal(ck, (np.zeros(1),), fake_mem)


def test_array_of_other_rank_than_compiled_is_refused(fake_mem):
    ck = compile_kernel(touch1d, (np.zeros(3),))
    with pytest.raises(UnsupportedKernel, match=r"argument 0 \(a\).*2 dimensions"):
        marshal(ck, (np.zeros((3, 3)),), fake_mem)


@pytest.mark.parametrize("bad,typename", [
    ([1.0, 2.0], "list"),
    ({"a": 1}, "dict"),
    (np.array([1, "x"], dtype=object), "ndarray"),
    ("text", "str"),
    (None, "NoneType"),
])
def test_unpassable_arguments_name_position_name_and_type(bad, typename):
    with pytest.raises(UnsupportedKernel, match=rf"kernel read1d: argument 1 \(a\) of type {typename}"):
        compile_kernel(read1d, (np.zeros(1), bad))


@pytest.mark.parametrize("method", ["Marshalled.copy_back", "plain copyback loop"])
def test_real_device_memory_round_trip_c_f_and_view(method):
    from gpusim.functional.memory import DeviceMemory
    mem = DeviceMemory()
    c = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = np.asfortranarray(c)
    parent = np.arange(10, dtype=np.float32)
    args = (c, f, parent[::2])
    ck = compile_kernel(three_arrays, args)
    m = marshal(ck, args, mem)
    mem.seal()
    view_addr = _u64(_params(ck, m)[2 * 9 + 4:2 * 9 + 5])[0]
    mem.global_heap.read(view_addr, 20).view(np.float32)[...] = [-1, -2, -3, -4, -5]   # the kernel's writes
    if method == "plain copyback loop":
        for host, addr in m.copyback:
            mem.copy_back(addr, host)
    else:
        m.copy_back(mem)
    assert c.tolist() == [[0, 1, 2], [3, 4, 5]] and f.tolist() == c.tolist()
    assert parent.tolist() == [-1, 1, -2, 3, -3, 5, -4, 7, -5, 9]


def three_arrays(a, b, v):
    a[0, 0] = b[0, 0] + v[0]


def test_two_equally_good_explicit_signatures_raise_numbas_ambiguity_message():
    import numpy as np
    import pytest
    from gpusim import cuda

    def add(r, x, y):
        r[0] = x + y

    k = cuda.jit(["(float64[::1], float32, float64)", "(float64[::1], float64, float32)",
                  "(float64[::1], int64, int64)"])(add)
    with pytest.raises(TypeError) as e:
        k[1, 1](np.zeros(1), 1.0, 2.0)
    msg = str(e.value)
    assert "Ambiguous overloading for <function " in msg
    assert "float32, float64) -> none\n" in msg and "float64, float32) -> none" in msg and "int64" not in msg
