"""The CUDA C++ tensor-core programs (programs/cuda_kernels/) on a real GPU: `record.py` runs them
through CuPy and writes their outputs with provenance; `compare.py` runs the same inputs through
gpusim and counts the bit-exact outputs (no GPU needed)."""
