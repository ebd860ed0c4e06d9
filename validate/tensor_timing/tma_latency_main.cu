// Host side of tma_latency.cu for nvcc (-arch=sm_90a -lcuda): prints one JSON line per run.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include "tma_latency.cu"

static void check(cudaError_t e, const char *what) { if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); exit(1); } }

static void emit(const char *kind, const char *where, unsigned bytes, std::vector<u64> &c, int skip, int n) {
    std::vector<u64> v(c.begin() + skip, c.begin() + n);
    std::sort(v.begin(), v.end());
    printf("{\"kind\": \"%s\", \"where\": \"%s\", \"bytes\": %u, \"n\": %zu, \"median\": %llu, \"min\": %llu, \"max\": %llu}\n",
           kind, where, bytes, v.size(), v[v.size() / 2], v[0], v[v.size() - 1]);
}

// A 2-D f16 tensor map over `base`: `height` rows of `width` elements, `pitch` bytes apart, boxes of
// 64 x `rows` elements, no swizzle
static TensorMap encode_f16(void *base, cuuint64_t width, cuuint64_t height, cuuint64_t pitch, unsigned rows) {
    CUtensorMap map;
    cuuint64_t dims[2] = {width, height}, strides[1] = {pitch};
    cuuint32_t box[2] = {64, rows}, estr[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, estr,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { fprintf(stderr, "encode %d\n", (int)r); exit(1); }
    TensorMap tm; memcpy(&tm, &map, sizeof(tm));
    return tm;
}

int main() {
    const size_t big = size_t(512) << 20;            // beyond the 50-60 MB L2
    char *src; u64 *cyc, *chain;
    check(cudaMalloc(&src, big), "malloc");
    check(cudaMemset(src, 1, big), "memset");
    check(cudaMalloc(&cyc, 4096 * sizeof(u64)), "malloc");
    const int reps = 64;
    std::vector<u64> h(reps);
    unsigned sizes[] = {16, 128, 512, 1024, 4096, 8192, 16384};
    for (unsigned b : sizes) {
        for (int rep = 0; rep < 2; rep++) {          // the second pass is the one reported (warm code)
            bulk_latency<<<1, 32>>>(src, b, 0, reps, cyc);
            check(cudaMemcpy(h.data(), cyc, reps * sizeof(u64), cudaMemcpyDeviceToHost), "copy");
        }
        emit("bulk", "l2", b, h, 1, reps);
        bulk_latency<<<1, 32>>>(src + (size_t(256) << 20), b, size_t(1) << 20, reps, cyc);  // each from a new MB: DRAM
        check(cudaMemcpy(h.data(), cyc, reps * sizeof(u64), cudaMemcpyDeviceToHost), "copy");
        emit("bulk", "dram", b, h, 0, reps);
    }
    // the ld.global.cg chase: 4096 lines 128 B apart in a 512 KB window, visited in a scrambled order
    {
        const int lines = 4096;
        std::vector<u64> next(lines * 16, 0);
        for (int i = 0; i < lines; i++) next[size_t(i) * 16] = size_t((i * 2749 + 1) % lines) * 128;
        check(cudaMalloc(&chain, next.size() * sizeof(u64)), "malloc");
        check(cudaMemcpy(chain, next.data(), next.size() * sizeof(u64), cudaMemcpyHostToDevice), "copy");
        u64 out[2];
        for (int rep = 0; rep < 3; rep++) cg_chase<<<1, 32>>>(chain, lines, cyc);
        check(cudaMemcpy(out, cyc, sizeof(out), cudaMemcpyDeviceToHost), "copy");
        printf("{\"kind\": \"ldg_cg\", \"where\": \"l2\", \"bytes\": 8, \"n\": %d, \"median\": %.1f}\n", lines, double(out[0]) / lines);
    }
    // 2-D tensor copies: f16 [8192][8192] row-major, boxes of 64 x rows elements
    {
        unsigned rows_list[] = {1, 8, 32, 64, 128};
        for (unsigned rows : rows_list) {
            TensorMap tm = encode_f16(src, 8192, 8192, 8192 * 2, rows);
            for (int rep = 0; rep < 2; rep++) {
                tensor_latency<<<1, 32>>>(tm, 128 * rows, 0, 0, 0, reps, cyc);
                check(cudaMemcpy(h.data(), cyc, reps * sizeof(u64), cudaMemcpyDeviceToHost), "copy");
            }
            emit("tensor", "l2", 128 * rows, h, 1, reps);
            tensor_latency<<<1, 32>>>(tm, 128 * rows, 0, 128 + 128 * (rows / 64), 128, 60, cyc);  // a new 2 MB each: cold
            check(cudaMemcpy(h.data(), cyc, 60 * sizeof(u64), cudaMemcpyDeviceToHost), "copy");
            emit("tensor", "dram", 128 * rows, h, 0, 60);
        }
    }
    // 2-D boxes from DRAM against the row pitch: f16 [H][pitch / 2] over a fresh 1 GB, boxes of
    // 64 x rows elements (128-B rows `pitch` apart), each copy two boxes below the last (new
    // lines, and not the DRAM rows the last one opened); the L2 emptied before each run by a
    // 256 MB memset; from `blocks` blocks at once, each its own band of the tensor
    // (and the section after it: a fresh GB, a 256 MB buffer whose memset empties the L2, and
    // room for 24 copies' cycles from each of up to 132 blocks)
    char *fresh, *flush;
    const size_t fbytes = size_t(1) << 30;
    check(cudaMalloc(&fresh, fbytes), "malloc");
    check(cudaMemset(fresh, 1, fbytes), "memset");
    check(cudaMalloc(&flush, size_t(256) << 20), "malloc");
    auto empty_l2 = [&]() {
        check(cudaMemset(flush, 2, size_t(256) << 20), "memset");
        check(cudaDeviceSynchronize(), "sync");
    };
    const int preps = 24, maxblocks = 132;
    u64 *cyc2;
    check(cudaMalloc(&cyc2, size_t(maxblocks) * preps * sizeof(u64)), "malloc");
    std::vector<u64> hb(size_t(maxblocks) * preps);
    {
        unsigned pitches[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
        unsigned prow[] = {8, 32, 64, 128};
        int blocks_list[] = {1, 16, 132};
        for (unsigned pitch : pitches) {
            cuuint64_t h = fbytes / pitch;
            for (unsigned rows : prow) {
                for (int blocks : blocks_list) {
                    if (blocks > 1 && rows != 64) continue;
                    int band = int(h / blocks);               // each block's rows
                    int dy = 2 * int(rows);
                    if (preps * dy + int(rows) > band) continue;
                    TensorMap tm = encode_f16(fresh, pitch / 2, h, pitch, rows);
                    empty_l2();
                    tensor_latency_blocks<<<blocks, 32>>>(tm, 128 * rows, 0, 0, dy, band, preps, cyc2);
                    check(cudaMemcpy(hb.data(), cyc2, size_t(blocks) * preps * sizeof(u64), cudaMemcpyDeviceToHost), "copy");
                    std::vector<u64> v(hb.begin(), hb.begin() + size_t(blocks) * preps);
                    std::sort(v.begin(), v.end());
                    printf("{\"kind\": \"tensor_pitch\", \"where\": \"dram\", \"bytes\": %u, \"pitch\": %u, \"rows\": %u, "
                           "\"blocks\": %d, \"band\": %d, \"dy\": %d, \"n\": %zu, \"median\": %llu, \"min\": %llu, \"max\": %llu}\n",
                           128 * rows, pitch, rows, blocks, band, dy, v.size(), v[v.size() / 2], v[0], v[v.size() - 1]);
                }
            }
        }
    }
    // Under load: 8 KB copies from `blocks` blocks at once (1 to 132), each block its own bytes:
    // contiguous bulk copies and 2-D boxes of 64 rows 1 KB apart, from DRAM (a new 64 KB / new
    // rows each copy) and from the L2 (the same bytes again; the first copy of each block warms them)
    {
        const int lreps = preps;
        int blocks_list[] = {1, 8, 33, 66, 132};
        const unsigned pitch = 1024, rows = 64, bytes = 8192;
        cuuint64_t h = fbytes / pitch;
        TensorMap tm = encode_f16(fresh, pitch / 2, h, pitch, rows);
        for (int blocks : blocks_list) {
            for (int kind = 0; kind < 2; kind++) {            // 0: bulk, 1: 2-D box
                for (int where = 0; where < 2; where++) {     // 0: DRAM, 1: L2
                    empty_l2();
                    const size_t band = (fbytes / maxblocks) & ~size_t(0xFFFF);   // bytes of each block's part (bulk), 64 KB aligned
                    const int rband = int(h / maxblocks);     // rows of each block's part (boxes)
                    if (kind == 0)
                        bulk_latency_blocks<<<blocks, 32>>>(fresh, bytes, where ? 0 : 65536, band, lreps, cyc2);
                    else
                        tensor_latency_blocks<<<blocks, 32>>>(tm, bytes, 0, 0, where ? 0 : 2 * rows, rband, lreps, cyc2);
                    check(cudaMemcpy(hb.data(), cyc2, size_t(blocks) * lreps * sizeof(u64), cudaMemcpyDeviceToHost), "copy");
                    std::vector<u64> v;
                    for (int b = 0; b < blocks; b++)
                        for (int i = where; i < lreps; i++) v.push_back(hb[size_t(b) * lreps + i]);   // L2: the warming copy left out
                    std::sort(v.begin(), v.end());
                    printf("{\"kind\": \"%s\", \"where\": \"%s\", \"bytes\": %u, \"pitch\": %u, \"rows\": %u, "
                           "\"blocks\": %d, \"n\": %zu, \"median\": %llu, \"min\": %llu, \"max\": %llu}\n",
                           kind ? "tensor_load" : "bulk_load", where ? "l2" : "dram", bytes, kind ? pitch : 0, kind ? rows : 0,
                           blocks, v.size(), v[v.size() / 2], v[0], v[v.size() - 1]);
                }
            }
        }
    }
    check(cudaDeviceSynchronize(), "sync");
    return 0;
}
