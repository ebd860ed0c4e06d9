"""Thread-block clusters on the functional core (gpusim.functional.cluster): launch shapes, the
%cluster_* registers, the cluster barrier, distributed shared memory, multicast TMA. One
property per test."""
import numpy as np
import pytest

import gpusim
from gpusim.errors import BarrierError, LaunchError, MemoryAccessError, UnsupportedKernel

DSM = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsm(int* out) {
    __shared__ int buf[64];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned r = cluster.block_rank();
    buf[threadIdx.x] = threadIdx.x + 1000 * r;
    cluster.sync();
    const int* other = cluster.map_shared_rank(buf, (r + 1) % cluster.num_blocks());
    const int v = other[threadIdx.x];
    cluster.sync();                                   // the other block's buffer stays alive until read
    out[blockIdx.x * 64 + threadIdx.x] = v;
}
"""

IDS = r"""
extern "C" __global__ void ids(unsigned* out) {
    unsigned rank, cx, cy, nrank, cidx, cidy;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(cx));
    asm("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(cy));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(cidx));
    asm("mov.u32 %0, %%clusterid.y;" : "=r"(cidy));
    if (threadIdx.x == 0) {
        unsigned* o = out + 6 * (blockIdx.y * gridDim.x + blockIdx.x);
        o[0] = rank; o[1] = cx; o[2] = cy; o[3] = nrank; o[4] = cidx; o[5] = cidy;
    }
}
"""


def test_blocks_of_a_cluster_read_each_others_shared_memory():
    out = np.zeros(4 * 64, np.int32)
    gpusim.launch(gpusim.CudaSource(DSM, "dsm", options=("-std=c++17",)), 4, 64, (out,), gpu="h100")
    partner = np.array([1, 0, 1, 0])                 # rank 0 <-> rank 1 within each cluster
    assert (out.reshape(4, 64) == np.arange(64) + 1000 * partner[:, None]).all()


def test_a_cluster_runs_in_one_batch_however_small_the_batches():
    out = np.zeros(4 * 64, np.int32)
    gpusim.launch(gpusim.CudaSource(DSM, "dsm", options=("-std=c++17",)), 4, 64, (out,), gpu="h100", batch_lanes=32)
    assert out[0] == 1000 and out[64] == 0


def test_cluster_registers_of_a_2x2_cluster():
    out = np.zeros(6 * 16, np.uint32)
    gpusim.launch(gpusim.CudaSource(IDS, "ids"), (4, 4), 32, (out,), gpu="h100", cluster=(2, 2, 1))
    o = out.reshape(4, 4, 6)                          # [ctaid.y][ctaid.x]
    assert o[3, 2].tolist() == [2, 0, 1, 4, 1, 1]    # block (2, 3): rank 0 + 2 * 1, cluster (1, 1)


def test_without_clusters_every_block_is_rank_0_of_a_cluster_of_one():
    out = np.zeros(6 * 2, np.uint32)
    gpusim.launch(gpusim.CudaSource(IDS, "ids"), 2, 32, (out,), gpu="h100")
    assert out.reshape(2, 6)[1].tolist() == [0, 0, 0, 1, 1, 0]


def test_cluster_dims_must_divide_the_grid():
    with pytest.raises(LaunchError, match="grid dimension x is 3, not a multiple of the cluster's 2"):
        gpusim.launch(gpusim.CudaSource(IDS, "ids"), 3, 32, (np.zeros(18, np.uint32),), gpu="h100", cluster=2)


def test_launch_cluster_must_match_the_kernels_cluster_dims():
    with pytest.raises(LaunchError, match=r"declares __cluster_dims__\(2, 1, 1\)"):
        gpusim.launch(gpusim.CudaSource(DSM, "dsm", options=("-std=c++17",)), 4, 64, (np.zeros(256, np.int32),),
                      gpu="h100", cluster=(4, 1, 1))


def test_non_portable_cluster_sizes_are_refused():
    with pytest.raises(LaunchError, match="portable cluster sizes 1..8"):
        gpusim.launch(gpusim.CudaSource(IDS, "ids"), 16, 32, (np.zeros(96, np.uint32),), gpu="h100", cluster=16)


def test_clusters_need_compute_capability_9():
    with pytest.raises(LaunchError, match="compute capability 9.0"):
        gpusim.launch(gpusim.CudaSource(IDS, "ids"), 2, 32, (np.zeros(12, np.uint32),), gpu="a100", cluster=2)


def test_timing_a_cluster_launch_is_refused():
    with pytest.raises(UnsupportedKernel, match="thread-block clusters"):
        gpusim.launch(gpusim.CudaSource(IDS, "ids"), 2, 32, (np.zeros(12, np.uint32),), gpu="h100", cluster=2,
                      timing=True)


BARRIERS = r"""
extern "C" __global__ void bars(int* out, int mode) {
    if (mode == 0) {                                  // a wait with no arrive before it
        asm volatile("barrier.cluster.wait;" ::: "memory");
    } else {                                          // thread 0 waits on the cluster, the rest at __syncthreads
        if (threadIdx.x == 0) {
            asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
        }
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}
"""


def test_cluster_wait_without_arrive_is_an_error():
    with pytest.raises(BarrierError, match=r"barrier.cluster.wait without a barrier.cluster.arrive"):
        gpusim.launch(gpusim.CudaSource(BARRIERS, "bars"), 2, 32, (np.zeros(32, np.int32), np.int32(0)), gpu="h100",
                      cluster=2)


def test_a_cluster_barrier_that_can_never_complete_is_a_deadlock():
    with pytest.raises(BarrierError, match="barrier deadlock.*can never complete"):
        gpusim.launch(gpusim.CudaSource(BARRIERS, "bars"), 2, 64, (np.zeros(64, np.int32), np.int32(1)), gpu="h100",
                      cluster=2)


MAPA = r"""
extern "C" __global__ void far(int* out, int rank) {
    __shared__ int buf[32];
    buf[threadIdx.x] = threadIdx.x;
    unsigned a = (unsigned)__cvta_generic_to_shared(buf), r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    int v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(r));
    out[threadIdx.x] = v;
}
"""


def test_a_rank_outside_the_cluster_is_an_out_of_bounds_fault():
    with pytest.raises(MemoryAccessError, match="CTA rank 2, but the launch's clusters have 2 CTAs"):
        gpusim.launch(gpusim.CudaSource(MAPA, "far"), 2, 32, (np.zeros(32, np.int32), np.int32(2)), gpu="h100",
                      cluster=2)


MULTICAST = r"""
typedef unsigned long long u64;
typedef unsigned int u32;
struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };
extern "C" __global__ void __cluster_dims__(2, 1, 1) mc(const __grid_constant__ CUtensorMap map, float* out) {
    __shared__ __align__(128) float box[128];
    __shared__ __align__(8) u64 bar;
    const u32 b = (u32)__cvta_generic_to_shared(&bar), s = (u32)__cvta_generic_to_shared(box);
    u32 rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\nmbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;"
                     :: "r"(b) : "memory");
    }
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");   // both barriers armed
    if (threadIdx.x == 0 && rank == 0) {              // rank 0 loads the box into both blocks
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%2, %3}], [%4], %5;"
                     :: "r"(s), "l"(reinterpret_cast<u64>(&map)), "r"(0), "r"(1), "r"(b), "h"((unsigned short)3)
                     : "memory");
    }
    u32 done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(b) : "memory");
    } while (!done);
    out[blockIdx.x * 128 + threadIdx.x] = box[threadIdx.x];
}
"""


def test_multicast_tensor_copy_reaches_every_block_of_the_mask():
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    out = np.zeros(256, np.float32)
    gpusim.launch(gpusim.CudaSource(MULTICAST, "mc"), 2, 128, (gpusim.TensorMap(a, box=(16, 8)), out), gpu="h100")
    want = a[1:9, 0:16].ravel()
    assert out[:128].tolist() == want.tolist() and out[128:].tolist() == want.tolist()


REMOTE_ARRIVE = r"""
typedef unsigned int u32;
extern "C" __global__ void __cluster_dims__(2, 1, 1) remote(int* out) {
    __shared__ __align__(8) unsigned long long bar;
    __shared__ int flag;
    const u32 b = (u32)__cvta_generic_to_shared(&bar);
    u32 rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) {
        flag = 7 + rank;
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    }
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
    if (rank == 1 && threadIdx.x == 0) {                 // block 1 arrives on block 0's barrier
        u32 far;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(far) : "r"(b));
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(far) : "memory");
    }
    if (rank == 0) {
        u32 done;
        do {
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(b) : "memory");
        } while (!done);
    }
    out[blockIdx.x * 32 + threadIdx.x] = flag;
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
}
"""


def test_a_block_arrives_on_another_blocks_mbarrier():
    out = np.zeros(64, np.int32)
    gpusim.launch(gpusim.CudaSource(REMOTE_ARRIVE, "remote"), 2, 32, (out,), gpu="h100")
    assert out[0] == 7 and out[32] == 8                 # block 0 passed its wait: block 1's arrival completed it


PUSH = r"""
typedef unsigned int u32;
extern "C" __global__ void __cluster_dims__(2, 1, 1) push(int* out) {
    __shared__ __align__(16) int mine[32], theirs[32];
    __shared__ __align__(8) unsigned long long bar;
    const u32 b = (u32)__cvta_generic_to_shared(&bar);
    u32 rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    mine[threadIdx.x] = 100 * (rank + 1) + threadIdx.x;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\nmbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 128;"
                     :: "r"(b) : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;\nbarrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
    if (threadIdx.x == 0) {                               // push `mine` into the other block's `theirs`
        u32 dst, rbar;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"((u32)__cvta_generic_to_shared(theirs)),
                     "r"(rank ^ 1));
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(b), "r"(rank ^ 1));
        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], 128, [%2];"
                     :: "r"(dst), "r"((u32)__cvta_generic_to_shared(mine)), "r"(rbar) : "memory");
    }
    u32 done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(b) : "memory");
    } while (!done);
    out[blockIdx.x * 32 + threadIdx.x] = theirs[threadIdx.x];
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
}
"""


def test_bulk_copy_into_another_blocks_shared_memory():
    out = np.zeros(64, np.int32)
    gpusim.launch(gpusim.CudaSource(PUSH, "push"), 2, 32, (out,), gpu="h100")
    assert out[:32].tolist() == list(range(200, 232)) and out[32:].tolist() == list(range(100, 132))
