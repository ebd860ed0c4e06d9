"""Launching a tensor-set case on this machine's GPU (`validate measure --suite tensor`'s
worker): the same kernel gpusim runs, compiled and launched as the GPU's own stack does.

- CUDA C++ (`case.kernel` a `gpusim.CudaSource`): CuPy's `RawModule` compiles the source text
  gpusim compiles, with its options and name expression (template instances included), for
  this GPU (`--gpu-architecture=sm_90a` on Hopper: the architecture-specific target, a superset
  of sm_90, which wgmma and setmaxnreg need), with the .cu file's folder on the include path;
  numpy arrays become CuPy arrays, numpy scalars pass as they are. A program whose arguments
  need more (a TMA descriptor) defines `device_args(case, cupy)` in its module, returning the
  arguments to launch with; otherwise such a case is recorded as not launched, with the reason.
- Triton (`case.kernel` a `triton.JITFunction` or autotuner): launched through Triton's own
  runtime on torch tensors (`kernel[grid](*args, **constexprs, num_warps=, num_stages=)`);
  bfloat16 and FP8 numpy arrays (ml_dtypes) go over as their bits, viewed as torch's type.

`run_case` builds nothing itself: the orchestrator's prefetched `Case` (`spec.case(size)`) is
launched once and its outputs checked against the program's numpy reference (`Case.check`),
then, in the events pass, timed with CUDA events as `validate.measure_worker` times Numba
kernels (3 isolated launches, then N back-to-back).
"""
from __future__ import annotations

import ctypes
import importlib
import statistics
import traceback
from pathlib import Path

import numpy as np

from validate.tensor_programs.record import include_dirs
from validate.tensor_set.suite import BY_NAME

_TORCH_BY_BITS = {"bfloat16": ("bfloat16", np.uint16), "float8_e4m3fn": ("float8_e4m3fn", np.uint8),
                  "float8_e5m2": ("float8_e5m2", np.uint8)}


class NotLaunchable(Exception):
    """The case cannot be launched by this harness (the message says why)."""


def language(kernel) -> str:
    """'cuda', 'triton' or 'numba' by the kernel object's type (no gpusim import needed)."""
    if getattr(kernel, "language", None) == "cuda":
        return "cuda"
    mod = type(kernel).__module__
    if mod.startswith("triton"):
        return "triton"
    if hasattr(kernel, "py_func"):
        return "numba"
    raise NotLaunchable(f"kernel of type {type(kernel).__name__} ({mod}): not CUDA C++, Triton or Numba")


def kernel_name(kernel) -> str:
    """The name Nsight shows the kernel under, as far as `validate.ncu.match` needs it: the
    function name without template arguments."""
    kind = language(kernel)
    if kind == "cuda":
        return kernel.name.split("<", 1)[0].strip()
    if kind == "triton":
        fn = getattr(kernel, "fn", kernel)
        while hasattr(fn, "fn") and not hasattr(fn, "__name__"):
            fn = fn.fn
        return getattr(fn, "__name__", None) or fn.fn.__name__
    return kernel.py_func.__name__


def launch_grid(case) -> list[int] | None:
    """The grid as a list of 3 (a Triton grid callable evaluated on the case's constexprs;
    None where it needs more, e.g. an autotuner's choice)."""
    g = case.grid
    if callable(g):
        try:
            g = g(dict(case.options.get("constexprs", {})))
        except Exception:                          # noqa: BLE001 - informational
            return None
    g = [int(x) for x in (g if isinstance(g, (tuple, list)) else (g,))]
    return (g + [1, 1])[:3]


def launch_block(case) -> list[int] | None:
    """The block as a list of 3 (Triton: num_warps x 32 threads)."""
    b = case.block
    if b is None:
        w = case.options.get("num_warps")
        return [32 * int(w), 1, 1] if w else None
    b = [int(x) for x in (b if isinstance(b, (tuple, list)) else (b,))]
    return (b + [1, 1])[:3]


# ---- CUDA C++ through CuPy ------------------------------------------------------------------

