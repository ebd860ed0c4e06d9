"""FlashAttention-style forward pass in Triton (the algorithm of Triton's tutorial 06, written
without its TMA descriptors): one program per BLOCK_M queries of one (batch, head); keys and
values walked in BLOCK_N blocks with the online softmax: a running row maximum m_i and row sum
l_i in base 2 (scores scaled by sm_scale * log2(e), `tl.math.exp2`), the accumulator rescaled
by exp2(m_old - m_new) before P @ V is added. `CAUSAL` masks keys after the query (and stops the
key loop at the diagonal block). Q @ K^T and P @ V are `tl.dot`s (f16 in, f32 accumulate; P
rounded to f16 first): `wgmma` on h100/h200, `mma.sync` on a100.

Reference: float64 softmax(Q K^T * sm_scale) V, rounded to f16. Not bit-exact: exp2 is
ex2.approx.f32, P is rounded to f16 before the second product, the online rescaling and the
tensor core's truncated block sums reorder the rounding: about 1e-3 relative (atol/rtol 4e-3
on outputs of magnitude < 3); the bit-exact reference is the GPU (validate/triton_record.py).
"""
import numpy as np
import triton
import triton.language as tl

from programs.base import Case, Deferred, ProgramSpec


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, stride_qz, stride_qm, stride_kz, stride_kn, stride_vz, stride_vn,
             stride_oz, stride_om, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_z = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_z * stride_qz + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + off_z * stride_kz + cols[:, None] * stride_kn + offs_d[None, :],
                    mask=cols[:, None] < N_CTX, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        keep = cols[None, :] < N_CTX
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_z * stride_vz + cols[:, None] * stride_vn + offs_d[None, :],
                    mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(Out + off_z * stride_oz + offs_m[:, None] * stride_om + offs_d[None, :], out.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < N_CTX)


def reference(q, k, v, sm_scale, causal):
    """softmax(Q K^T * sm_scale) V in float64 per (batch*head)."""
    s = np.einsum("zmd,znd->zmn", q.astype(np.float64), k.astype(np.float64)) * sm_scale
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    return np.einsum("zmn,znd->zmd", p, v.astype(np.float64))


def build(rng, heads, n_ctx, head_dim=64, causal=False, block_m=64, block_n=32, num_warps=4, num_stages=2):
    q, k, v = (rng.standard_normal((heads, n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    out = np.full((heads, n_ctx, head_dim), np.nan, np.float16)
    sm_scale = 1.0 / np.sqrt(head_dim)
    sz, sm = n_ctx * head_dim, head_dim
    grid = lambda meta: (triton.cdiv(n_ctx, meta["BLOCK_M"]), heads)
    return Case("triton_flash_attention", attn_fwd, grid, None,
                (q, k, v, out, float(sm_scale), sz, sm, sz, sm, sz, sm, sz, sm, n_ctx), Deferred({3: lambda: reference(q, k, v, sm_scale, causal).astype(np.float16)}),
                rtol=4e-3, atol=4e-3,
                options={"constexprs": {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                                        "CAUSAL": causal},
                         "num_warps": num_warps, "num_stages": num_stages})


PROGRAM = ProgramSpec(
    "triton_flash_attention", "FlashAttention-style forward in Triton (online softmax, causal or not)", build,
    sizes={"default": {"heads": 1, "n_ctx": 64, "head_dim": 32},
           "causal": {"heads": 1, "n_ctx": 64, "head_dim": 32, "causal": True},
           "masked": {"heads": 2, "n_ctx": 100, "head_dim": 32, "causal": True},
           "large": {"heads": 32, "n_ctx": 1024, "head_dim": 64, "block_m": 128, "block_n": 64, "num_warps": 8},
           "large_causal": {"heads": 32, "n_ctx": 1024, "head_dim": 64, "causal": True, "block_m": 128,
                            "block_n": 64, "num_warps": 8}},
    tags=("triton", "tensor", "attention"))
