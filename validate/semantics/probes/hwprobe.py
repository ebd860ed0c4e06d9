"""Run single PTX float instructions (inline asm via CuPy/NVRTC) on random bit patterns; save bits.
Usage on a GPU machine: `OUT=dir python hwprobe.py [1|2]` (batch of instruction forms)."""
import os
import sys
import numpy as np
import cupy as cp
OUT = os.environ.get("OUT", "/tmp/out")
N = 16384
ST = {"f32": (np.float32, "float", "f"), "f64": (np.float64, "double", "d"), "f16": (np.uint16, "unsigned short", "h"),
      "bf16": (np.uint16, "unsigned short", "h"), "b32": (np.uint32, "unsigned int", "r"), "s32": (np.int32, "int", "r"),
      "u32": (np.uint32, "unsigned int", "r"), "s64": (np.int64, "long long", "l"), "u64": (np.uint64, "unsigned long long", "l"),
      "s16": (np.int16, "short", "h")}
# (name, asm, dst type, src types)
# Batches of instruction forms; the second was run after the first had been compared.
BATCHES = {
 "1": [
 ("add_f32", "add.f32", "f32", ["f32"]*2), ("add_rm_f32", "add.rm.f32", "f32", ["f32"]*2),
 ("mul_ftz_f32", "mul.rn.ftz.f32", "f32", ["f32"]*2), ("add_sat_f32", "add.sat.f32", "f32", ["f32"]*2),
 ("fma_rn_f32", "fma.rn.f32", "f32", ["f32"]*3), ("fma_rz_f32", "fma.rz.f32", "f32", ["f32"]*3),
 ("fma_rn_f64", "fma.rn.f64", "f64", ["f64"]*3), ("fma_rm_f64", "fma.rm.f64", "f64", ["f64"]*3),
 ("add_f64", "add.f64", "f64", ["f64"]*2), ("mul_f64", "mul.rn.f64", "f64", ["f64"]*2), ("div_rn_f64", "div.rn.f64", "f64", ["f64"]*2),
 ("div_rz_f32", "div.rz.f32", "f32", ["f32"]*2), ("sqrt_rp_f32", "sqrt.rp.f32", "f32", ["f32"]),
 ("neg_f32", "neg.f32", "f32", ["f32"]), ("abs_f32", "abs.f32", "f32", ["f32"]), ("neg_f64", "neg.f64", "f64", ["f64"]),
 ("min_f32", "min.f32", "f32", ["f32"]*2), ("max_f32", "max.f32", "f32", ["f32"]*2), ("min_f64", "min.f64", "f64", ["f64"]*2),
 ("max_nan_f32", "max.NaN.f32", "f32", ["f32"]*2), ("min_xs_f32", "min.xorsign.abs.f32", "f32", ["f32"]*2),
 ("copysign_f32", "copysign.f32", "f32", ["f32"]*2),
 ("ex2_f32", "ex2.approx.f32", "f32", ["f32"]), ("ex2_ftz_f32", "ex2.approx.ftz.f32", "f32", ["f32"]),
 ("lg2_f32", "lg2.approx.f32", "f32", ["f32"]), ("sin_f32", "sin.approx.f32", "f32", ["f32"]), ("cos_f32", "cos.approx.f32", "f32", ["f32"]),
 ("tanh_f32", "tanh.approx.f32", "f32", ["f32"]), ("rcp_f32", "rcp.approx.f32", "f32", ["f32"]), ("rcp_ftz_f32", "rcp.approx.ftz.f32", "f32", ["f32"]),
 ("rsqrt_f32", "rsqrt.approx.f32", "f32", ["f32"]), ("sqrt_approx_f32", "sqrt.approx.f32", "f32", ["f32"]),
 ("div_approx_f32", "div.approx.f32", "f32", ["f32"]*2), ("div_full_f32", "div.full.f32", "f32", ["f32"]*2),
 ("rcp_ftz_f64", "rcp.approx.ftz.f64", "f64", ["f64"]), ("rsqrt_ftz_f64", "rsqrt.approx.ftz.f64", "f64", ["f64"]),
 ("rsqrt_f64", "rsqrt.approx.f64", "f64", ["f64"]),
 ("add_f16", "add.f16", "f16", ["f16"]*2), ("fma_f16", "fma.rn.f16", "f16", ["f16"]*3), ("fma_relu_f16", "fma.rn.relu.f16", "f16", ["f16"]*3),
 ("fma_bf16", "fma.rn.bf16", "bf16", ["bf16"]*3), ("max_f16", "max.f16", "f16", ["f16"]*2), ("neg_f16", "neg.f16", "f16", ["f16"]),
 ("ex2_f16", "ex2.approx.f16", "f16", ["f16"]), ("tanh_f16", "tanh.approx.f16", "f16", ["f16"]),
 ("cvt_rn_f16_f32", "cvt.rn.f16.f32", "f16", ["f32"]), ("cvt_f32_f16", "cvt.f32.f16", "f32", ["f16"]),
 ("cvt_rn_bf16_f32", "cvt.rn.bf16.f32", "bf16", ["f32"]), ("cvt_relu_f16_f32", "cvt.rn.relu.f16.f32", "f16", ["f32"]),
 ("cvt_rn_f32_f64", "cvt.rn.f32.f64", "f32", ["f64"]), ("cvt_rzi_s32_f32", "cvt.rzi.s32.f32", "s32", ["f32"]),
 ("cvt_rzi_s64_f64", "cvt.rzi.s64.f64", "s64", ["f64"]), ("cvt_rzi_u32_f64", "cvt.rzi.u32.f64", "u32", ["f64"]),
 ("cvt_rni_s64_f32", "cvt.rni.s64.f32", "s64", ["f32"]), ("cvt_rzi_s16_f32", "cvt.rzi.s16.f32", "s16", ["f32"]),
 ("cvt_sat_f32_f32", "cvt.sat.f32.f32", "f32", ["f32"]), ("cvt_rni_f32_f32", "cvt.rni.f32.f32", "f32", ["f32"]),
 ("cvt_f64_f32", "cvt.f64.f32", "f64", ["f32"]), ("cvt_rm_f32_u64", "cvt.rm.f32.u64", "f32", ["u64"]),
 ],
 "2": [
 ("div_rn_ftz_f32", "div.rn.ftz.f32", "f32", ["f32"]*2), ("div_rm_f32", "div.rm.f32", "f32", ["f32"]*2),
 ("rcp_rn_f32", "rcp.rn.f32", "f32", ["f32"]), ("rcp_rz_ftz_f32", "rcp.rz.ftz.f32", "f32", ["f32"]),
 ("sqrt_rn_f32", "sqrt.rn.f32", "f32", ["f32"]), ("sqrt_rz_ftz_f32", "sqrt.rz.ftz.f32", "f32", ["f32"]),
 ("fma_rp_f32", "fma.rp.f32", "f32", ["f32"]*3), ("fma_rm_ftz_f32", "fma.rm.ftz.f32", "f32", ["f32"]*3),
 ("add_rp_f32", "add.rp.f32", "f32", ["f32"]*2), ("sub_rm_f32", "sub.rm.f32", "f32", ["f32"]*2), ("mul_rz_f32", "mul.rz.f32", "f32", ["f32"]*2),
 ("add_rz_f64", "add.rz.f64", "f64", ["f64"]*2), ("mul_rp_f64", "mul.rp.f64", "f64", ["f64"]*2), ("div_rm_f64", "div.rm.f64", "f64", ["f64"]*2),
 ("sqrt_rp_f64", "sqrt.rp.f64", "f64", ["f64"]), ("fma_rp_f64", "fma.rp.f64", "f64", ["f64"]*3), ("rcp_rn_f64", "rcp.rn.f64", "f64", ["f64"]),
 ("cvt_rz_f16_f32", "cvt.rz.f16.f32", "f16", ["f32"]), ("cvt_rm_f16_f32", "cvt.rm.f16.f32", "f16", ["f32"]),
 ("cvt_rz_bf16_f32", "cvt.rz.bf16.f32", "bf16", ["f32"]), ("cvt_rn_f16_f64", "cvt.rn.f16.f64", "f16", ["f64"]),
 ("cvt_rp_f32_f64", "cvt.rp.f32.f64", "f32", ["f64"]), ("cvt_rn_bf16_f64", "cvt.rn.bf16.f64", "bf16", ["f64"]),
 ("cvt_rz_f32_s64", "cvt.rz.f32.s64", "f32", ["s64"]), ("cvt_rn_f64_u64", "cvt.rn.f64.u64", "f64", ["u64"]),
 ("cvt_rp_f16_s32", "cvt.rp.f16.s32", "f16", ["s32"]), ("cvt_rn_bf16_u32", "cvt.rn.bf16.u32", "bf16", ["u32"]),
 ("cvt_rpi_s16_f16", "cvt.rpi.s16.f16", "s16", ["f16"]), ("cvt_rni_u32_f16", "cvt.rni.u32.f16", "u32", ["f16"]),
 ("cvt_rmi_s32_bf16", "cvt.rmi.s32.bf16", "s32", ["bf16"]), ("cvt_rzi_u64_f64", "cvt.rzi.u64.f64", "u64", ["f64"]),
 ("cvt_rzi_s8_f32", "cvt.rzi.s8.f32", "s16", ["f32"]), ("cvt_f32_bf16", "cvt.f32.bf16", "f32", ["bf16"]),
 ("cvt_rn_bf16_f16", "cvt.rn.bf16.f16", "bf16", ["f16"]), ("cvt_rz_f16_bf16", "cvt.rz.f16.bf16", "f16", ["bf16"]),
 ("cvt_rpi_f32_f32", "cvt.rpi.ftz.f32.f32", "f32", ["f32"]), ("cvt_rmi_f64_f64", "cvt.rmi.f64.f64", "f64", ["f64"]),
 ("cvt_rni_f16_f16", "cvt.rni.f16.f16", "f16", ["f16"]), ("cvt_sat_s8_s32", "cvt.sat.s8.s32", "s16", ["s32"]),
 ("cvt_sat_u32_s64", "cvt.sat.u32.s64", "u32", ["s64"]), ("cvt_sat_s32_u64", "cvt.sat.s32.u64", "s32", ["u64"]),
 ("cvt_u64_s32", "cvt.u64.s32", "u64", ["s32"]), ("cvt_s16_u32", "cvt.s16.u32", "s16", ["u32"]),
 ("cvt_sat_f16_f32", "cvt.rn.sat.f16.f32", "f16", ["f32"]), ("cvt_satfinite_bf16_f32", "cvt.rn.satfinite.bf16.f32", "bf16", ["f32"]),
 ("add_sat_f16", "add.sat.f16", "f16", ["f16"]*2), ("mul_ftz_f16", "mul.ftz.f16", "f16", ["f16"]*2), ("sub_bf16", "sub.bf16", "bf16", ["bf16"]*2),
 ("min_nan_f16", "min.NaN.f16", "f16", ["f16"]*2), ("max_xs_bf16", "max.xorsign.abs.bf16", "bf16", ["bf16"]*2),
 ("add_f16x2", "add.f16x2", "b32", ["b32"]*2), ("fma_bf16x2", "fma.rn.bf16x2", "b32", ["b32"]*3), ("neg_bf16", "neg.bf16", "bf16", ["bf16"]),
 ("abs_ftz_f16", "abs.ftz.f16", "f16", ["f16"]), ("min_f16x2", "min.f16x2", "b32", ["b32"]*2),
 ("ex2_ftz_bf16", "ex2.approx.ftz.bf16", "bf16", ["bf16"]), ("tanh_bf16", "tanh.approx.bf16", "bf16", ["bf16"]),
 ("rsqrt_f64b", "rsqrt.approx.f64", "f64", ["f64"]),
 ],
}
OPS = BATCHES[sys.argv[1] if len(sys.argv) > 1 else "1"]      # python hwprobe.py [1|2]
src = []
for name, ins, dt, sts in OPS:
    _, cd, kd = ST[dt]
    args = ", ".join(f"const {ST[t][1]}* a{i}" for i, t in enumerate(sts))
    ops = ", ".join(f"%{i+1}" for i in range(len(sts)))
    ins_ = ", ".join(f'"{ST[t][2]}"(a{i}[i])' for i, t in enumerate(sts))
    src.append(f'extern "C" __global__ void {name}({args}, {cd}* d, int n) {{ int i = blockIdx.x*blockDim.x+threadIdx.x;'
               f' if (i < n) {{ {cd} r; asm volatile("{ins} %0, {ops};" : "={kd}"(r) : {ins_}); d[i] = r; }} }}')
