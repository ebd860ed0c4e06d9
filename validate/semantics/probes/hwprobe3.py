"""Edge probe: .ftz at the subnormal boundary, .sat/.relu of -0."""
import os
import numpy as np
import cupy as cp
OUT = os.environ.get("OUT", "/tmp/out")
f = np.float32
B = f(2.0 ** -126)
CASES = {
 "mul.rn.ftz.f32": ("f", [[f(1 - 2.0**-24), f(1 - 2.0**-23), f(-(1 - 2.0**-24))], [B, B, B]]),
 "fma.rn.ftz.f32": ("f", [[f(1 - 2.0**-24), f(1 - 2.0**-23)], [B, B], [f(0), f(0)]]),
 "add.rn.ftz.f32": ("f", [[B, B], [f(-2.0**-149), f(-2.0**-150 * 3)]]),
 "add.sat.f32": ("f", [[f(-0.0), f(-0.0), f(0.0)], [f(-0.0), f(0.0), f(-0.0)]]),
 "mul.sat.f32": ("f", [[f(-0.0), f(-1)], [f(1), f(0)]]),
}
CT = {"f": "float"}
src, meta = [], []
for j, (ins, (k, vals)) in enumerate(CASES.items()):
    n = len(vals)
    args = ", ".join(f"const float* a{i}" for i in range(n))
    ops = ", ".join(f"%{i+1}" for i in range(n))
    ins_ = ", ".join(f'"f"(a{i}[i])' for i in range(n))
    src.append(f'extern "C" __global__ void k{j}({args}, float* d, int n) {{ int i = threadIdx.x;'
               f' if (i < n) {{ float r; asm volatile("{ins} %0, {ops};" : "=f"(r) : {ins_}); d[i] = r; }} }}')
# f16 relu of -0 and cvt.rn.ftz.f32.f64 boundary
src.append('extern "C" __global__ void h0(const float* a, unsigned short* d, int n) { int i = threadIdx.x; if (i < n) { unsigned short r; asm volatile("cvt.rn.relu.f16.f32 %0, %1;" : "=h"(r) : "f"(a[i])); d[i] = r; } }')
src.append('extern "C" __global__ void h1(const unsigned short* a, const unsigned short* b, const unsigned short* c, unsigned short* d, int n) { int i = threadIdx.x; if (i < n) { unsigned short r; asm volatile("fma.rn.relu.f16 %0, %1, %2, %3;" : "=h"(r) : "h"(a[i]), "h"(b[i]), "h"(c[i])); d[i] = r; } }')
src.append('extern "C" __global__ void h2(const double* a, float* d, int n) { int i = threadIdx.x; if (i < n) { float r; asm volatile("cvt.rn.ftz.f32.f64 %0, %1;" : "=f"(r) : "d"(a[i])); d[i] = r; } }')
mod = cp.RawModule(code="\n".join(src), options=("-arch=sm_90",))
res = {}
for j, (ins, (k, vals)) in enumerate(CASES.items()):
    arrs = [cp.asarray(np.array(v, np.float32)) for v in vals]
    d = cp.zeros(len(vals[0]), np.float32)
    mod.get_function(f"k{j}")((1,), (32,), (*arrs, d, np.int32(len(vals[0]))))
    res[ins] = [hex(int(x)) for x in d.get().view(np.uint32)]
a = cp.asarray(np.array([-0.0, -1e-30, 0.0], np.float32)); d = cp.zeros(3, np.uint16)
mod.get_function("h0")((1,), (32,), (a, d, np.int32(3))); res["cvt.rn.relu.f16.f32(-0,-1e-30,+0)"] = [hex(int(x)) for x in d.get()]
h = lambda v: np.array(v, np.float16).view(np.uint16)
A, Bb, C = cp.asarray(h([1.0, -1.0, 0.0])), cp.asarray(h([-0.0, 0.0, 0.0])), cp.asarray(h([-0.0, -0.0, -0.0])); d = cp.zeros(3, np.uint16)
mod.get_function("h1")((1,), (32,), (A, Bb, C, d, np.int32(3))); res["fma.rn.relu.f16(1*-0+-0, -1*0+-0, 0*0+-0)"] = [hex(int(x)) for x in d.get()]
a = cp.asarray(np.array([2.0**-126 - 2.0**-151, 2.0**-126 - 2.0**-149, -(2.0**-126 - 2.0**-152)], np.float64)); d = cp.zeros(3, np.float32)
mod.get_function("h2")((1,), (32,), (a, d, np.int32(3))); res["cvt.rn.ftz.f32.f64(2^-126-2^-151, 2^-126-2^-149, -(2^-126-2^-152))"] = [hex(int(x)) for x in d.get().view(np.uint32)]
for k, v in res.items():
    print(k, v)
