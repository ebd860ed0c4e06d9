"""From a Numba CUDA kernel to what the simulator runs: compilation to PTX, kernel
arguments, and the `gpusim.cuda` drop-in for `numba.cuda`.

Compiling a kernel:
- `compile.py`: the entry point (`compile_kernel`, `CompiledKernel`) and its in-memory
  and disk caches; `numbacompile.py`: the call into Numba's `compile_ptx` on a miss.
- `argtypes.py`: Numba types of launch arguments; `fingerprint.py`: the cache key of
  what Numba freezes into the PTX; `diskcache.py`: checked, atomic cache entries.
- `retarget.py`: a `gpusim.cuda` kernel pointed at `numba.cuda`; `rejections.py`: why a
  kernel cannot be compiled, in the user's terms; `numba_errors.py`: those errors as
  Numba's exception types.
- `link.py`, `externs.py`: device functions inlined, CUDA C++ `link=` sources (NVRTC).
- Instrumented PTX: `printf.py` (`print()`), `nrt.py` (Numba's runtime), `cg.py` (grid
  sync), `captured.py` (device arrays captured as globals), `kernel_exceptions.py`
  (`debug=True` exceptions).
- `sass/`: the kernel's SASS from ptxas, mapped onto the PTX (its `__init__` has a map).

Launching: `args.py` (arguments -> `.param` bytes).

The `gpusim.cuda` drop-in: `jit.py` (`cuda.jit`), `dispatcher.py` (the `Dispatcher` it
returns), `launching.py` (`kernel[grid, block]`), `launchconfig.py`, `devicearray.py`,
`cudadrv.py`, `hostcompile.py` (`cuda.compile_ptx` and friends), `library.py`, `rng.py`.
"""
