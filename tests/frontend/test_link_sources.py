"""External device code on the drop-in (gpusim/frontend/externs.py, link.py): a kernel's own
`link=` PTX file and C-ABI functions declared with `declare_device(..., abi="c")`."""
from __future__ import annotations

import numpy as np
import pytest
from numba.cuda import types

from gpusim import cuda

MUTATOR_PTX = """
.version 6.5
.target sm_50
.address_size 64
.visible .func  (.param .b32 func_retval0) array_mutator(.param .b64 p0, .param .b64 p1)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p1];
    ld.u32 %r1, [%rd1+4];
    add.u32 %r1, %r1, 100;
    st.u32 [%rd1], %r1;
    mov.u32 %r2, 0;
    st.param.b32 [func_retval0+0], %r2;
    ret;
}
"""


def test_a_kernels_link_ptx_file_defines_the_function_it_declares(tmp_path):
    path = tmp_path / "mutator.ptx"
    path.write_text(MUTATOR_PTX)
    array_mutator = cuda.declare_device("array_mutator", types.void(types.CPointer(types.int32)))

    import cffi
    ffi = cffi.FFI()

    @cuda.jit(link=[str(path)])
    def mutate_array(x):
        array_mutator(ffi.from_buffer(x))

    x = np.array([0, 7], dtype=np.int32)
    mutate_array[1, 1](x)
    assert x.tolist() == [107, 7]


CONSUME = cuda.CUSource("""
extern "C" __device__ void consume(int *a, int v) { *a = v + 1; }
""")


def test_a_void_c_abi_function_runs_although_numba_declares_a_result():
    consume = cuda.declare_device("consume", types.void(types.CPointer(types.int32), types.int32),
                                  link=CONSUME, abi="c")
    import cffi
    ffi = cffi.FFI()

    @cuda.jit
    def kernel(x):
        i = cuda.grid(1)
        if i < len(x):
            consume(ffi.from_buffer(x[i:]), i * 10)

    x = np.zeros(4, dtype=np.int32)
    kernel[1, 32](x)
    assert x.tolist() == [1, 11, 21, 31]


@cuda.jit
def _plus_one(v):
    return v + 1


@cuda.jit
def _calls_a_kernel(x):
    i = cuda.grid(1)
    if i < len(x):
        x[i] = _plus_one(x[i])


def test_a_kernel_called_from_device_code_lists_that_compile_among_its_signatures():
    x = np.arange(4, dtype=np.int32)
    _calls_a_kernel[1, 32](x)
    assert x.tolist() == [1, 2, 3, 4]
    assert [str(t) for t in _plus_one.signatures[0]] == ["int32"]


CHECKED = cuda.CUSource("""
extern "C" __device__ void __assertfail(const char *, const char *, unsigned, const char *, unsigned long);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, "checked.cu", __LINE__, __func__, 1))
extern "C" __device__ int checked_half(int v) { assert(v % 2 == 0); return v / 2; }
""")


def test_a_failed_c_assert_in_linked_code_stops_the_launch_quoting_it():
    from gpusim.errors import KernelError
    half = cuda.declare_device("checked_half", "int32(int32)", link=CHECKED, abi="c")

    @cuda.jit
    def halve(x):
        i = cuda.grid(1)
        if i < len(x):
            x[i] = half(x[i])

    x = np.array([2, 4, 7, 8], dtype=np.int32)
    with pytest.raises(KernelError, match=r"device-side assert triggered.*thread \(2, 0, 0\).*"
                                          r"checked.cu:4: checked_half: Assertion `v % 2 == 0` failed"):
        halve[1, 4](x)