def _cupy_launcher(case, module):
    import cupy as cp  # here: only the GPU side needs CuPy
    k = case.kernel
    dev = cp.cuda.Device()
    cc = dev.compute_capability                    # e.g. '90'
    arch = f"sm_{cc}a" if cc in ("90", "100") else f"sm_{cc}"
    opts = tuple(k.options) + (f"--gpu-architecture={arch}",)
    if k.path and Path(k.path).is_file():
        opts += (f"-I{Path(k.path).parent}",)
    opts += tuple(f"-I{d}" for d in include_dirs() if f"-I{d}" not in opts)   # mma.h's crt/mma.h (wmma)
    mod = cp.RawModule(code=k.text, options=opts, name_expressions=(k.name,), backend="nvrtc")
    fn = mod.get_function(k.name)
    if case.shared_bytes > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = case.shared_bytes
    hook = getattr(module, "device_args", None)
    maps: dict[int, object] = {}                   # argument index -> the device array behind a tensor map
    if hook is not None:
        dargs = list(hook(case, cp))
    else:
        bad = [type(a).__name__ for a in case.args
               if not isinstance(a, (np.ndarray, np.generic)) and not _is_tensor_map(a)]
        if bad:
            raise NotLaunchable(f"arguments of type {', '.join(sorted(set(bad)))}: the program module defines no "
                                f"device_args(case, cupy) to turn them into launch arguments")
        dargs = []
        for i, a in enumerate(case.args):
            if _is_tensor_map(a):
                dev_root = cp.asarray(a.root)
                maps[i] = dev_root
                dargs.append(_encode_tensor_map(a, dev_root.data.ptr + a.offset))
            else:
                dargs.append(cp.asarray(a) if isinstance(a, np.ndarray) else a)
    grid, block = tuple(case.grid), tuple(case.block)

    def launch():
        fn(grid, block, tuple(dargs), shared_mem=case.shared_bytes)

    def host():
        out = []
        for i, (d, a) in enumerate(zip(dargs, case.args)):
            if i in maps:                          # the tensor's bytes after the launch, in the map's view
                root = cp.asnumpy(maps[i])
                out.append(np.ndarray(a.array.shape, a.array.dtype, root.data, a.offset, a.array.strides))
            else:
                out.append(cp.asnumpy(d) if isinstance(d, cp.ndarray) else a)
        return tuple(out)

    def event():
        return cp.cuda.Event()

    return launch, host, event, dev.synchronize


def _is_tensor_map(a) -> bool:
    """A gpusim.TensorMap, known by its fields (this module imports no gpusim on the GPU side)."""
    return all(hasattr(a, f) for f in ("root", "offset", "box", "dims", "strides", "element_strides", "swizzle"))


def _encode_tensor_map(m, address: int) -> np.ndarray:
    """The driver's 128-byte CUtensorMap for gpusim.TensorMap `m` over device memory at `address`, from
    cuTensorMapEncodeTiled (CuPy does not wrap it), as a one-element numpy array CuPy passes by value."""
    lib = ctypes.CDLL("libcuda.so.1")
    buf = (ctypes.c_uint8 * 256)()
    at = (ctypes.addressof(buf) + 63) // 64 * 64  # the driver wants the map 64-byte aligned
    r = len(m.box)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    code = lib.cuTensorMapEncodeTiled(
        ctypes.c_void_p(at), ctypes.c_int(m.dtype), u32(r), ctypes.c_void_p(address), (u64 * r)(*m.dims),
        (u64 * max(r - 1, 1))(*(m.strides or (0,))), (u32 * r)(*m.box), (u32 * r)(*m.element_strides),
        ctypes.c_int(m.interleave), ctypes.c_int(m.swizzle), ctypes.c_int(m.l2_promotion), ctypes.c_int(m.oob_fill))
    if code:
        raise NotLaunchable(f"cuTensorMapEncodeTiled refused {m!r}: CUresult {code}")
    out = np.zeros(1, np.dtype((np.void, 128)))
    out.view(np.uint8)[:] = np.frombuffer(ctypes.string_at(at, 128), np.uint8)
    return out


# ---- Triton through torch ---------------------------------------------------------------------

