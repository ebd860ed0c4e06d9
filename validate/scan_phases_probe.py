"""Barrier phases of a block-wide scan on the H100/H200 (issue 24): the held-out
`scan_blelloch_block` (1,024 floats a block of 512 threads, 21 `__syncthreads` phases, most with
few active threads and bank conflicts up to 32-way) is predicted 41% fast with its instruction,
shared wavefront and conflict counts all equal to Nsight's. This separates what such a block's
time is made of: the same 21 phases with register work only (`phases_regs`), the scan in shared
memory (`scan_shared`), and the scan with conflict-free padded indices (`scan_padded`), each
repeated `REPS` times a block, the phases alone at 1 to 8 blocks a SM of 4 to 32 warps, the scans in
528 blocks of 512 threads (4 a SM), timed by Nsight as `validate measure`
does. gpusim runs the same kernels (`predict`), so the part the model misses shows by variant.

    python -m validate.scan_phases_probe $OUT       # on a GPU machine: $OUT/scan_phases.json
    python -m validate.scan_phases_probe --predict h200 data/measurements/scan_phases_h200.json

Needs CuPy (NVRTC) and Nsight Compute (`ncu`) on the GPU machine.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from validate import ncu

REPS, BLOCKS, THREADS = 16, 528, 512
MASK_K = (1, 2, 4, 8, 16, 32)                 # run 7's conflict degrees, and its warps (`mask_loads`'s MASK):
MASK_WARPS = ("w1", "w2", "w4", "w8", "s2", "s4")   # 0; 0-1; 0-3; 0-7; 0 and 4; 0, 4, 8, 12
PHASES = 21                     # __syncthreads a repetition: 10 up, 1, 10 down
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__inst_executed.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")

SOURCE = r"""
#define N 1024
#define PADDED(i) ((i) + ((i) >> 5))

extern "C" __global__ void phases_regs(const float *x, float *out, int reps) {
    int t = threadIdx.x;
    float v = x[blockIdx.x * blockDim.x + t];
    for (int r = 0; r < reps; r++) {
        for (int d = N / 2; d > 0; d >>= 1) { __syncthreads(); if (t < d) v = v * 1.0001f + 1.0f; }
        __syncthreads();
        for (int d = 1; d < N; d <<= 1) { __syncthreads(); if (t < d) v = v * 0.9999f + 1.0f; }
    }
    out[blockIdx.x * blockDim.x + t] = v;
}

// The scan (MODE 0: textbook indices; 1: padded), and its access pattern taken apart (MODE 2: only the two
// loads of each step, summed into a register; 3: only its store), the same phases, threads and indices.
template <int MODE>
__device__ void scan(const float *x, float *out, int reps) {
    const bool PAD = MODE == 1, RMW = MODE < 2;
    __shared__ float temp[N + N / 32];
    int t = threadIdx.x;
    int base = blockIdx.x * N;
    temp[PAD ? PADDED(t) : t] = x[base + t];
    temp[PAD ? PADDED(t + N / 2) : t + N / 2] = x[base + t + N / 2];
    float acc = 0.0f;
    for (int r = 0; r < reps; r++) {
        int offset = 1;
        for (int d = N / 2; d > 0; d >>= 1) {
            __syncthreads();
            if (t < d) {
                int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
                if (PAD) { ai = PADDED(ai); bi = PADDED(bi); }
                if (RMW) temp[bi] += temp[ai];
                else if (MODE == 2) acc += temp[ai] + temp[bi];
                else temp[bi] = acc + (float)d;
            }
            offset *= 2;
        }
        __syncthreads();
        if (RMW && t == 0) temp[PAD ? PADDED(N - 1) : N - 1] = 0.0f;
        for (int d = 1; d < N; d *= 2) {
            offset >>= 1;
            __syncthreads();
            if (t < d) {
                int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
                if (PAD) { ai = PADDED(ai); bi = PADDED(bi); }
                if (RMW) {
                    float s = temp[ai];
                    temp[ai] = temp[bi];
                    temp[bi] += s;
                } else if (MODE == 2) {
                    acc += temp[ai] + temp[bi];
                } else {
                    temp[bi] = acc + (float)d;
                }
            }
        }
    }
    __syncthreads();
    if (RMW) {
        out[base + t] = temp[PAD ? PADDED(t) : t];
        out[base + t + N / 2] = temp[PAD ? PADDED(t + N / 2) : t + N / 2];
    } else {
        out[base + t] = temp[t] + acc;
    }
}

