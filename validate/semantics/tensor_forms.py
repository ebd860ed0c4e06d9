"""The tensor-core instruction forms the GPU probe runs, and the CUDA C++ that runs each one.

`MMA_FORMS` are the `mma.sync` forms Triton 3.x and CUDA C++ (`wmma`, `mma`) emit for sm_80/sm_90:
f16 and bf16 (m16n8k16, m16n8k8; f32 and f16 accumulators), tf32 (m16n8k8, m16n8k4), s8/u8
(m16n8k32, m16n8k16; with and without .satfinite), e4m3/e5m2 (m16n8k32; f32 and f16
accumulators; on sm_90 ptxas emulates them with F2FP unpacks, two HMMA.16816 and a
FADD/HADD2 of C, see the recorded SASS) and f64 (m8n8k4, the `wmma` double shape).
`WGMMA_FORMS` are the Hopper `wgmma.mma_async` forms (sm_90a): m64nNk16 f16/bf16, m64nNk8
tf32, m64nNk32 e4m3/e5m2 and s8/u8, with A from shared memory (descriptor) or registers.

`cuda_source_mma()` / `cuda_source_wgmma()` write the C++ structs (one per form: register
counts and an inline-asm call) that `tensor_cu/*.cu` include; `validate/semantics/tensor_probe.py`
writes them into its build folder before compiling, so the table here is the only list.
"""
from __future__ import annotations

from dataclasses import dataclass

from isa.semantics.mma_layout import SHAPES

#: element bits, exponent bits, fraction bits, bias, has infinities (None for integers)
TYPES = {
    "f16": (16, 5, 10, 15, True), "bf16": (16, 8, 7, 127, True), "tf32": (32, 8, 10, 127, True),
    "e4m3": (8, 4, 3, 7, False), "e5m2": (8, 5, 2, 15, True), "f32": (32, 8, 23, 127, True),
    "f64": (64, 11, 52, 1023, True), "s8": (8, None, None, None, None),
    "u8": (8, None, None, None, None), "s32": (32, None, None, None, None),
}


