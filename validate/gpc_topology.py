"""Which SMs of a GPU share a GPC, found on the GPU itself: the blocks of a thread-block cluster run on
SMs of one GPC, so clusters of 8, 6, 4 and 2 blocks (one block an SM: 120 KiB of shared memory each),
each holding its SMs for a time of its own, link the SMs of every GPC (`discover`, `gpc_groups`); and
how the groups found land on gpusim's GPCs of consecutive SMs (`in_gpusim_order`). Used by
validate/request_merge_probe.py. The GPU side needs CuPy (NVRTC, sm_90 for clusters); nothing of gpusim.
"""
from __future__ import annotations

import json
import os

from validate.probe_cli import nvrtc_module

CLUSTER_SIZES = (8, 6, 4, 2)
SHARED_BYTES = 120 * 1024                    # one block an SM

SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ u64 clk() { u64 t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }

// the blocks of a cluster run on SMs of one GPC: out[block] = %smid; each cluster holds its SMs
// for a time of its own (a hash of its index), so that clusters start on ever other sets of free SMs
__device__ void gpc_member(unsigned *out, int csize) {
    extern __shared__ __align__(128) int4 smem[];
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    unsigned c = blockIdx.x / csize;
    u64 t0 = clk(), spin = 5000 + ((c * 2654435761u) >> 20) % 40000;
    while (clk() - t0 < spin) { }
    smem[threadIdx.x].x = smid;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = smem[0].x;
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) gpc_of8(unsigned *out) { gpc_member(out, 8); }
extern "C" __global__ void __cluster_dims__(6, 1, 1) gpc_of6(unsigned *out) { gpc_member(out, 6); }
extern "C" __global__ void __cluster_dims__(4, 1, 1) gpc_of4(unsigned *out) { gpc_member(out, 4); }
extern "C" __global__ void __cluster_dims__(2, 1, 1) gpc_of2(unsigned *out) { gpc_member(out, 2); }
"""


def discover(sms: int, env: str | None = None) -> tuple[list[list[int]] | None, list | str]:
    """(the GPCs' SM ids, the launches they come from) from cluster launches on the GPU of this process
    (None and the error where a launch fails); where the environment variable `env` is set, the
    groups it holds (a worker under Nsight takes its measuring process's, so both run the same cases)."""
    if env and os.environ.get(env):
        return json.loads(os.environ[env]), []
    cp, _props, mod = nvrtc_module(SOURCE)
    for size in CLUSTER_SIZES:
        mod.get_function(f"gpc_of{size}").max_dynamic_shared_size_bytes = SHARED_BYTES
    launches = []
    try:
        for size in CLUSTER_SIZES:
            for _ in range(3):
                blocks = size * (8 * sms // size)
                out = cp.zeros(blocks, dtype=cp.uint32)
                mod.get_function(f"gpc_of{size}")((blocks,), (32,), (out,), shared_mem=SHARED_BYTES)
                launches.append((size, [int(x) for x in out.get()]))
    except Exception as e:                               # noqa: BLE001 - recorded; the other cases still run
        return None, f"{type(e).__name__}: {e}"
    return gpc_groups(launches), launches



def gpc_groups(launches: list[tuple[int, list[int]]]) -> list[list[int]]:
    """SMs that ran blocks of one cluster are in one GPC: the connected groups of SM ids over every
    (cluster size, SM id of each block) launch, each group sorted, in order of their lowest SM."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for cluster, smids_by_block in launches:
        for i in range(0, len(smids_by_block) - cluster + 1, cluster):
            members = smids_by_block[i:i + cluster]
            for s in members:
                parent[find(s)] = find(members[0])
    groups: dict[int, list[int]] = {}
    for s in sorted(parent):
        groups.setdefault(find(s), []).append(s)
    return sorted(groups.values(), key=lambda g: g[0])



def in_gpusim_order(gpcs: list[list[int]] | None, sms: int, groups: int) -> list[int]:
    """The GPU's SM ids in the order of gpusim's SMs, so that the SMs the cluster launch found in one
    GPC (`gpcs`) share one of gpusim's `groups` GPCs of consecutive ids (`noc.gpcs`; the largest found
    first, each into the GPC with most room left, TPC pairs kept next to each other); SMs found in
    none fill the rest."""
    bounds = [g * sms // groups for g in range(groups + 1)]
    room = [bounds[g + 1] - bounds[g] for g in range(groups)]
    slots: list[list[int]] = [[] for _ in range(groups)]
    placed: set[int] = set()
    for members in sorted(gpcs or [], key=len, reverse=True):
        members = [s for s in sorted(members) if s < sms and s not in placed]
        while members:
            g = max(range(groups), key=lambda i: room[i])
            take = members[:room[g]]
            if not take:
                break
            slots[g] += take
            room[g] -= len(take)
            placed.update(take)
            members = members[len(take):]
    rest = [s for s in range(sms) if s not in placed]
    for g in range(groups):
        slots[g] += rest[:room[g]]
        rest = rest[room[g]:]
    return [s for g in slots for s in g]