// One warp's dependent shared accesses, lanes S words apart (S = 32: all in one bank, 32-way):
// a load chain (each address from the last value, all 0) and a read-modify-write chain through
// the same word (each load waits for the store before it). REPS x 256 steps.
template <int S>
__device__ void chase(const float *x, float *out, int reps) {
    __shared__ int si[1024];
    __shared__ float sf[1024];
    int t = threadIdx.x;
    for (int i = t; i < 1024; i += blockDim.x) { si[i] = 0; sf[i] = x[i]; }
    __syncthreads();
    int v = 0;
    for (int i = 0; i < reps * 256; i++) v = si[t * S + v];
    out[t] = (float)v;
}
template <int S>
__device__ void rmw(const float *x, float *out, int reps) {
    __shared__ float sf[1024];
    int t = threadIdx.x;
    for (int i = t; i < 1024; i += blockDim.x) sf[i] = x[i];
    __syncthreads();
    volatile float *w = sf + t * S;                // each step's load and store happen, in order
    for (int i = 0; i < reps * 256; i++) *w = *w + 1.0f;
    __syncthreads();
    out[t] = sf[t * S];
}
extern "C" __global__ void chase_s1(const float *x, float *out, int reps) { chase<1>(x, out, reps); }
extern "C" __global__ void chase_s32(const float *x, float *out, int reps) { chase<32>(x, out, reps); }
extern "C" __global__ void rmw_s1(const float *x, float *out, int reps) { rmw<1>(x, out, reps); }
extern "C" __global__ void rmw_s32(const float *x, float *out, int reps) { rmw<32>(x, out, reps); }