def _to_torch(a: np.ndarray, torch):
    name = a.dtype.name
    if name in _TORCH_BY_BITS:
        tname, bits = _TORCH_BY_BITS[name]
        return torch.from_numpy(np.ascontiguousarray(a).view(bits)).cuda().view(getattr(torch, tname))
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def _from_torch(t, like: np.ndarray) -> np.ndarray:
    name = like.dtype.name
    if name in _TORCH_BY_BITS:
        import torch  # lazy: torch is a heavy dependency, loaded only on the GPU machine
        bits = _TORCH_BY_BITS[name][1]
        return t.view({np.uint8: torch.uint8, np.uint16: torch.int16}[bits]).cpu().numpy().view(bits).view(like.dtype)
    return t.cpu().numpy()


def _triton_launcher(case, module):
    import torch  # here: only the GPU side needs torch
    dargs = [_to_torch(a, torch) if isinstance(a, np.ndarray) else a for a in case.args]
    opts = dict(case.options)
    const = dict(opts.pop("constexprs", {}))
    kw = {k: opts[k] for k in ("num_warps", "num_stages", "num_ctas") if k in opts}

    def launch():
        case.kernel[case.grid](*dargs, **const, **kw)

    def host():
        return tuple(_from_torch(d, a) if isinstance(a, np.ndarray) else a for d, a in zip(dargs, case.args))

    def event():
        return torch.cuda.Event(enable_timing=True)

    return launch, host, event, torch.cuda.synchronize


def launcher(case, module_name: str):
    """(launch(), host() -> the arguments after the launch, make_event(), synchronize()) for a Case."""
    module = importlib.import_module(module_name)
    kind = language(case.kernel)
    if kind == "cuda":
        return _cupy_launcher(case, module)
    if kind == "triton":
        return _triton_launcher(case, module)
    raise NotLaunchable("Numba kernels are measured by `validate measure --suite programs`")


def event_times(launch, event, sync, target_s: float = 0.1) -> dict:
    """CUDA-event times as validate.measure_worker takes them: the median of 3 isolated launches
    (launch latency included) and the median gap between N back-to-back launches."""
    single = []
    for _ in range(3):
        a, b = event(), event()
        a.record()
        launch()
        b.record()
        b.synchronize()
        single.append(_elapsed_ms(a, b) * 1e3)
    t1 = statistics.median(single)
    n = int(min(100, max(5, target_s / max(t1 * 1e-6, 1e-6))))
    evs = [event() for _ in range(n + 1)]
    evs[0].record()
    for k in range(n):
        launch()
        evs[k + 1].record()
    evs[-1].synchronize()
    sync()
    gaps = [_elapsed_ms(evs[k], evs[k + 1]) * 1e3 for k in range(n)]
    return {"event_time_us": statistics.median(gaps), "event_launches": n, "event_single_us": t1}


def _elapsed_ms(a, b) -> float:
    if hasattr(a, "elapsed_time"):                 # torch.cuda.Event
        return a.elapsed_time(b)
    import cupy as cp  # lazy: cupy is a heavy dependency, loaded only on the GPU machine
    return cp.cuda.get_elapsed_time(a, b)


def run_case(group: str, size: str, built, mode: str, flush) -> dict:
    """One tensor-set case on the GPU (see the module docstring): the record
    `validate.datafile.merge` expects ("name", "tensor", "size", "params", "kernel", "check", ...)."""
    entry = BY_NAME[group]
    rec = {"name": f"{group}/{size}", "tensor": group, "size": size, "module": entry.module, "launched": False}
    try:
        case = built.result()
        rec["params"] = dict(case.params)
        rec.update(kernel=kernel_name(case.kernel), language=language(case.kernel), grid=launch_grid(case),
                   block=launch_block(case), shared_bytes=case.shared_bytes)
        launch, host, event, sync = launcher(case, entry.module)
        if flush is not None:
            flush()
        rec["launched"] = True
        launch()
        sync()
        try:
            case.check(host())
            rec["check"] = "passed"
        except AssertionError as e:
            rec["check"] = f"failed: {e}"
        if mode == "events":
            try:
                rec.update(event_times(launch, event, sync))
            except Exception as e:                 # noqa: BLE001 - the check stands
                rec["event_error"] = f"{type(e).__name__}: {e}"
        del case
    except NotLaunchable as e:
        rec["check"] = f"not launched: {e}"
    except Exception as e:                         # noqa: BLE001 - recorded, the set goes on
        rec["check"] = f"error: {type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc(limit=-3)
    return rec
