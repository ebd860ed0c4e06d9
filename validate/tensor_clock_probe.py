"""The SM clock a kernel runs at with and without tensor instructions (issue 29,
`ClockSpec.tensor_clock_mhz`, gpusim/timing/clock_domain.py): loops of mma.sync (FP16 and INT8
HMMA/IMMA) and of FFMA, each at 1, 4 and 16 warps per SM and each long (about 20 ms) and short
(about 20 us), and FP16 at 16 warps per SM for about 1 s, clocks not locked. Each block reads `clock64` and `%globaltimer` around its loop:
cycles / nanoseconds is the clock it ran at; CUDA events time the launch as a check. An
`nvidia-smi` sampler (every 20 ms) records the clock, power and the active clock-event reasons
(power cap, thermal, ...) beside it.

    python -m validate.tensor_clock_probe --out $OUT/tensor_clock_h100.json   # on the GPU machine

Needs nvcc (CUDA 12.x/13.x, sm_90a); about a minute. Output: per run the kernel, warps per SM,
loop length, median and range over the blocks of the measured MHz, the event time, and the
sampler's rows.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import tempfile
from pathlib import Path

SOURCE = r"""
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ uint64_t gtimer() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

// four independent m16n8k16 FP16 (or m16n8k32 INT8) chains a warp: enough to fill the pipe at 16 warps/SM
template <bool INT8>
__global__ void mma_loop(long iters, unsigned long long* rec, float* sink) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; i++) a[i] = 0x3c003c00u ^ (threadIdx.x * 2654435761u + i);
  for (int i = 0; i < 2; i++) b[i] = 0x3c003c00u ^ (threadIdx.x * 40503u + i);
  float c[4][4] = {}; int d[4][4] = {};
  __syncthreads();
  uint64_t c0 = clock64(), g0 = gtimer();
  for (long it = 0; it < iters; it++) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      if (INT8)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  uint64_t c1 = clock64(), g1 = gtimer();
  float s = 0.f;
  for (int j = 0; j < 4; j++) for (int k = 0; k < 4; k++) s += c[j][k] + (float)d[j][k];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) { rec[2 * blockIdx.x] = c1 - c0; rec[2 * blockIdx.x + 1] = g1 - g0; }
}

// eight independent FFMA chains a thread: the FP32 pipes busy, no tensor instruction
__global__ void ffma_loop(long iters, unsigned long long* rec, float* sink) {
  float x[8];
  for (int i = 0; i < 8; i++) x[i] = threadIdx.x * 1e-3f + i;
  __syncthreads();
  uint64_t c0 = clock64(), g0 = gtimer();
  for (long it = 0; it < iters; it++) {
#pragma unroll
    for (int r = 0; r < 16; r++)
#pragma unroll
      for (int i = 0; i < 8; i++) x[i] = fmaf(x[i], 0.999999f, 1e-7f);
  }
  uint64_t c1 = clock64(), g1 = gtimer();
  float s = 0.f;
  for (int i = 0; i < 8; i++) s += x[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) { rec[2 * blockIdx.x] = c1 - c0; rec[2 * blockIdx.x + 1] = g1 - g0; }
}

int main(int argc, char** argv) {
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  int sms = p.multiProcessorCount;
  unsigned long long* rec; float* sink;
  cudaMalloc(&rec, 2 * sms * sizeof(unsigned long long));
  cudaMalloc(&sink, sms * 1024 * sizeof(float));
  unsigned long long* h = (unsigned long long*)malloc(2 * sms * sizeof(unsigned long long));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const char* kinds[3] = {"mma_f16", "mma_s8", "ffma"};
  int warps[3] = {1, 4, 16};
  for (int rep = 0; rep < 3; rep++)
    for (int k = 0; k < 3; k++)
      for (int w = 0; w < 3; w++)
        for (int len = 0; len < 3; len++) {
          if (len == 2 && !(k == 0 && w == 2)) continue;      // 1 s sustained: FP16 mma at 16 warps/SM only
          // iterations for about 20 us (short), 20 ms (long) or 1 s (sustained) at ~1.8 GHz: an mma
          // iteration is 4 HMMAs a warp (about 6 cycles each on its sub-partition's tensor core, 24 for a
          // lone warp's chains), an FFMA iteration 128 FFMAs a thread (one warp instruction a cycle)
          int per_smsp = warps[w] > 4 ? warps[w] / 4 : 1;
          long per_ms = k < 2 ? 1800000L / (24L * per_smsp) : 1800000L / (128L * per_smsp);
          long iters = len == 2 ? per_ms * 1000 : len == 1 ? per_ms * 20 : per_ms / 50;
          int threads = 32 * warps[w];
          usleep(50000);
          cudaEventRecord(e0);
          if (k == 0) mma_loop<false><<<sms, threads>>>(iters, rec, sink);
          else if (k == 1) mma_loop<true><<<sms, threads>>>(iters, rec, sink);
          else ffma_loop<<<sms, threads>>>(iters, rec, sink);
          cudaEventRecord(e1); cudaEventSynchronize(e1);
          float ms; cudaEventElapsedTime(&ms, e0, e1);
          cudaMemcpy(h, rec, 2 * sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
          printf("{\"kernel\": \"%s\", \"warps_per_sm\": %d, \"length\": \"%s\", \"iters\": %ld, \"rep\": %d, "
                 "\"event_ms\": %.6f, \"blocks\": [", kinds[k], warps[w], len == 2 ? "sustained" : len ? "long" : "short", iters, rep, ms);
          for (int b = 0; b < sms; b++) printf("%s[%llu, %llu]", b ? ", " : "", h[2 * b], h[2 * b + 1]);
          printf("]}\n");
          fflush(stdout);
        }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(err)); return 1; }
  return 0;
}
"""


def _mhz(blocks: list) -> list[float]:
    return sorted(c / ns * 1e3 for c, ns in blocks if ns > 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp())
    cu = tmp / "tensor_clock.cu"
    cu.write_text(SOURCE.replace("#include <cstdint>", "#include <cstdint>\n#include <unistd.h>"))
    exe = tmp / "tensor_clock"
    subprocess.run([args.nvcc, "-O3", "-arch=sm_90a", "-o", str(exe), str(cu)], check=True)
    query = "timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader", "-lms", "20"],
                           stdout=subprocess.PIPE, text=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    smi.terminate()
    samples = smi.communicate()[0].strip().splitlines()
    runs = []
    for line in run.stdout.splitlines():
        r = json.loads(line)
        mhz = _mhz(r.pop("blocks"))
        r.update(mhz_median=mhz[len(mhz) // 2], mhz_min=mhz[0], mhz_max=mhz[-1])
        runs.append(r)
    ident = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    nvcc = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out = {"provenance": {"gpu": ident, "nvcc": nvcc, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                          "clocks": "not locked (as found)",
                          "command": "python -m validate.tensor_clock_probe --out $OUT/tensor_clock_<gpu>.json",
                          "method": __doc__.split("\n\n")[0]},
           "sampler_columns": query, "runs": runs, "sampler": samples}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    for r in runs:
        print(f"{r['kernel']:8s} {r['warps_per_sm']:3d} warps/SM {r['length']:5s} rep {r['rep']}: "
              f"{r['mhz_median']:7.1f} MHz ({r['mhz_min']:.0f}-{r['mhz_max']:.0f}), event {r['event_ms']:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
