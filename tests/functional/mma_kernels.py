"""PTX text of small test kernels for the tensor-core instructions, written as nvcc/Triton emit
them (one instruction per warp; operands loaded from and stored to global arrays laid out
(cases, 32 lanes, registers) as uint32)."""
from __future__ import annotations

HEADER = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _lane_ptr(param: str, reg: str, n: int) -> str:
    """%rd_<reg> = param + (global lane) * 4 n."""
    return (f"ld.param.u64 %rd_{reg}, [{param}];\n"
            f"mul.wide.u32 %off_{reg}, %gl, {4 * n};\n"
            f"add.s64 %rd_{reg}, %rd_{reg}, %off_{reg};\n")


def mma_kernel(ptx_op: str, na: int, nb: int, nc: int, ctype: str) -> str:
    """A kernel running `ptx_op` once per warp: A, B, C registers from arrays, D to an array."""
    creg = {"f32": ".f32", "f16": ".b32", "s32": ".s32"}[ctype]
    lines = [HEADER, ".visible .entry mma_k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{\n",
             f".reg .b32 %a<{na}>;\n.reg .b32 %b<{nb}>;\n.reg {creg} %c<{nc}>;\n.reg {creg} %d<{nc}>;\n",
             ".reg .b32 %tx, %bx, %gl;\n"]
    for r in "abcd":
        lines.append(f".reg .b64 %rd_{r}, %off_{r};\n")
    lines.append("mov.u32 %tx, %tid.x;\nmov.u32 %bx, %ctaid.x;\nmad.lo.u32 %gl, %bx, 32, %tx;\n")
    for r, n in (("a", na), ("b", nb), ("c", nc), ("d", nc)):
        lines.append(_lane_ptr("p" + r, r, n))
    for r, n in (("a", na), ("b", nb), ("c", nc)):
        t = "b32" if r != "c" else creg[1:]
        for i in range(n):
            lines.append(f"ld.global.{t} %{r}{i}, [%rd_{r}+{4 * i}];\n")
    vec = lambda r, n: "{" + ", ".join(f"%{r}{i}" for i in range(n)) + "}"   # noqa: E731
    lines.append(f"{ptx_op} {vec('d', nc)}, {vec('a', na)}, {vec('b', nb)}, {vec('c', nc)};\n")
    for i in range(nc):
        lines.append(f"st.global.{creg[1:]} [%rd_d+{4 * i}], %d{i};\n")
    lines.append("ret;\n}\n")
    return "".join(lines)


def ldsm_kernel(ptx_op: str, nregs: int, store: bool) -> str:
    """One warp: shared memory (8192 u16) from `psm`, `ptx_op` at the lane's byte offset from
    `paddr`; the registers to `pout` (ldmatrix) or from `pin` (stmatrix); shared memory back to `psm`."""
    vec = "{" + ", ".join(f"%v{i}" for i in range(nregs)) + "}"
    body = [HEADER, ".visible .entry ldsm_k(.param .u64 paddr, .param .u64 pio, .param .u64 psm)\n{\n",
            ".shared .align 128 .b8 sm[16384];\n.reg .b32 %v<4>;\n.reg .b32 %tx, %i, %sb, %sa, %a;\n",
            ".reg .b16 %h;\n.reg .b64 %g, %o, %psm, %pio, %paddr;\n.reg .pred %p;\n",
            "ld.param.u64 %psm, [psm];\nld.param.u64 %pio, [pio];\nld.param.u64 %paddr, [paddr];\n",
            "mov.u32 %tx, %tid.x;\nmov.u32 %sb, sm;\nmov.u32 %i, %tx;\n",
            "$FILL:\nmul.wide.u32 %o, %i, 2;\nadd.s64 %g, %psm, %o;\nld.global.u16 %h, [%g];\n",
            "mad.lo.u32 %sa, %i, 2, %sb;\nst.shared.u16 [%sa], %h;\nadd.u32 %i, %i, 32;\n",
            "setp.lt.u32 %p, %i, 8192;\n@%p bra $FILL;\nbar.warp.sync -1;\n",
            "mul.wide.u32 %o, %tx, 4;\nadd.s64 %g, %paddr, %o;\nld.global.u32 %a, [%g];\nadd.u32 %a, %a, %sb;\n",
            f"mul.wide.u32 %o, %tx, {4 * nregs};\nadd.s64 %g, %pio, %o;\n"]
    if store:
        body += [f"ld.global.u32 %v{i}, [%g+{4 * i}];\n" for i in range(nregs)]
        body.append(f"{ptx_op} [%a], {vec};\n")
    else:
        body.append(f"{ptx_op} {vec}, [%a];\n")
        body += [f"st.global.u32 [%g+{4 * i}], %v{i};\n" for i in range(nregs)]
    body += ["bar.warp.sync -1;\nmov.u32 %i, %tx;\n",
             "$BACK:\nmul.wide.u32 %o, %i, 2;\nadd.s64 %g, %psm, %o;\nmad.lo.u32 %sa, %i, 2, %sb;\n",
             "ld.shared.u16 %h, [%sa];\nst.global.u16 [%g], %h;\nadd.u32 %i, %i, 32;\n",
             "setp.lt.u32 %p, %i, 8192;\n@%p bra $BACK;\nret;\n}\n"]
    return "".join(body)


