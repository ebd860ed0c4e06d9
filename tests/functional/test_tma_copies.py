"""Bulk copies and tensor-map copies (TMA) on the functional core (gpusim.functional.bulk_ops),
from CUDA C++ kernels with inline PTX. One property per test."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import KernelError, MemoryAccessError, UnsupportedKernel

HELPERS = r"""
typedef unsigned long long u64;
typedef unsigned int u32;
struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };
__device__ __forceinline__ u32 sm(const void* p) { return (u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void init(u32 bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void expect(u32 bar, u32 n) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(n) : "memory");
}
__device__ __forceinline__ void wait0(u32 bar) {
    u32 done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar) : "memory");
    } while (!done);
}
"""

BULK = HELPERS + r"""
extern "C" __global__ void bulk(const float* src, float* out, float* back, int nbytes, int early) {
    __shared__ __align__(128) float buf[256];
    __shared__ __align__(8) u64 bar;
    const u32 b = sm(&bar), s = sm(buf);
    if (threadIdx.x == 0) init(b);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (!early) expect(b, nbytes);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(s), "l"(src), "r"(nbytes), "r"(b) : "memory");
        if (early) expect(b, nbytes);             // the bytes land before the expect_tx: tx goes negative
    }
    wait0(b);
    if (threadIdx.x * 4 < nbytes) out[threadIdx.x] = buf[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(back), "r"(s), "r"(nbytes)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"""


def run_bulk(nbytes=512, early=0, src=None, **kw):
    src = np.arange(256, dtype=np.float32) + 1 if src is None else src
    out, back = np.zeros(256, np.float32), np.zeros(256, np.float32)
    r = gpusim.launch(gpusim.CudaSource(BULK, "bulk"), 1, 128, (src, out, back, np.int32(nbytes), np.int32(early)),
                      gpu="h100", **kw)
    return src, out, back, r


def test_bulk_copy_lands_before_the_mbarrier_phase_completes():
    src, out, _, _ = run_bulk()
    assert out[:128].tolist() == src[:128].tolist()


def test_bytes_landing_before_expect_tx_still_complete_the_phase():
    src, out, _, _ = run_bulk(early=1)
    assert out[:128].tolist() == src[:128].tolist()


def test_bulk_store_writes_global_memory():
    src, _, back, _ = run_bulk(nbytes=1024)
    assert back.tolist() == src.tolist()


def test_bulk_copy_counters():
    _, _, _, r = run_bulk(nbytes=512)
    m = r.metrics
    assert (m["smsp__sass_inst_executed_op_tma_ld.sum"], m["smsp__sass_inst_executed_op_tma_st.sum"],
            m["l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld.sum"],
            m["l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"]) == (1, 1, 16, 512)


def test_bulk_size_must_be_a_multiple_of_16():
    with pytest.raises(KernelError, match=r"bad bulk copy size in kernel bulk.*size 40 bytes"):
        run_bulk(nbytes=40)


def test_bulk_copy_past_the_array_is_an_out_of_bounds_fault():
    with pytest.raises(MemoryAccessError, match=r"out-of-bounds address in global memory in kernel bulk, at .*:\d+"):
        run_bulk(nbytes=1024, src=np.zeros(200, np.float32))


def test_memcheck_reports_the_bulk_copy_past_the_array():
    _, _, _, r = run_bulk(nbytes=1024, src=np.zeros(200, np.float32), check="memcheck")
    assert [(h.tool, h.kind) for h in r.hazards] == [("memcheck", "out-of-bounds")]


BOX = HELPERS + r"""
extern "C" __global__ void box2d(const __grid_constant__ CUtensorMap map, float* out, int c0, int c1, int shift) {
    extern __shared__ __align__(1024) unsigned char raw[];
    __shared__ __align__(8) u64 bar;
    const u32 b = sm(&bar), s = sm(raw) + shift;
    if (threadIdx.x == 0) init(b);
    __syncthreads();
    if (threadIdx.x == 0) {
        expect(b, 16 * 8 * 4);
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(s), "l"(reinterpret_cast<u64>(&map)), "r"(c0), "r"(c1), "r"(b) : "memory");
    }
    wait0(b);
    out[threadIdx.x] = reinterpret_cast<const float*>(raw + shift)[threadIdx.x];
}
"""


def run_box(tmap=None, c=(4, 2), shift=0, **kw):
    a = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    tmap = gpusim.TensorMap(a, box=(16, 8)) if tmap is None else tmap
    out = np.zeros(128, np.float32)
    gpusim.launch(gpusim.CudaSource(BOX, "box2d"), 1, 128, (tmap, out, np.int32(c[0]), np.int32(c[1]),
                                                            np.int32(shift)), gpu="h100", shared_bytes=4096, **kw)
    return a, out


def test_tensor_copy_loads_the_box_at_its_coordinates():
    a, out = run_box()
    assert out.tolist() == a[2:10, 4:20].ravel().tolist()


def test_tensor_map_through_a_pointer_parameter():
    src = BOX.replace("const __grid_constant__ CUtensorMap map", "const CUtensorMap* mapp").replace(
        "&map", "mapp")
    a = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    out = np.zeros(128, np.float32)
    gpusim.launch(gpusim.CudaSource(src, "box2d"), 1, 128, (gpusim.TensorMap(a, box=(16, 8)), out, np.int32(0),
                                                            np.int32(0), np.int32(0)), gpu="h100", shared_bytes=4096)
    assert out.tolist() == a[0:8, 0:16].ravel().tolist()


def test_tensor_map_of_a_view_addresses_the_viewed_block():
    big = np.arange(48 * 80, dtype=np.float32).reshape(48, 80)
    view = big[8:32, 16:56]                          # a 24 x 40 block: row stride 320 bytes
    _, out = run_box(gpusim.TensorMap(view, box=(16, 8)))
    assert out.tolist() == view[2:10, 4:20].ravel().tolist()


def test_shared_box_must_be_128_byte_aligned():
    with pytest.raises(MemoryAccessError, match=r"misaligned.*multiple of 128"):
        run_box(shift=64)


def test_box_starting_off_16_bytes_is_an_illegal_instruction():
    with pytest.raises(KernelError, match=r"illegal instruction \(misaligned tensor copy\) in kernel box2d, at .*:\d+ "
                                          r".*block \(0, 0, 0\), thread \(0, 0, 0\).*byte 20 of its row"):
        run_box(c=(5, 2))


def test_negative_aligned_start_fills_the_columns_left_of_the_tensor():
    a, out = run_box(c=(-4, 2))
    assert out[:16].tolist() == [0.0] * 4 + a[2, 0:12].tolist()


def test_memcheck_reports_a_misaligned_tensor_copy_as_an_illegal_instruction():
    a = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    r = gpusim.launch(gpusim.CudaSource(BOX, "box2d"), 1, 128, (gpusim.TensorMap(a, box=(16, 8)), np.zeros(128, np.float32),
                                                                np.int32(6), np.int32(0), np.int32(0)),
                      gpu="h100", shared_bytes=4096, check="memcheck")
    assert [(h.tool, h.kind) for h in r.hazards] == [("memcheck", "illegal instruction")]


@pytest.mark.parametrize("make, words", [
    (lambda a: gpusim.TensorMap(a.reshape(-1)[2:26], box=(8,), dims=(24,)), "not 16-byte aligned"),
    (lambda a: gpusim.TensorMap(a, box=(16, 300)), "box size 300"),
    (lambda a: gpusim.TensorMap(a, box=(16, 8), strides=(152,)), "stride 152 bytes"),
])
def test_bad_tensor_map_names_kernel_and_line(make, words):
    a = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    with pytest.raises(KernelError, match=rf"invalid tensor map in kernel box2d, at .*:\d+ .*{words}"):
        run_box(make(a))


def test_bytes_that_are_not_a_tensor_map_are_refused():
    with pytest.raises(KernelError, match="not a tensor map"):
        run_box(np.zeros(16, np.uint64).view(np.dtype((np.void, 128)))[0])


def test_unmodelled_interleave_is_refused():
    a = np.zeros((4, 6, 40), np.float16)
    with pytest.raises(UnsupportedKernel, match="interleaved layouts"):
        run_box(gpusim.TensorMap(a, box=(8, 4, 2), interleave="16B"), c=(0, 0))


def test_initcheck_sees_the_bytes_a_tensor_copy_writes():
    a = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    out = np.zeros(128, np.float32)
    r = gpusim.launch(gpusim.CudaSource(BOX, "box2d"), 1, 128, (gpusim.TensorMap(a, box=(16, 8)), out, np.int32(0),
                                                                np.int32(0), np.int32(0)),
                      gpu="h100", shared_bytes=4096, check="initcheck")
    assert r.hazards == []


BOX5 = HELPERS + r"""
extern "C" __global__ void box5(const __grid_constant__ CUtensorMap map, float* out) {
    __shared__ __align__(128) float box[64];
    __shared__ __align__(8) u64 bar;
    const u32 b = sm(&bar), s = sm(box);
    if (threadIdx.x == 0) { init(b); expect(b, 256); }
    __syncthreads();
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                     "[%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                     :: "r"(s), "l"(reinterpret_cast<u64>(&map)), "r"(4), "r"(1), "r"(1), "r"(1), "r"(1), "r"(b)
                     : "memory");
    wait0(b);
    out[threadIdx.x] = box[threadIdx.x];
}
"""


def test_five_dimensional_box():
    a = np.arange(2 * 3 * 4 * 5 * 16, dtype=np.float32).reshape(2, 3, 4, 5, 16)
    out = np.zeros(64, np.float32)
    gpusim.launch(gpusim.CudaSource(BOX5, "box5"), 1, 64, (gpusim.TensorMap(a, box=(8, 2, 2, 2, 1)), out), gpu="h100")
    assert out.tolist() == a[1:2, 1:3, 1:3, 1:3, 4:12].ravel().tolist()