// Conflicted loads a phase: lane l reads word l % (32/K) + (l / (32/K)) * 32 (32/K banks, K words each, the same
// banks for every warp and block), L of them a phase back to back (the j-th from the words 1,024 j on: other
// words of the same banks), by warps 0..W-1 of the block (W = 0: every warp), with a __syncthreads() before each phase (BAR)
// or without (back to back, as section 11b's probe issued them). REPS x PHASES phases; S words of shared memory.
template <int K, int W, int L, bool BAR, int S>
__device__ void phase_loads(const float *x, float *out, int reps) {
    __shared__ float s[S];
    int t = threadIdx.x, lane = t & 31;
    for (int i = t; i < S; i += blockDim.x) s[i] = x[i];
    __syncthreads();
    volatile float *v = s + (lane % (32 / K)) + (lane / (32 / K)) * 32;
    float acc = 0.0f;
    for (int r = 0; r < reps * 21; r++) {
        if (BAR) __syncthreads();
        if (W == 0 || t < W * 32) {
#pragma unroll
            for (int j = 0; j < L; j++) acc += v[j * 1024];
        }
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}
// Two warps of one block, each its own loads a phase after a __syncthreads(): warp 0 (sub-partition 0) L0
// K0-way loads back to back, warp B (1: sub-partition 1; 4: sub-partition 0 too) L1 K1-way ones.
template <int K0, int L0, int K1, int L1, int B>
__device__ void two_warps(const float *x, float *out, int reps) {
    __shared__ float s[4096];
    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    for (int i = t; i < 4096; i += blockDim.x) s[i] = x[i];
    __syncthreads();
    int k = w == 0 ? K0 : K1;
    volatile float *v = s + (lane % (32 / k)) + (lane / (32 / k)) * 32;
    float acc = 0.0f;
    for (int r = 0; r < reps * 21; r++) {
        __syncthreads();
        if (w == 0) {
#pragma unroll
            for (int j = 0; j < L0; j++) acc += v[j * 1024];
        } else if (w == B) {
#pragma unroll
            for (int j = 0; j < L1; j++) acc += v[j * 1024];
        }
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}
#define TWO_WARPS(K0, L0, K1, L1, B) two_warps<K0, L0, K1, L1, B>(x, out, reps)
extern "C" __global__ void two_k8l4_k1l4_sp1(const float *x, float *out, int reps) { TWO_WARPS(8, 4, 1, 4, 1); }
extern "C" __global__ void two_k8l4_k8l1_sp1(const float *x, float *out, int reps) { TWO_WARPS(8, 4, 8, 1, 1); }
extern "C" __global__ void two_k8l4_k8l4_sp1(const float *x, float *out, int reps) { TWO_WARPS(8, 4, 8, 4, 1); }
extern "C" __global__ void two_k8l4_k8l4_sp0(const float *x, float *out, int reps) { TWO_WARPS(8, 4, 8, 4, 4); }
extern "C" __global__ void two_k1l4_k1l4_sp1(const float *x, float *out, int reps) { TWO_WARPS(1, 4, 1, 4, 1); }
extern "C" __global__ void two_k1l4_none(const float *x, float *out, int reps) { TWO_WARPS(1, 4, 1, 0, 1); }
extern "C" __global__ void two_k32l2_k32l2_sp1(const float *x, float *out, int reps) { TWO_WARPS(32, 2, 32, 2, 1); }
extern "C" __global__ void two_k32l2_none(const float *x, float *out, int reps) { TWO_WARPS(32, 2, 1, 0, 1); }
// run 6: the same branchy code with warp B absent from the block (B = 16 of 16 warps): one warp's loads alone
extern "C" __global__ void two_k1l4_absent(const float *x, float *out, int reps) { TWO_WARPS(1, 4, 1, 4, 16); }
extern "C" __global__ void two_k8l4_absent(const float *x, float *out, int reps) { TWO_WARPS(8, 4, 8, 4, 16); }
extern "C" __global__ void two_k32l2_absent(const float *x, float *out, int reps) { TWO_WARPS(32, 2, 32, 2, 16); }
#define ALL_WARPS(K, BAR) phase_loads<K, 0, 1, BAR, 1024>(x, out, reps)
#define FEW_WARPS(K, W, L) phase_loads<K, W, L, true, (L > 2 ? L : 2) * 1024>(x, out, reps)
extern "C" __global__ void bar_k2(const float *x, float *out, int reps) { ALL_WARPS(2, true); }
extern "C" __global__ void bar_k8(const float *x, float *out, int reps) { ALL_WARPS(8, true); }
extern "C" __global__ void bar_k32(const float *x, float *out, int reps) { ALL_WARPS(32, true); }
extern "C" __global__ void nobar_k32(const float *x, float *out, int reps) { ALL_WARPS(32, false); }
extern "C" __global__ void nobar_k2(const float *x, float *out, int reps) { ALL_WARPS(2, false); }
extern "C" __global__ void few_k8_w4_l2(const float *x, float *out, int reps) { FEW_WARPS(8, 4, 2); }
extern "C" __global__ void few_k8_w4_l1(const float *x, float *out, int reps) { FEW_WARPS(8, 4, 1); }
extern "C" __global__ void few_k16_w2_l2(const float *x, float *out, int reps) { FEW_WARPS(16, 2, 2); }
extern "C" __global__ void few_k2_w16_l2(const float *x, float *out, int reps) { FEW_WARPS(2, 16, 2); }
extern "C" __global__ void few_k4_w8_l2(const float *x, float *out, int reps) { FEW_WARPS(4, 8, 2); }
extern "C" __global__ void few_k32_w1_l2(const float *x, float *out, int reps) { FEW_WARPS(32, 1, 2); }
extern "C" __global__ void few_k8_w1_l1(const float *x, float *out, int reps) { FEW_WARPS(8, 1, 1); }
extern "C" __global__ void few_k8_w1_l2(const float *x, float *out, int reps) { FEW_WARPS(8, 1, 2); }
extern "C" __global__ void few_k8_w1_l4(const float *x, float *out, int reps) { FEW_WARPS(8, 1, 4); }
extern "C" __global__ void few_k8_w2_l4(const float *x, float *out, int reps) { FEW_WARPS(8, 2, 4); }
extern "C" __global__ void few_k8_w4_l4(const float *x, float *out, int reps) { FEW_WARPS(8, 4, 4); }
extern "C" __global__ void few_k8_w8_l4(const float *x, float *out, int reps) { FEW_WARPS(8, 8, 4); }
extern "C" __global__ void few_k2_w1_l4(const float *x, float *out, int reps) { FEW_WARPS(2, 1, 4); }
extern "C" __global__ void few_k32_w1_l4(const float *x, float *out, int reps) { FEW_WARPS(32, 1, 4); }
extern "C" __global__ void few_k32_w4_l4(const float *x, float *out, int reps) { FEW_WARPS(32, 4, 4); }
// run 6: the scan's phase shapes with no barrier between phases (each warp's loads back to back, phase after phase)
extern "C" __global__ void fewnobar_k8_w4_l2(const float *x, float *out, int reps) { phase_loads<8, 4, 2, false, 2048>(x, out, reps); }
extern "C" __global__ void fewnobar_k16_w2_l2(const float *x, float *out, int reps) { phase_loads<16, 2, 2, false, 2048>(x, out, reps); }
extern "C" __global__ void fewnobar_k8_w1_l4(const float *x, float *out, int reps) { phase_loads<8, 1, 4, false, 4096>(x, out, reps); }
extern "C" __global__ void fewnobar_k8_w2_l4(const float *x, float *out, int reps) { phase_loads<8, 2, 4, false, 4096>(x, out, reps); }
// run 7: the warps in MASK (warp w when bit w is set) each four K-way loads an iteration, back to back, no barrier
template <int K, unsigned MASK>
__device__ void mask_loads(const float *x, float *out, int reps) {
    __shared__ float s[4096];
    int t = threadIdx.x, lane = t & 31, w = t >> 5;
    for (int i = t; i < 4096; i += blockDim.x) s[i] = x[i];
    __syncthreads();
    volatile float *v = s + (lane % (32 / K)) + (lane / (32 / K)) * 32;
    float acc = 0.0f;
    if ((MASK >> w) & 1u) {
        for (int r = 0; r < reps * 21; r++) {
#pragma unroll
            for (int j = 0; j < 4; j++) acc += v[j * 1024];
        }
    }
    out[blockIdx.x * blockDim.x + t] = acc;
}
extern "C" __global__ void mask_k1_w1(const float *x, float *out, int reps) { mask_loads<1, 0x1u>(x, out, reps); }
extern "C" __global__ void mask_k1_w2(const float *x, float *out, int reps) { mask_loads<1, 0x3u>(x, out, reps); }
extern "C" __global__ void mask_k1_w4(const float *x, float *out, int reps) { mask_loads<1, 0xfu>(x, out, reps); }
extern "C" __global__ void mask_k1_w8(const float *x, float *out, int reps) { mask_loads<1, 0xffu>(x, out, reps); }
extern "C" __global__ void mask_k1_s2(const float *x, float *out, int reps) { mask_loads<1, 0x11u>(x, out, reps); }
extern "C" __global__ void mask_k1_s4(const float *x, float *out, int reps) { mask_loads<1, 0x1111u>(x, out, reps); }
extern "C" __global__ void mask_k2_w1(const float *x, float *out, int reps) { mask_loads<2, 0x1u>(x, out, reps); }
extern "C" __global__ void mask_k2_w2(const float *x, float *out, int reps) { mask_loads<2, 0x3u>(x, out, reps); }
extern "C" __global__ void mask_k2_w4(const float *x, float *out, int reps) { mask_loads<2, 0xfu>(x, out, reps); }
extern "C" __global__ void mask_k2_w8(const float *x, float *out, int reps) { mask_loads<2, 0xffu>(x, out, reps); }
extern "C" __global__ void mask_k2_s2(const float *x, float *out, int reps) { mask_loads<2, 0x11u>(x, out, reps); }
extern "C" __global__ void mask_k2_s4(const float *x, float *out, int reps) { mask_loads<2, 0x1111u>(x, out, reps); }
extern "C" __global__ void mask_k4_w1(const float *x, float *out, int reps) { mask_loads<4, 0x1u>(x, out, reps); }
extern "C" __global__ void mask_k4_w2(const float *x, float *out, int reps) { mask_loads<4, 0x3u>(x, out, reps); }
extern "C" __global__ void mask_k4_w4(const float *x, float *out, int reps) { mask_loads<4, 0xfu>(x, out, reps); }
extern "C" __global__ void mask_k4_w8(const float *x, float *out, int reps) { mask_loads<4, 0xffu>(x, out, reps); }
extern "C" __global__ void mask_k4_s2(const float *x, float *out, int reps) { mask_loads<4, 0x11u>(x, out, reps); }
extern "C" __global__ void mask_k4_s4(const float *x, float *out, int reps) { mask_loads<4, 0x1111u>(x, out, reps); }
extern "C" __global__ void mask_k8_w1(const float *x, float *out, int reps) { mask_loads<8, 0x1u>(x, out, reps); }
extern "C" __global__ void mask_k8_w2(const float *x, float *out, int reps) { mask_loads<8, 0x3u>(x, out, reps); }
extern "C" __global__ void mask_k8_w4(const float *x, float *out, int reps) { mask_loads<8, 0xfu>(x, out, reps); }
extern "C" __global__ void mask_k8_w8(const float *x, float *out, int reps) { mask_loads<8, 0xffu>(x, out, reps); }
extern "C" __global__ void mask_k8_s2(const float *x, float *out, int reps) { mask_loads<8, 0x11u>(x, out, reps); }
extern "C" __global__ void mask_k8_s4(const float *x, float *out, int reps) { mask_loads<8, 0x1111u>(x, out, reps); }
extern "C" __global__ void mask_k16_w1(const float *x, float *out, int reps) { mask_loads<16, 0x1u>(x, out, reps); }
extern "C" __global__ void mask_k16_w2(const float *x, float *out, int reps) { mask_loads<16, 0x3u>(x, out, reps); }
extern "C" __global__ void mask_k16_w4(const float *x, float *out, int reps) { mask_loads<16, 0xfu>(x, out, reps); }
extern "C" __global__ void mask_k16_w8(const float *x, float *out, int reps) { mask_loads<16, 0xffu>(x, out, reps); }
extern "C" __global__ void mask_k16_s2(const float *x, float *out, int reps) { mask_loads<16, 0x11u>(x, out, reps); }
extern "C" __global__ void mask_k16_s4(const float *x, float *out, int reps) { mask_loads<16, 0x1111u>(x, out, reps); }
extern "C" __global__ void mask_k32_w1(const float *x, float *out, int reps) { mask_loads<32, 0x1u>(x, out, reps); }
extern "C" __global__ void mask_k32_w2(const float *x, float *out, int reps) { mask_loads<32, 0x3u>(x, out, reps); }
extern "C" __global__ void mask_k32_w4(const float *x, float *out, int reps) { mask_loads<32, 0xfu>(x, out, reps); }
extern "C" __global__ void mask_k32_w8(const float *x, float *out, int reps) { mask_loads<32, 0xffu>(x, out, reps); }
extern "C" __global__ void mask_k32_s2(const float *x, float *out, int reps) { mask_loads<32, 0x11u>(x, out, reps); }
extern "C" __global__ void mask_k32_s4(const float *x, float *out, int reps) { mask_loads<32, 0x1111u>(x, out, reps); }
// run 9: warp 0's phases of L K-way loads with a barrier of its own (bar.sync 1, 32) each phase; the block's other
// warps leave at once (OTHERS = 0) or wait at __syncthreads() until warp 0's last phase is done (OTHERS = 1)
template <int K, int L, int OTHERS>
__device__ void solo_loads(const float *x, float *out, int reps) {
    __shared__ float s[4096];
    int t = threadIdx.x, lane = t & 31;
    for (int i = t; i < 4096; i += blockDim.x) s[i] = x[i];
    __syncthreads();
    volatile float *v = s + (lane % (32 / K)) + (lane / (32 / K)) * 32;
    float acc = 0.0f;
    if (t < 32) {
        for (int r = 0; r < reps * 21; r++) {
            asm volatile("bar.sync 1, 32;" ::: "memory");
#pragma unroll
            for (int j = 0; j < L; j++) acc += v[j * 1024];
        }
    } else if (!OTHERS) {
        return;
    }
    if (OTHERS) __syncthreads();
    out[blockIdx.x * blockDim.x + t] = acc;
}
extern "C" __global__ void solo_k8_l4_gone(const float *x, float *out, int reps) { solo_loads<8, 4, 0>(x, out, reps); }
extern "C" __global__ void solo_k8_l4_wait(const float *x, float *out, int reps) { solo_loads<8, 4, 1>(x, out, reps); }
extern "C" __global__ void solo_k1_l4_gone(const float *x, float *out, int reps) { solo_loads<1, 4, 0>(x, out, reps); }
extern "C" __global__ void solo_k1_l4_wait(const float *x, float *out, int reps) { solo_loads<1, 4, 1>(x, out, reps); }
extern "C" __global__ void solo_k32_l2_gone(const float *x, float *out, int reps) { solo_loads<32, 2, 0>(x, out, reps); }
extern "C" __global__ void solo_k32_l2_wait(const float *x, float *out, int reps) { solo_loads<32, 2, 1>(x, out, reps); }
extern "C" __global__ void few_k1_w1_l4(const float *x, float *out, int reps) { FEW_WARPS(1, 1, 4); }
extern "C" __global__ void scan_shared(const float *x, float *out, int reps) { scan<0>(x, out, reps); }
extern "C" __global__ void scan_padded(const float *x, float *out, int reps) { scan<1>(x, out, reps); }
extern "C" __global__ void scan_loads(const float *x, float *out, int reps) { scan<2>(x, out, reps); }
extern "C" __global__ void scan_stores(const float *x, float *out, int reps) { scan<3>(x, out, reps); }
"""
# (case, kernel, blocks, threads): the phases alone at 1, 4 and 8 blocks a SM of 4, 16 and 32 warps
CASES = [("regs_132x128", "phases_regs", 132, 128), ("regs_132x512", "phases_regs", 132, 512),
         ("regs_132x1024", "phases_regs", 132, 1024), ("regs_528x128", "phases_regs", 528, 128),
         ("regs_528x512", "phases_regs", 528, 512), ("regs_1056x128", "phases_regs", 1056, 128),
         ("scan_shared", "scan_shared", BLOCKS, THREADS), ("scan_padded", "scan_padded", BLOCKS, THREADS),
         ("chase_s1", "chase_s1", 1, 32), ("chase_s32", "chase_s32", 1, 32), ("rmw_s1", "rmw_s1", 1, 32),
         ("rmw_s32", "rmw_s32", 1, 32),
         # session 32: blocks a SM, and the scan's loads and stores apart (4, 2 and 1 blocks a SM)
         ("scan_shared_264", "scan_shared", 264, THREADS), ("scan_shared_132", "scan_shared", 132, THREADS),
         ("scan_padded_132", "scan_padded", 132, THREADS),
         ("scan_loads", "scan_loads", BLOCKS, THREADS), ("scan_stores", "scan_stores", BLOCKS, THREADS),
         ("scan_loads_132", "scan_loads", 132, THREADS), ("scan_stores_132", "scan_stores", 132, THREADS),
         # every warp one conflicted load a phase, after a barrier or back to back (4 and 1 blocks a SM)
         ("bar_k2", "bar_k2", BLOCKS, THREADS), ("bar_k8", "bar_k8", BLOCKS, THREADS),
         ("bar_k32", "bar_k32", BLOCKS, THREADS), ("nobar_k32", "nobar_k32", BLOCKS, THREADS),
         ("nobar_k2", "nobar_k2", BLOCKS, THREADS), ("bar_k32_132", "bar_k32", 132, THREADS),
         ("nobar_k32_132", "nobar_k32", 132, THREADS),
         # the scan's phase shapes: W warps of each block active, L loads a phase (4 blocks a SM)
         ("few_k2_w16_l2", "few_k2_w16_l2", BLOCKS, THREADS), ("few_k4_w8_l2", "few_k4_w8_l2", BLOCKS, THREADS),
         ("few_k8_w4_l2", "few_k8_w4_l2", BLOCKS, THREADS), ("few_k8_w4_l1", "few_k8_w4_l1", BLOCKS, THREADS),
         ("few_k16_w2_l2", "few_k16_w2_l2", BLOCKS, THREADS), ("few_k32_w1_l2", "few_k32_w1_l2", BLOCKS, THREADS),
         # one block a SM: a sub-partition's back-to-back conflicted loads, alone and beside others
         ("few_k8_w1_l1_132", "few_k8_w1_l1", 132, THREADS), ("few_k8_w1_l2_132", "few_k8_w1_l2", 132, THREADS),
         ("few_k8_w1_l4_132", "few_k8_w1_l4", 132, THREADS), ("few_k8_w2_l4_132", "few_k8_w2_l4", 132, THREADS),
         ("few_k8_w4_l4_132", "few_k8_w4_l4", 132, THREADS), ("few_k8_w8_l4_132", "few_k8_w8_l4", 132, THREADS),
         ("few_k2_w1_l4_132", "few_k2_w1_l4", 132, THREADS), ("few_k32_w1_l4_132", "few_k32_w1_l4", 132, THREADS),
         ("few_k32_w4_l4_132", "few_k32_w4_l4", 132, THREADS),
         # two warps' loads beside each other: another sub-partition's (sp1) or the same one's (sp0), one block a SM
         ("two_k8l4_k1l4_sp1", "two_k8l4_k1l4_sp1", 132, THREADS), ("two_k8l4_k8l1_sp1", "two_k8l4_k8l1_sp1", 132, THREADS),
         ("two_k8l4_k8l4_sp1", "two_k8l4_k8l4_sp1", 132, THREADS), ("two_k8l4_k8l4_sp0", "two_k8l4_k8l4_sp0", 132, THREADS),
         ("two_k1l4_k1l4_sp1", "two_k1l4_k1l4_sp1", 132, THREADS), ("two_k1l4_none", "two_k1l4_none", 132, THREADS),
         ("two_k32l2_k32l2_sp1", "two_k32l2_k32l2_sp1", 132, THREADS), ("two_k32l2_none", "two_k32l2_none", 132, THREADS),
         # run 6 (session 39): the branchy two-warp code with one warp (warp B absent); warps of different blocks, each
         # its own barrier, on one sub-partition (264 / 528 blocks of 16 warps: every block's warp 0 on sub-partition 0)
         # or on two (264 blocks of 15 warps: the second block's warp 0 on sub-partition 3); phases without barriers
         ("two_k1l4_absent", "two_k1l4_absent", 132, THREADS), ("two_k8l4_absent", "two_k8l4_absent", 132, THREADS),
         ("two_k32l2_absent", "two_k32l2_absent", 132, THREADS),
         ("few_k8_w1_l4_264", "few_k8_w1_l4", 264, THREADS), ("few_k8_w1_l4_528", "few_k8_w1_l4", 528, THREADS),
         ("few_k8_w1_l4_264_t480", "few_k8_w1_l4", 264, 480), ("few_k1_w1_l4_264_t480", "two_k1l4_none", 264, 480),
         ("fewnobar_k8_w4_l2", "fewnobar_k8_w4_l2", BLOCKS, THREADS), ("fewnobar_k16_w2_l2", "fewnobar_k16_w2_l2", BLOCKS, THREADS),
         ("fewnobar_k8_w1_l4_132", "fewnobar_k8_w1_l4", 132, THREADS), ("fewnobar_k8_w2_l4_132", "fewnobar_k8_w2_l4", 132, THREADS),
         # run 7 (session 39): no barrier, one block a SM; K-way loads four an iteration from warps 0 (w1), 0-1 (w2),
         # 0-3 (w4), 0-7 (w8: two a sub-partition), or 0 and 4 (s2), 0, 4, 8 and 12 (s4): all on sub-partition 0
         *[(f"mask_k{k}_{m}", f"mask_k{k}_{m}", 132, THREADS) for k in MASK_K for m in MASK_WARPS],
         # run 8: warp 0 of 2 or 4 blocks a SM (all on sub-partition 0), each block's other warps gone, no barrier
         ("mask_k8_w1_264", "mask_k8_w1", 264, THREADS), ("mask_k8_w1_528", "mask_k8_w1", 528, THREADS),
         ("mask_k32_w1_528", "mask_k32_w1", 528, THREADS), ("mask_k2_w1_528", "mask_k2_w1", 528, THREADS),
         # run 9: warp 0's barrier phases of four 8-way loads with fewer warps a block waiting at each barrier
         # (blocks of 1-8 warps, 1 and 4 blocks a SM), the same with conflict-free loads, and warp 0 with a barrier
         # of its own (bar.sync 1, 32) while the block's other warps leave at once or wait at one barrier throughout
         *[(f"few_k8_w1_l4_{b}_t{t}", "few_k8_w1_l4", b, t) for b in (132, 528) for t in (32, 64, 128, 256)],
         ("few_k1_w1_l4_132", "few_k1_w1_l4", 132, THREADS), ("few_k1_w1_l4_528", "few_k1_w1_l4", 528, THREADS),
         ("few_k1_w1_l4_132_t32", "few_k1_w1_l4", 132, 32), ("few_k1_w1_l4_528_t32", "few_k1_w1_l4", 528, 32),
         *[(f"solo_{k}_{m}_{b}", f"solo_{k}_{m}", b, THREADS) for k in ("k8_l4", "k1_l4", "k32_l2")
           for m in ("gone", "wait") for b in (132, 528)]]


def _steps(name: str) -> int:
    """The steps a launch of kernel `name` takes: barrier phases, or dependent shared accesses."""
    return REPS * 256 if name.startswith(("chase", "rmw")) else REPS * PHASES
REPEATS = 3


def worker() -> None:
    import cupy as cp                    # here, not at the top: only running needs a GPU
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    mod = cp.RawModule(code=SOURCE, options=(f"--gpu-architecture=sm_{props['major']}{props['minor']}",), backend="nvrtc")
    x = cp.asarray(np.ones(1056 * 1024, np.float32))          # copied, not filled: no kernel of CuPy's own is profiled
    out = cp.empty(1056 * 1024, dtype=cp.float32)
    for _case, name, blocks, threads in CASES:
        for _ in range(REPEATS):
            mod.get_function(name)((blocks,), (threads,), (x, out, cp.int32(REPS)))
    cp.cuda.Device().synchronize()


def measure(out_dir: str) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "scan_phases_ncu.csv"
    cmd, rc, kernels = ncu.profile_worker("validate.scan_phases_probe", METRICS, log)
    ident = ncu.gpu_identity()
    rows = []
    for i, (case, name, blocks, threads) in enumerate(CASES):
        got = [k["metrics"] for k in kernels[i * REPEATS:(i + 1) * REPEATS]]
        durs = sorted(m.get("gpu__time_duration.sum") or 0 for m in got)
        cyc = sorted(m.get("sm__cycles_elapsed.max") or 0 for m in got)
        rows.append({"case": case, "kernel": name, "blocks": blocks, "threads": threads,
                     "cycles_per_step": cyc[len(cyc) // 2] / _steps(name) if cyc else None,
                     "duration_ns_median": durs[len(durs) // 2] if durs else None, "duration_ns": durs,
                     "metrics": got[-1] if got else {}})
    doc = {"provenance": {"gpu": ident, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "command": "python -m validate.scan_phases_probe $OUT", "ncu": " ".join(cmd[:12]),
                          "blocks": BLOCKS, "threads": THREADS, "reps": REPS, "method": __doc__.split("\n\n")[0]},
           "ncu_rc": rc.returncode, "ncu_tail": rc.stdout[-1500:], "kernels": rows}
    path = out / "scan_phases.json"
    path.write_text(json.dumps(doc, indent=1))
    for r in rows:
        print(f"{r['case']:14s} {r['duration_ns_median']} ns, {r['cycles_per_step']} cycles a step")
    return path


def predict(gpu: str, measured: str | None = None) -> list[dict]:
    """gpusim's time of each kernel (and the measured one beside it, from a file `measure` wrote)."""
    import gpusim                        # here: the GPU machine's side runs without gpusim's dependencies (simpy)
    meas = {}
    if measured:
        meas = {r["case"]: r for r in json.loads(Path(measured).read_text())["kernels"]}
    x = np.ones(1056 * 1024, np.float32)
    out = np.zeros(1056 * 1024, np.float32)
    rows = []
    for case, name, blocks, threads in CASES:
        if name.startswith("solo_"):                 # bar.sync with a thread count: gpusim refuses it (UnsupportedInstruction)
            continue
        m = gpusim.launch(gpusim.CudaSource(SOURCE, name), blocks, threads, (x, out, np.int32(REPS)), gpu=gpu,
                          timing=True, outputs=False).metrics
        got = meas.get(case, {})
        rows.append({"case": case, "predicted_ns": m["gpu__time_duration.sum"], "measured_ns": got.get("duration_ns_median"),
                     "predicted_cycles_per_step": m["sm__cycles_elapsed.max"] / _steps(name),
                     "measured_cycles_per_step": got.get("cycles_per_step")})
    return rows


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    elif "--predict" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--predict"]
        for r in predict(rest[0], rest[1] if len(rest) > 1 else None):
            print(r)
    else:
        print(measure(next((a for a in sys.argv[1:] if not a.startswith("-")), os.environ.get("OUT", "."))))