@dataclass(frozen=True)
class MmaForm:
    name: str
    shape: str          # m16n8k16 ...
    atype: str
    btype: str
    ctype: str          # accumulator (C and D) type
    satfinite: bool = False

    @property
    def mnk(self) -> tuple[int, int, int]:
        return SHAPES[self.shape]

    @property
    def ptx(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        return (f"mma.sync.aligned.{self.shape}.row.col{sat}.{self.ctype}.{self.atype}."
                f"{self.btype}.{self.ctype}")

    def nregs(self) -> tuple[int, int, int]:
        """32-bit registers per lane for A, B, C/D."""
        m, n, k = self.mnk
        ab = TYPES[self.atype][0]
        cb = TYPES[self.ctype][0]
        return m * k * ab // 1024, k * n * ab // 1024, m * n * cb // 1024


def _mma_forms() -> list[MmaForm]:
    f = []
    for sh in ("m16n8k16", "m16n8k8"):
        f.append(MmaForm(f"f16_f32_{sh}", sh, "f16", "f16", "f32"))
        f.append(MmaForm(f"f16_f16_{sh}", sh, "f16", "f16", "f16"))
        f.append(MmaForm(f"bf16_f32_{sh}", sh, "bf16", "bf16", "f32"))
    for sh in ("m16n8k8", "m16n8k4"):
        f.append(MmaForm(f"tf32_f32_{sh}", sh, "tf32", "tf32", "f32"))
    for sh in ("m16n8k32", "m16n8k16"):
        for a, b in (("s8", "s8"), ("u8", "u8"), ("s8", "u8"), ("u8", "s8")):
            f.append(MmaForm(f"{a}{b}_s32_{sh}", sh, a, b, "s32"))
        f.append(MmaForm(f"s8s8_s32sat_{sh}", sh, "s8", "s8", "s32", satfinite=True))
    for a, b in (("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3")):
        f.append(MmaForm(f"{a}{b}_f32_m16n8k32", "m16n8k32", a, b, "f32"))
    for a, b in (("e4m3", "e4m3"), ("e5m2", "e5m2")):
        f.append(MmaForm(f"{a}{b}_f16_m16n8k32", "m16n8k32", a, b, "f16"))
    f.append(MmaForm("f64_f64_m8n8k4", "m8n8k4", "f64", "f64", "f64"))
    return f


MMA_FORMS = _mma_forms()
MMA_BY_NAME = {f.name: f for f in MMA_FORMS}


@dataclass(frozen=True)
class WgmmaForm:
    name: str
    n: int
    atype: str
    btype: str
    dtype: str
    a_regs: bool = False     # A from registers (RS) instead of shared memory (SS)
    trans_a: int = 0         # MN-major A (f16/bf16 only, SS only)
    trans_b: int = 0         # MN-major B (f16/bf16 only)
    satfinite: bool = False

    @property
    def k(self) -> int:
        return 256 // TYPES[self.atype][0] if self.atype != "tf32" else 8

    @property
    def ptx(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        return (f"wgmma.mma_async.sync.aligned.m64n{self.n}k{self.k}{sat}.{self.dtype}."
                f"{self.atype}.{self.btype}")

    @property
    def nacc(self) -> int:
        """32-bit accumulator registers per thread."""
        return self.n // 2 if TYPES[self.dtype][0] == 32 else self.n // 4

    @property
    def is_float(self) -> bool:
        return self.dtype != "s32"


def _w(name, n, a, b, d, **kw):
    return WgmmaForm(name, n, a, b, d, **kw)


def _wgmma_forms() -> list[WgmmaForm]:
    f = []
    # numerics (N = 8) for every type pair and accumulator
    f += [_w("w_f16_f32_n8", 8, "f16", "f16", "f32"), _w("w_f16_f16_n8", 8, "f16", "f16", "f16"),
          _w("w_bf16_f32_n8", 8, "bf16", "bf16", "f32"), _w("w_tf32_f32_n8", 8, "tf32", "tf32", "f32")]
    for a, b in (("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3")):
        f.append(_w(f"w_{a}{b}_f32_n8", 8, a, b, "f32"))
    for a, b in (("e4m3", "e4m3"), ("e5m2", "e5m2")):
        f.append(_w(f"w_{a}{b}_f16_n8", 8, a, b, "f16"))
    for a, b in (("s8", "s8"), ("u8", "u8"), ("s8", "u8")):
        f.append(_w(f"w_{a}{b}_s32_n8", 8, a, b, "s32"))
    f.append(_w("w_s8s8_s32sat_n8", 8, "s8", "s8", "s32", satfinite=True))
    # A from registers
    f += [_w("w_f16_f32_n8_rs", 8, "f16", "f16", "f32", a_regs=True),
          _w("w_tf32_f32_n8_rs", 8, "tf32", "tf32", "f32", a_regs=True),
          _w("w_e4m3e4m3_f32_n8_rs", 8, "e4m3", "e4m3", "f32", a_regs=True)]
    # layouts over N, transposes (also used by the timing runs)
    for n in (16, 24, 32, 64, 128, 256):
        f.append(_w(f"w_f16_f32_n{n}", n, "f16", "f16", "f32"))
    f += [_w("w_f16_f32_n64_ta", 64, "f16", "f16", "f32", trans_a=1),
          _w("w_f16_f32_n64_tb", 64, "f16", "f16", "f32", trans_b=1),
          _w("w_f16_f32_n128_tb", 128, "f16", "f16", "f32", trans_b=1),
          _w("w_f16_f16_n256", 256, "f16", "f16", "f16"),
          _w("w_f16_f16_n128", 128, "f16", "f16", "f16"),
          _w("w_bf16_f32_n256", 256, "bf16", "bf16", "f32"),
          _w("w_tf32_f32_n128", 128, "tf32", "tf32", "f32"),
          _w("w_tf32_f32_n256", 256, "tf32", "tf32", "f32"),
          _w("w_e4m3e4m3_f32_n64", 64, "e4m3", "e4m3", "f32"),
          _w("w_e4m3e4m3_f32_n128", 128, "e4m3", "e4m3", "f32"),
          _w("w_e4m3e4m3_f32_n256", 256, "e4m3", "e4m3", "f32"),
          _w("w_e4m3e4m3_f16_n256", 256, "e4m3", "e4m3", "f16"),
          _w("w_s8s8_s32_n256", 256, "s8", "s8", "s32"),
          _w("w_f16_f32_n256_rs", 256, "f16", "f16", "f32", a_regs=True),
          _w("w_e4m3e4m3_f32_n256_rs", 256, "e4m3", "e4m3", "f32", a_regs=True)]
    return f


WGMMA_FORMS = _wgmma_forms()
WGMMA_BY_NAME = {f.name: f for f in WGMMA_FORMS}
#: the wgmma forms the timing run measures (the N = 8 numerics forms mostly are not)
WGMMA_TIMED = ("w_f16_f32_n8", "w_f16_f32_n16", "w_f16_f32_n32", "w_f16_f32_n64", "w_f16_f32_n128",
               "w_f16_f32_n256", "w_f16_f16_n128", "w_f16_f16_n256", "w_bf16_f32_n256",
               "w_tf32_f32_n128", "w_tf32_f32_n256", "w_e4m3e4m3_f32_n8", "w_e4m3e4m3_f32_n64",
               "w_e4m3e4m3_f32_n128", "w_e4m3e4m3_f32_n256", "w_e4m3e4m3_f16_n256", "w_s8s8_s32_n8",
               "w_s8s8_s32_n256", "w_f16_f32_n256_rs", "w_e4m3e4m3_f32_n256_rs")


# ----------------------------------------------------------------------- C++ emission
def _regs(prefix: str, first: int, count: int) -> str:
    return "{" + ", ".join(f"%{first + i}" for i in range(count)) + "}"


def _mma_struct(idx: int, f: MmaForm) -> str:
    na, nb, nc = f.nregs()
    if f.atype == "f64":     # double operands: 1 A, 1 B, 2 C/D values of 64 bits
        body = (
            "double a0 = __hiloint2double(a[1], a[0]), b0 = __hiloint2double(b[1], b[0]);\n"
            "    double c0 = __hiloint2double(c[1], c[0]), c1 = __hiloint2double(c[3], c[2]), d0, d1;\n"
            f'    asm volatile("{f.ptx} {{%0,%1}}, {{%2}}, {{%3}}, {{%4,%5}};" '
            ': "=d"(d0), "=d"(d1) : "d"(a0), "d"(b0), "d"(c0), "d"(c1));\n'
            "    d[0] = __double2loint(d0); d[1] = __double2hiint(d0);\n"
            "    d[2] = __double2loint(d1); d[3] = __double2hiint(d1);")
    else:
        ops = (f"{_regs('d', 0, nc)}, {_regs('a', nc, na)}, {_regs('b', nc + na, nb)}, "
               f"{_regs('c', nc + na + nb, nc)}")
        outs = ", ".join(f'"=r"(d[{i}])' for i in range(nc))
        ins = ", ".join([f'"r"(a[{i}])' for i in range(na)] + [f'"r"(b[{i}])' for i in range(nb)]
                        + [f'"r"(c[{i}])' for i in range(nc)])
        body = f'asm volatile("{f.ptx} {ops};" : {outs} : {ins});'
    return (f"// {f.name}: {f.ptx}\n"
            f"template <> struct MmaForm<{idx}> {{\n"
            f"  static constexpr int NA = {na}, NB = {nb}, NC = {nc};\n"
            f"  static __device__ __forceinline__ void run(uint32_t* d, const uint32_t* a, "
            f"const uint32_t* b, const uint32_t* c) {{\n    {body}\n  }}\n}};\n")


def cuda_source_mma() -> str:
    parts = ["// generated by validate/semantics/tensor_forms.py: do not edit\n",
             "template <int ID> struct MmaForm;\n"]
    parts += [_mma_struct(i, f) for i, f in enumerate(MMA_FORMS)]
    parts.append(f"#define MMA_FORM_COUNT {len(MMA_FORMS)}\n")
    parts.append("#define MMA_FORM_LIST(X) " + " ".join(f"X({i})" for i in range(len(MMA_FORMS))) + "\n")
    return "".join(parts)


def _wgmma_struct(idx: int, f: WgmmaForm) -> str:
    nacc = f.nacc
    dregs = _regs("d", 0, nacc)
    if f.a_regs:
        a_op, b_idx = _regs("a", nacc, 4), nacc + 4
        a_in = [f'"r"(a[{i}])' for i in range(4)]
    else:
        a_op, b_idx = f"%{nacc}", nacc + 1
        a_in = ['"l"(da)']
    p_idx = b_idx + 1
    tail = ""
    if f.is_float:
        tail = ", 1, 1"
        if f.atype in ("f16", "bf16"):
            tail += f", {f.trans_b}" if f.a_regs else f", {f.trans_a}, {f.trans_b}"
    asm = (f'"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{p_idx}, 0;\\n'
           f'{f.ptx} {dregs}, {a_op}, %{b_idx}, p{tail};\\n}}\\n"')
    outs = ", ".join(f'"+r"(d[{i}])' for i in range(nacc))
    ins = ", ".join(a_in + ['"l"(db)', '"r"(scale_d)'])
    return (f"// {f.name}: {f.ptx}{' (A from registers)' if f.a_regs else ''}"
            f"{' trans-a' if f.trans_a else ''}{' trans-b' if f.trans_b else ''}\n"
            f"template <> struct WgForm<{idx}> {{\n"
            f"  static constexpr int NACC = {nacc}, N = {f.n}, A_REGS = {int(f.a_regs)};\n"
            f"  static __device__ __forceinline__ void run(uint32_t* d, uint64_t da, uint64_t db, "
            f"const uint32_t* a, int scale_d) {{\n"
            f"    asm volatile({asm} : {outs} : {ins} : \"memory\");\n  }}\n}};\n")


def cuda_source_wgmma() -> str:
    parts = ["// generated by validate/semantics/tensor_forms.py: do not edit\n",
             "template <int ID> struct WgForm;\n"]
    parts += [_wgmma_struct(i, f) for i, f in enumerate(WGMMA_FORMS)]
    parts.append(f"#define WG_FORM_COUNT {len(WGMMA_FORMS)}\n")
    parts.append("#define WG_FORM_LIST(X) " + " ".join(f"X({i})" for i in range(len(WGMMA_FORMS))) + "\n")
    parts += [f"#define WG_ID_{f.name} {i}\n" for i, f in enumerate(WGMMA_FORMS)]
    timed = [i for i, f in enumerate(WGMMA_FORMS) if f.name in WGMMA_TIMED]
    parts.append("#define WG_TIMING_LIST(X) " + " ".join(f"X({i})" for i in timed) + "\n")
    return "".join(parts)
