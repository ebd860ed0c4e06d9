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
