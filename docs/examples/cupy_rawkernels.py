"""A CuPy program with CUDA C++ kernels, run in the simulator: the one line changed from the
program that runs on a GPU is the import.

    python docs/examples/cupy_rawkernels.py                       # on the h100 preset
    GPUSIM_CUPY_GPU=h200 python docs/examples/cupy_rawkernels.py  # the same program on the h200

With `import cupy as cp` instead it runs with CuPy on an NVIDIA GPU. It compiles a module of
two templated kernels (a shared-memory transpose, a block reduction) with name expressions,
launches them on CuPy arrays, times them with CUDA events and checks the results against
numpy for equality. Under gpusim the kernels execute bit-exact, and the events read the
timing model's predicted kernel durations (recording an event turns the timing model on).
"""
import numpy as np

import gpusim.cupy as cp  # was: import cupy as cp

SOURCE = r"""
// out (cols x rows) = in (rows x cols) transposed, through a TILE x (TILE + 1) shared tile:
// the padding column keeps the column reads of the tile free of bank conflicts
template <int TILE, int ROWS>
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// one partial sum of squares per block: a tree in shared memory, then the last warp with shuffles
template <typename T, int BLOCK>
__global__ void sum_squares(const T* __restrict__ x, T* __restrict__ partial, int n) {
    __shared__ T s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    T v = i < n ? x[i] * x[i] : T(0);
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = BLOCK / 2; k >= 32; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] = v = v + s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        for (int k = 16; k > 0; k >>= 1) v += __shfl_down_sync(0xffffffffu, v, k);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}
"""

TILE, ROWS, BLOCK = 32, 8, 256


def main() -> None:
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",),
                          name_expressions=(f"transpose<{TILE}, {ROWS}>", f"sum_squares<int, {BLOCK}>"))
    transpose = module.get_function(f"transpose<{TILE}, {ROWS}>")
    sum_squares = module.get_function(f"sum_squares<int, {BLOCK}>")
    start, end = cp.cuda.Event(), cp.cuda.Event()

    rows, cols = 384, 512
    a = cp.random.rand(rows, cols, dtype=cp.float32)
    at = cp.empty((cols, rows), dtype=cp.float32)
    start.record()
    transpose(((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE), (TILE, ROWS),
              (a, at, np.int32(rows), np.int32(cols)))
    end.record()
    end.synchronize()
    ms = cp.cuda.get_elapsed_time(start, end)
    assert np.array_equal(cp.asnumpy(at), cp.asnumpy(a).T)
    print(f"transpose {rows}x{cols}: equal to numpy; {ms * 1e3:.2f} us, "
          f"{2 * a.nbytes / (ms * 1e-3) / 1e9:.0f} GB/s")

    n = 1 << 17
    x = cp.random.randint(-100, 100, size=n, dtype=cp.int32)
    blocks = (n + BLOCK - 1) // BLOCK
    partial = cp.zeros(blocks, dtype=cp.int32)
    start.record()
    sum_squares((blocks,), (BLOCK,), (x, partial, np.int32(n)))
    end.record()
    end.synchronize()
    ms = cp.cuda.get_elapsed_time(start, end)
    total = int(partial.sum())
    host = cp.asnumpy(x).astype(np.int64)
    assert total == int((host * host).sum())
    assert np.array_equal(cp.asnumpy(partial), (host * host).reshape(blocks, BLOCK).sum(axis=1))
    print(f"sum of squares of {n} ints: {total}, equal to numpy; {ms * 1e3:.2f} us")


if __name__ == "__main__":
    main()
