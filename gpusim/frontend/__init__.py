"""Kernel source -> compiled kernel: the seam every kernel language implements (`source.py`:
`KernelSource`, `CompiledKernel`; docs/frontend.md) and the languages: Numba
(`numbasource.py`, below), PTX files (`ptxsource.py`), CUDA C++ through NVRTC
(`cudasource.py`), Triton (`tritonsource.py`), the last three passing arguments as the CUDA
driver does (`rawargs.py`). Nothing here imports the drop-ins (`gpusim.cuda`,
`gpusim.cupy`) or `gpusim.api`: they sit above.

Compiling a Numba kernel:
- `compile.py`: the entry point (`compile_kernel`, `CompiledKernel`) and its in-memory
  and disk caches; `numbacompile.py`: the call into Numba's `compile_ptx` on a miss.
- `argtypes.py`: Numba types of launch arguments; `fingerprint.py`: the cache key of
  what Numba freezes into the PTX; `diskcache.py`: checked, atomic cache entries.
- `retarget.py`: a `gpusim.cuda` kernel pointed at `numba.cuda`; `current_launch.py`: the
  launch configuration a compiling kernel's passes may read (numba-cuda's
  `cuda.launchconfig`; the drop-in's launch sets it); `rejections.py`: why a
  kernel cannot be compiled, in the user's terms; `numba_errors.py`: those errors as
  Numba's exception types.
- `link.py`, `externs.py`: device functions inlined, CUDA C++ `link=` sources (NVRTC).
- Instrumented PTX: `printf.py` (`print()`), `nrt.py` (Numba's runtime), `cg.py` (grid
  sync), `captured.py` (device arrays captured as globals), `kernel_exceptions.py`
  (`debug=True` exceptions).
- `sass/`: the kernel's SASS from ptxas, mapped onto the PTX (its `__init__` has a map).

Launching: `args.py` (arguments -> `.param` bytes, Numba's array ABI).

The `gpusim.cuda` drop-in for `numba.cuda` (its `jit`, dispatcher, device arrays, driver
shims, host compile, libraries) is the package `gpusim/cuda/`.
"""