def wgmma_kernel(ptx_op: str, nacc: int, dtype: str, a_regs: bool, imms: str, smem_bytes: int) -> str:
    """One warpgroup (128 threads) per block and case: `smem_bytes` of shared memory from `psm`
    (case-major), descriptors (A, B, scale-d as three u64 per case, start addresses relative to
    the shared buffer) from `pdesc`, A registers (128 x 4 u32, `_rs` forms) from `pa`, C from
    `pc` (128 x nacc u32); D = `ptx_op` between wgmma.fence and commit/wait_group 0, to `pd`."""
    dreg = {"f32": ".f32", "f16": ".b32", "s32": ".s32"}[dtype]
    vec = lambda r, n: "{" + ", ".join(f"%{r}{i}" for i in range(n)) + "}"   # noqa: E731
    a_op = vec("a", 4) if a_regs else "%da"
    body = [HEADER, ".visible .entry wg_k(.param .u64 psm, .param .u64 pdesc, .param .u64 pa, .param .u64 pc, "
            ".param .u64 pd)\n{\n",
            f".shared .align 1024 .b8 sm[{smem_bytes}];\n.reg .b32 %a<4>;\n.reg {dreg} %d<{nacc}>;\n",
            ".reg .b32 %tx, %bx, %i, %sb, %sa, %v, %gl;\n.reg .b64 %g, %o, %p64, %da, %db, %sd, %sb64, %ga, %gc;\n",
            ".reg .pred %p, %q;\n",
            "mov.u32 %tx, %tid.x;\nmov.u32 %bx, %ctaid.x;\nmov.u32 %sb, sm;\nmov.u32 %i, %tx;\n",
            f"ld.param.u64 %p64, [psm];\nmul.wide.u32 %o, %bx, {smem_bytes};\nadd.s64 %p64, %p64, %o;\n",
            "$FILL:\nmul.wide.u32 %o, %i, 4;\nadd.s64 %g, %p64, %o;\nld.global.u32 %v, [%g];\n",
            "mad.lo.u32 %sa, %i, 4, %sb;\nst.shared.u32 [%sa], %v;\nadd.u32 %i, %i, 128;\n",
            f"setp.lt.u32 %q, %i, {smem_bytes // 4};\n@%q bra $FILL;\nbar.sync 0;\n",
            "ld.param.u64 %g, [pdesc];\nmul.wide.u32 %o, %bx, 24;\nadd.s64 %g, %g, %o;\n",
            "ld.global.u64 %da, [%g];\nld.global.u64 %db, [%g+8];\nld.global.u64 %sd, [%g+16];\n",
            "setp.ne.b64 %p, %sd, 0;\ncvt.u64.u32 %sb64, %sb;\nshr.u64 %sb64, %sb64, 4;\n",
            "add.s64 %da, %da, %sb64;\nadd.s64 %db, %db, %sb64;\nmad.lo.u32 %gl, %bx, 128, %tx;\n",
            "ld.param.u64 %ga, [pa];\nmul.wide.u32 %o, %gl, 16;\nadd.s64 %ga, %ga, %o;\n",
            f"ld.param.u64 %gc, [pc];\nmul.wide.u32 %o, %gl, {4 * nacc};\nadd.s64 %gc, %gc, %o;\n"]
    if a_regs:
        body += [f"ld.global.b32 %a{i}, [%ga+{4 * i}];\n" for i in range(4)]
    body += [f"ld.global{dreg} %d{i}, [%gc+{4 * i}];\n" for i in range(nacc)]
    body += ["wgmma.fence.sync.aligned;\n", f"{ptx_op} {vec('d', nacc)}, {a_op}, %db, %p{imms};\n",
             "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n",
             "ld.param.u64 %gc, [pd];\nmul.wide.u32 %o, %gl, " + str(4 * nacc) + ";\nadd.s64 %gc, %gc, %o;\n"]
    body += [f"st.global{dreg} [%gc+{4 * i}], %d{i};\n" for i in range(nacc)]
    body.append("ret;\n}\n")
    return "".join(body)


