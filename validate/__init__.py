"""validate: run the kernels of `programs/` on a real NVIDIA GPU through Numba, record
time and Nsight Compute counters, calibrate presets, and compare model vs measured.
The only package that needs a GPU (issue 4)."""
