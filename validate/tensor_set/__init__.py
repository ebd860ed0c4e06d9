"""The tensor validation set (issue 29.4): tensor-core and async-copy programs (CUDA C++ and
Triton) at the sizes the issue names, measured on the GPU with Nsight Compute and CUDA events
by `python -m validate measure --suite tensor` and predicted by `python -m validate compare`.

- `suite.py`: the entries (program module, variant, sizes) and the orderings to check;
- `launch.py`: the GPU side: CuPy `RawModule` for CUDA C++ (the same .cu text gpusim compiles),
  Triton's runtime on torch tensors for Triton kernels; checks and CUDA-event times;
- `dryrun.py`: the same entries built and predicted with no GPU (`--dry-run`).

One command on the GPU machine writes the data file with its provenance:

    python -m validate measure --suite tensor --gpu-name h100 --out $OUT/h100_tensor.json --workdir $OUT/work

It needs what `validate measure` needs (Numba with numpy < 2.5 for the L2 flush and ncu's
preflight kernel, Nsight Compute), CuPy and, for the Triton entries, torch with its Triton;
gpusim must import (its simulator is not run: simpy, if missing, is replaced by a placeholder
module for the frontend's sake).
"""