def gemm_kernel() -> str:
    """`gemm(A, Bt, D, K, N)`: D (M x N f32) = A (M x K f16, row-major) @ B (K x N f16, given as
    Bt = B^T, N x K row-major), one 16 x 8 tile of D per warp (four warps per block, tiles in
    row-major order), a `mma.sync.m16n8k16` per 16 of K with the fragments loaded straight from
    global memory (lane g = lane / 4, t = lane % 4: A rows g, g + 8, columns 2t, 2t + 8; B^T row
    g, columns 2t, 2t + 8), accumulating from zero in K order."""
    return HEADER + r""".visible .entry gemm(.param .u64 pa, .param .u64 pbt, .param .u64 pd, .param .u32 pk,
                         .param .u32 pn)
{
.reg .b32 %a<4>;
.reg .b32 %b<2>;
.reg .f32 %d<4>;
.reg .b32 %tx, %lane, %g, %t, %w, %tm, %tn, %nt, %row, %col, %k, %K, %N, %x;
.reg .b64 %pa, %pb, %pd, %ra0, %ra1, %rb, %o, %o2;
.reg .pred %p;
ld.param.u64 %pa, [pa];
ld.param.u64 %pb, [pbt];
ld.param.u64 %pd, [pd];
ld.param.u32 %K, [pk];
ld.param.u32 %N, [pn];
mov.u32 %tx, %tid.x;
and.b32 %lane, %tx, 31;
shr.u32 %g, %lane, 2;
and.b32 %t, %lane, 3;
mov.u32 %w, %ctaid.x;
shr.u32 %x, %tx, 5;
mad.lo.u32 %w, %w, 4, %x;
shr.u32 %nt, %N, 3;
div.u32 %tm, %w, %nt;
rem.u32 %tn, %w, %nt;
mad.lo.u32 %row, %tm, 16, %g;
mul.lo.u32 %x, %row, %K;
mad.lo.u32 %x, %t, 2, %x;
mul.wide.u32 %o, %x, 2;
add.s64 %ra0, %pa, %o;
mul.wide.u32 %o2, %K, 16;
add.s64 %ra1, %ra0, %o2;
mad.lo.u32 %col, %tn, 8, %g;
mul.lo.u32 %x, %col, %K;
mad.lo.u32 %x, %t, 2, %x;
mul.wide.u32 %o, %x, 2;
add.s64 %rb, %pb, %o;
mov.f32 %d0, 0f00000000;
mov.f32 %d1, 0f00000000;
mov.f32 %d2, 0f00000000;
mov.f32 %d3, 0f00000000;
mov.u32 %k, 0;
$LOOP:
ld.global.b32 %a0, [%ra0];
ld.global.b32 %a1, [%ra1];
ld.global.b32 %a2, [%ra0+16];
ld.global.b32 %a3, [%ra1+16];
ld.global.b32 %b0, [%rb];
ld.global.b32 %b1, [%rb+16];
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%d0, %d1, %d2, %d3}, {%a0, %a1, %a2, %a3}, {%b0, %b1}, {%d0, %d1, %d2, %d3};
add.s64 %ra0, %ra0, 32;
add.s64 %ra1, %ra1, 32;
add.s64 %rb, %rb, 32;
add.u32 %k, %k, 16;
setp.lt.u32 %p, %k, %K;
@%p bra $LOOP;
mad.lo.u32 %col, %tn, 8, %t;
add.u32 %col, %col, %t;
mul.lo.u32 %x, %row, %N;
add.u32 %x, %x, %col;
mul.wide.u32 %o, %x, 4;
add.s64 %o, %pd, %o;
st.global.f32 [%o], %d0;
st.global.f32 [%o+4], %d1;
mul.wide.u32 %o2, %N, 32;
add.s64 %o, %o, %o2;
st.global.f32 [%o], %d2;
st.global.f32 [%o+4], %d3;
ret;
}
"""
