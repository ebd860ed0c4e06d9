"""CUDA C++ programs on the tensor cores, and the CUDA-core SGEMM they are measured against: each
a .cu file with the Python file of the same name beside it defining its PROGRAM (inputs, launch,
numpy reference), run as `gpusim run programs/cuda_kernels/wmma_gemm.py` (or the .cu) and
launched as `gpusim.launch(case.kernel, case.grid, case.block, case.args)`.

- `wmma_gemm`: nvcuda::wmma fragments (f16 or bf16 in, f32 accumulate), shared-memory tiles;
- `mma_gemm` / `mma_gemm_single`: inline PTX mma.sync.m16n8k16 + ldmatrix, tiles copied by
  cp.async, double-buffered / single-buffered (one kernel template, `STAGES` 2 or 1);
- `sgemm`: f32 on the CUDA cores, register tiled.

Tensor-core outputs are bit-exact against the GPU's for the same inputs (recorded by
`validate/tensor_programs/record.py`); `Case.expected` is numpy's product with a tolerance.
Not in `programs.PROGRAMS` (the top-level library): `programs.load_file` reads them.
"""
