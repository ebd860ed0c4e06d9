"""Triton matrix multiply (Triton's tutorial 03): C = A @ B with f16, bf16 or fp8 (e4m3) inputs
and f32 accumulation in `tl.dot`, one BLOCK_M x BLOCK_N tile of C per program, programs grouped
GROUP_M tiles down for L2 reuse, K walked in BLOCK_K steps (software-pipelined by Triton over
`num_stages` shared-memory buffers filled with `cp.async`).

The preset decides the tensor-core path, as Triton's compiler does for the target: on h100/h200
(sm_90) `tl.dot` is `wgmma.mma_async` from shared memory; on a100 (sm_80) it is `ldmatrix` +
`mma.sync.m16n8k16`. fp8 e4m3 needs sm_89 or later: for sm_80 Triton itself refuses the kernel
("type fp8e4nv not supported in this architecture"), which gpusim reports as one line naming the
kernel; `dtype="fp8_e5m2"` is the 8-bit input sm_80 accepts (converted to f16 before mma.sync).

Reference: the exact product in float64. Not bit-exact against it: the tensor core sums each
16-product block (32 for fp8 wgmma) truncated to the largest exponent and accumulates in f32
(docs/tensor_numerics.md), so results are within about 2^-20 of sum|a||b| of it (for fp8 on
sm_90 K/32 * 2^-13 of it: wgmma truncates the accumulator to a 14-bit window per 32-product
block); the bit-exact
reference is the GPU's output (validate/triton_record.py records it). Inputs are standard
normal, rounded to the input type, so products and sums round.
"""
import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from programs.base import Case, Deferred, ProgramSpec

DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
          "fp8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn), "fp8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def inputs(rng, m, n, k, dtype):
    """(A, B) standard normal rounded to `dtype` (a key of DTYPES)."""
    dt = DTYPES[dtype]
    return rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt)


def build(rng, m, n, k, dtype="f16", block_m=64, block_n=64, block_k=None, group_m=8, num_warps=4, num_stages=3):
    a, b = inputs(rng, m, n, k, dtype)
    c = np.full((m, n), np.nan, np.float32)
    fp8 = dtype.startswith("fp8")
    block_k = block_k or (64 if fp8 else 32)        # fp8 wgmma/mma is k32
    # Hopper's fp8 wgmma truncates the accumulator with each 32-product block to a 14-bit window
    # (docs/tensor_numerics.md): up to 2^-13 of the running sum lost per block
    per_scale = k / 32 * 2.0 ** -13 if fp8 else 2.0 ** -20
    f64 = lambda x: x.astype(np.float64)            # the reference and its bound are computed when first checked
    atol = lambda: per_scale * float((np.abs(f64(a)) @ np.abs(f64(b))).max())
    meta = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": group_m}
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
    return Case("triton_matmul", matmul_kernel, grid, None, (a, b, c, m, n, k, k, 1, n, 1, n, 1),
                Deferred({2: lambda: (f64(a) @ f64(b)).astype(np.float32)}), rtol=1e-5, atol=atol,
                options={"constexprs": meta, "num_warps": num_warps, "num_stages": num_stages})


PROGRAM = ProgramSpec(
    "triton_matmul", "C = A @ B in Triton with tl.dot (f16/bf16/fp8 in, f32 accumulate; wgmma or mma.sync)", build,
    sizes={"default": {"m": 64, "n": 64, "k": 64, "dtype": "f16"},
           "bf16": {"m": 64, "n": 64, "k": 64, "dtype": "bf16"},
           "fp8_e4m3": {"m": 64, "n": 64, "k": 128, "dtype": "fp8_e4m3"},
           "fp8_e5m2": {"m": 64, "n": 64, "k": 128, "dtype": "fp8_e5m2"},
           "masked": {"m": 100, "n": 72, "k": 80, "dtype": "f16"},
           "large": {"m": 1024, "n": 1024, "k": 1024, "dtype": "f16", "block_m": 128, "block_n": 128,
                     "block_k": 64, "num_warps": 8},
           "large_bf16": {"m": 1024, "n": 1024, "k": 1024, "dtype": "bf16", "block_m": 128, "block_n": 128,
                          "block_k": 64, "num_warps": 8},
           "large_fp8_e4m3": {"m": 1024, "n": 1024, "k": 1024, "dtype": "fp8_e4m3", "block_m": 128,
                              "block_n": 128, "block_k": 128, "num_warps": 8}},
    tags=("triton", "tensor"))