mod = cp.RawModule(code="\n".join(src), options=("-arch=sm_90",))
rng = np.random.default_rng(123)

def rand(t):
    dt = ST[t][0]
    nb = np.dtype(dt).itemsize * 8
    raw = rng.integers(0, 2**63, N, dtype=np.uint64) ^ (rng.integers(0, 2, N, dtype=np.uint64) << np.uint64(63))
    raw = raw >> np.uint64(64 - nb)
    if t in ("f32", "f64", "f16", "bf16"):   # a third near 1.0, some specials
        eb, mb = {"f32": (8, 23), "f64": (11, 52), "f16": (5, 10), "bf16": (8, 7)}[t]
        bias = (1 << (eb - 1)) - 1
        k = N // 3
        e = rng.integers(bias - 8, bias + 8, k).astype(np.uint64)
        raw[:k] = (raw[:k] & np.uint64((1 << (nb - 1)) | ((1 << mb) - 1))) | (e << np.uint64(mb))
        inf = ((1 << eb) - 1) << mb
        sp = np.array([0, 1 << (nb - 1), inf, inf | (1 << (nb - 1)), inf | 1, inf | (1 << (mb - 1)) | 5, 1, (1 << mb) - 1], np.uint64)
        idx = rng.integers(0, N, N // 20)
        raw[idx] = rng.choice(sp, idx.size)
    return raw.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[nb]).view(dt) if t not in ("f16", "bf16") else raw.astype(np.uint16)

res = {}
for name, ins, dt, sts in OPS:
    ins_arr = [rand(t) for t in sts]
    d = cp.empty(N, ST[dt][0])
    mod.get_function(name)(((N + 255) // 256,), (256,), (*[cp.asarray(x) for x in ins_arr], d, np.int32(N)))
    res[name] = d.get()
    for i, x in enumerate(ins_arr):
        res[f"{name}__in{i}"] = x
cp.cuda.Device().synchronize()
np.savez_compressed(os.path.join(OUT, "hwprobe.npz"), **res)
print("ok", len(OPS), cp.cuda.runtime.getDeviceProperties(0)["name"])
