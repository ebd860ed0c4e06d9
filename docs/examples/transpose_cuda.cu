// A CUDA C++ program file: the shared-memory transpose, with and without padding.
// Its PROGRAM (inputs, launch, numpy reference) is in the Python file beside it,
// transpose_cuda.py; `gpusim run docs/examples/transpose_cuda.cu` loads that file.

template <int TILE, int PAD>
__global__ void transpose(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];      // PAD = 0: a column of the tile, 32-way bank conflicts
}
