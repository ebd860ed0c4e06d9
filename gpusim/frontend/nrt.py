"""Numba's runtime (NRT) in kernels: `np.empty`, `np.zeros`, `arr.copy()`, array reductions.

What it models: with `config.CUDA_ENABLE_NRT`, numba-cuda lowers array allocation in a
kernel to calls of `.extern .func`s (`NRT_MemInfo_alloc_aligned`, `NRT_incref`,
`NRT_decref`, `NRT_MemInfo_data_fast`, ...) and links their CUDA C++ source
`memory_management/nrt.cu` at load time (`dispatcher.py: maybe_link_nrt`). Here
`instrument(ptx)` replaces those declarations by PTX definitions transcribed from
nrt.cu, function by function, so the kernel runs them instruction by instruction:
- the `MemInfo` record as nrt.cuh lays it out (40 bytes: `refct` u64 at 0, `dtor` at 8,
  `dtor_info` at 16, `data` at 24, `size` at 32), allocated with the data behind it
  (`nrt_allocate_meminfo_and_data_align`: `size + 2 * align` extra bytes, the data
  pointer moved up to the alignment);
- memory from the PTX system calls `malloc` / `free`, which the functional core
  carries out on the launch's device heap (`gpusim.functional.syscalls`);
- reference counts with atomic adds (`cuda::atomic<size_t>` in nrt.cu), the destructor
  call and the free when a count reaches zero;
- the statistics of `NRT_MemSys` (alloc, free, mi_alloc, mi_free), counted where nrt.cu
  counts them, in `__gpusim_nrt_stats` (4 x u64, atomics); after the launch `harvest`
  adds them to the process's counters when statistics are enabled (nrt.cu counts only
  then, in a device-side `TheMSys` that persists across launches).
The drop-in makes numba-cuda's host-side runtime object
(`numba.cuda.memory_management.nrt.rtsys`) answer from these counters (`STATS_RUNTIME`):
`gpusim/cuda/_rtsys.py`.

Not modelled: destructors other than nrt.cu's own `nrt_varsize_dtor` (a `dtor` that is
a Numba function pointer traps: PTX function pointers are not supported), `NRT_MemSys_print`
output. Timing: the NRT functions are ordinary instructions (their loads, stores and
atomics go through the memory model); `malloc`/`free` see `syscalls.py`.

Sources: numba-cuda 0.30 `memory_management/nrt.cu`, `nrt.cuh`, `memsys.cu(h)`,
`nrt.py` (`_Runtime`), `nrt_context.py` (which functions kernels call),
`tests/support.py` (`MemoryLeakMixin`).
"""
from __future__ import annotations

import re
import threading

import numpy as np

STATS = "__gpusim_nrt_stats"
VARSIZE_DTOR = 1          # stands for nrt.cu's `nrt_varsize_dtor` in a MemInfo's dtor field
MEMINFO_BYTES = 40

_P = "{ .param .b64 param0; st.param.b64 [param0], %s; call.uni %s, (param0); }"


def _call1(fn: str, arg: str) -> str:
    return _P % (arg, fn)


def _call1r(fn: str, arg: str, out: str) -> str:
    return ("{ .param .b64 param0; st.param.b64 [param0], %s; .param .b64 retval0; "
            "call.uni (retval0), %s, (param0); ld.param.b64 %s, [retval0]; }" % (arg, fn, out))


def _allocate(name: str) -> str:
    """NRT_Allocate and NRT_Allocate_External (nrt.cu: the same malloc, one allocation counted)."""
    return f"""
.func (.param .b64 func_retval0) {name}(.param .b64 {name}_param_0)
{{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [{name}_param_0];
    {_call1r("malloc", "%rd1", "%rd2")}
    red.global.add.u64 [{STATS}], 1;
    st.param.b64 [func_retval0], %rd2;
    ret;
}}"""


_DEFS = {
    "NRT_Allocate": _allocate("NRT_Allocate"),
    "NRT_Allocate_External": _allocate("NRT_Allocate_External"),
    "NRT_Free": f"""
.func NRT_Free(.param .b64 NRT_Free_param_0)
{{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [NRT_Free_param_0];
    {_call1("free", "%rd1")}
    red.global.add.u64 [{STATS}+8], 1;
    ret;
}}""",
    "NRT_MemInfo_init": f"""
.func NRT_MemInfo_init(.param .b64 NRT_MemInfo_init_param_0, .param .b64 NRT_MemInfo_init_param_1,
    .param .b64 NRT_MemInfo_init_param_2, .param .b64 NRT_MemInfo_init_param_3, .param .b64 NRT_MemInfo_init_param_4)
{{
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [NRT_MemInfo_init_param_0];
    ld.param.u64 %rd2, [NRT_MemInfo_init_param_1];
    ld.param.u64 %rd3, [NRT_MemInfo_init_param_2];
    ld.param.u64 %rd4, [NRT_MemInfo_init_param_3];
    ld.param.u64 %rd5, [NRT_MemInfo_init_param_4];
    mov.u64 %rd6, 1;
    st.u64 [%rd1], %rd6;
    st.u64 [%rd1+8], %rd4;
    st.u64 [%rd1+16], %rd5;
    st.u64 [%rd1+24], %rd2;
    st.u64 [%rd1+32], %rd3;
    red.global.add.u64 [{STATS}+16], 1;
    ret;
}}""",
    "NRT_MemInfo_new": f"""
.func (.param .b64 func_retval0) NRT_MemInfo_new(.param .b64 NRT_MemInfo_new_param_0,
    .param .b64 NRT_MemInfo_new_param_1, .param .b64 NRT_MemInfo_new_param_2, .param .b64 NRT_MemInfo_new_param_3)
{{
    .reg .pred %p<2>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [NRT_MemInfo_new_param_0];
    ld.param.u64 %rd2, [NRT_MemInfo_new_param_1];
    ld.param.u64 %rd3, [NRT_MemInfo_new_param_2];
    ld.param.u64 %rd4, [NRT_MemInfo_new_param_3];
    mov.u64 %rd5, {MEMINFO_BYTES};
    {_call1r("NRT_Allocate", "%rd5", "%rd6")}
    setp.eq.u64 %p1, %rd6, 0;
    @%p1 bra $L_new_done;
    {{ .param .b64 param0; st.param.b64 [param0], %rd6; .param .b64 param1; st.param.b64 [param1], %rd1;
      .param .b64 param2; st.param.b64 [param2], %rd2; .param .b64 param3; st.param.b64 [param3], %rd3;
      .param .b64 param4; st.param.b64 [param4], %rd4;
      call.uni NRT_MemInfo_init, (param0, param1, param2, param3, param4); }}
$L_new_done:
    st.param.b64 [func_retval0], %rd6;
    ret;
}}""",    "NRT_MemInfo_alloc_aligned": f"""
.func (.param .b64 func_retval0) NRT_MemInfo_alloc_aligned(.param .b64 NRT_MemInfo_alloc_aligned_param_0,
    .param .b32 NRT_MemInfo_alloc_aligned_param_1)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [NRT_MemInfo_alloc_aligned_param_0];
    ld.param.u32 %r1, [NRT_MemInfo_alloc_aligned_param_1];
    shl.b32 %r2, %r1, 1;
    cvt.u64.u32 %rd2, %r2;
    add.u64 %rd3, %rd1, %rd2;
    add.u64 %rd3, %rd3, {MEMINFO_BYTES};
    {_call1r("NRT_Allocate_External", "%rd3", "%rd4")}
    mov.u64 %rd11, 0;
    setp.eq.u64 %p1, %rd4, 0;
    @%p1 bra $L_aa_done;
    add.u64 %rd5, %rd4, {MEMINFO_BYTES};
    add.u32 %r3, %r1, -1;
    and.b32 %r4, %r1, %r3;
    setp.eq.u32 %p2, %r4, 0;
    cvt.u64.u32 %rd6, %r3;
    and.b64 %rd7, %rd5, %rd6;
    cvt.u64.u32 %rd8, %r1;
    @!%p2 rem.u64 %rd7, %rd5, %rd8;
    sub.u64 %rd9, %rd8, %rd7;
    setp.eq.u64 %p3, %rd7, 0;
    selp.u64 %rd9, 0, %rd9, %p3;
    add.u64 %rd10, %rd5, %rd9;
    mov.u64 %rd11, 0;
    {{ .param .b64 param0; st.param.b64 [param0], %rd4; .param .b64 param1; st.param.b64 [param1], %rd10;
      .param .b64 param2; st.param.b64 [param2], %rd1; .param .b64 param3; st.param.b64 [param3], %rd11;
      .param .b64 param4; st.param.b64 [param4], %rd11;
      call.uni NRT_MemInfo_init, (param0, param1, param2, param3, param4); }}
    mov.u64 %rd11, %rd4;
$L_aa_done:
    st.param.b64 [func_retval0], %rd11;
    ret;
}}""",    "NRT_MemInfo_data_fast": """
.func (.param .b64 func_retval0) NRT_MemInfo_data_fast(.param .b64 NRT_MemInfo_data_fast_param_0)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [NRT_MemInfo_data_fast_param_0];
    ld.u64 %rd2, [%rd1+24];
    st.param.b64 [func_retval0], %rd2;
    ret;
}""",
    "NRT_incref": """
.func NRT_incref(.param .b64 NRT_incref_param_0)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [NRT_incref_param_0];
    setp.eq.u64 %p1, %rd1, 0;
    @%p1 bra $L_inc_done;
    red.add.u64 [%rd1], 1;
$L_inc_done:
    ret;
}""",
    "NRT_decref": f"""
.func NRT_decref(.param .b64 NRT_decref_param_0)
{{
    .reg .pred %p<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [NRT_decref_param_0];
    setp.eq.u64 %p1, %rd1, 0;
    @%p1 bra $L_dec_done;
    atom.add.u64 %rd2, [%rd1], -1;
    ld.u64 %rd3, [%rd1];
    setp.ne.u64 %p2, %rd3, 0;
    @%p2 bra $L_dec_done;
    {_call1("NRT_MemInfo_call_dtor", "%rd1")}
$L_dec_done:
    ret;
}}""",    "NRT_MemInfo_call_dtor": f"""
.func NRT_MemInfo_call_dtor(.param .b64 NRT_MemInfo_call_dtor_param_0)
{{
    .reg .pred %p<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [NRT_MemInfo_call_dtor_param_0];
    ld.u64 %rd2, [%rd1+8];
    setp.eq.u64 %p1, %rd2, 0;
    @%p1 bra $L_dtor_done;
    setp.ne.u64 %p2, %rd2, {VARSIZE_DTOR};
    @%p2 trap;
    ld.u64 %rd3, [%rd1+24];
    {_call1("NRT_Free", "%rd3")}
$L_dtor_done:
    {_call1("NRT_MemInfo_destroy", "%rd1")}
    ret;
}}""",    "NRT_MemInfo_destroy": f"""
.func NRT_MemInfo_destroy(.param .b64 NRT_MemInfo_destroy_param_0)
{{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [NRT_MemInfo_destroy_param_0];
    {_call1("NRT_dealloc", "%rd1")}
    red.global.add.u64 [{STATS}+24], 1;
    ret;
}}""",
    "NRT_dealloc": f"""
.func NRT_dealloc(.param .b64 NRT_dealloc_param_0)
{{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [NRT_dealloc_param_0];
    {_call1("NRT_Free", "%rd1")}
    ret;
}}""",
    "NRT_MemInfo_new_varsize": f"""
.func (.param .b64 func_retval0) NRT_MemInfo_new_varsize(.param .b64 NRT_MemInfo_new_varsize_param_0)
{{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [NRT_MemInfo_new_varsize_param_0];
    {_call1r("NRT_Allocate", "%rd1", "%rd2")}
    mov.u64 %rd5, 0;
    setp.eq.u64 %p1, %rd2, 0;
    @%p1 bra $L_vs_done;
    mov.u64 %rd3, {VARSIZE_DTOR};
    mov.u64 %rd4, 0;
    {{ .param .b64 param0; st.param.b64 [param0], %rd2; .param .b64 param1; st.param.b64 [param1], %rd1;
      .param .b64 param2; st.param.b64 [param2], %rd3; .param .b64 param3; st.param.b64 [param3], %rd4;
      .param .b64 retval0;
      call.uni (retval0), NRT_MemInfo_new, (param0, param1, param2, param3); ld.param.b64 %rd5, [retval0]; }}
$L_vs_done:
    st.param.b64 [func_retval0], %rd5;
    ret;
}}""",    "NRT_MemInfo_new_varsize_dtor": f"""
.func (.param .b64 func_retval0) NRT_MemInfo_new_varsize_dtor(.param .b64 NRT_MemInfo_new_varsize_dtor_param_0,
    .param .b64 NRT_MemInfo_new_varsize_dtor_param_1)
{{
    .reg .pred %p<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [NRT_MemInfo_new_varsize_dtor_param_0];
    ld.param.u64 %rd2, [NRT_MemInfo_new_varsize_dtor_param_1];
    {_call1r("NRT_MemInfo_new_varsize", "%rd1", "%rd3")}
    setp.eq.u64 %p1, %rd3, 0;
    @%p1 bra $L_vsd_done;
    st.u64 [%rd3+16], %rd2;
$L_vsd_done:
    st.param.b64 [func_retval0], %rd3;
    ret;
}}""",}

# dependencies are defined before their callers (the order of _DEFS)
_ORDER = ("NRT_Allocate", "NRT_Allocate_External", "NRT_Free", "NRT_dealloc", "NRT_MemInfo_destroy",
          "NRT_MemInfo_call_dtor", "NRT_MemInfo_init", "NRT_MemInfo_new", "NRT_MemInfo_alloc_aligned",
          "NRT_MemInfo_data_fast", "NRT_incref", "NRT_decref", "NRT_MemInfo_new_varsize",
          "NRT_MemInfo_new_varsize_dtor")
_SYSCALLS = {
    "malloc": ".extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);",
    "free": ".extern .func free(.param .b64 free_param_0);",
}
_EXTERN = re.compile(r"\.extern\s+\.func\s+(?:\(\s*[^)]*\)\s*)?(NRT_\w+)\s*\([^)]*\)\s*;")


def uses_nrt(ptx: str) -> bool:
    return any(m.group(1) in _DEFS for m in _EXTERN.finditer(ptx))


def instrument(ptx: str) -> str:
    """`ptx` with the NRT functions it declares defined (see module doc); unchanged if it declares none."""
    found = [m for m in _EXTERN.finditer(ptx) if m.group(1) in _DEFS]
    if not found:
        return ptx
    head = [f".global .align 8 .u64 {STATS}[4];"]
    for name, decl in _SYSCALLS.items():
        if not re.search(r"\.func\s+(?:\([^)]*\)\s*)?" + name + r"\s*\(", ptx):
            head.append(decl)
    order = list(_ORDER)
    body = "\n".join(head + [_DEFS[n] for n in order]) + "\n"
    out, pos = [], 0
    for k, m in enumerate(found):
        out.append(ptx[pos:m.start()])
        if k == 0:
            out.append(body)
        pos = m.end()
    out.append(ptx[pos:])
    return "".join(out)


# ----------------------------------------------------------------------------- host side
_LOCK = threading.Lock()


class RuntimeStats:
    """The process's NRT statistics (numba-cuda's `NRT_MemSys`), fed by `harvest`."""

    def __init__(self) -> None:
        self.enabled = False
        self.counts = np.zeros(4, np.uint64)      # alloc, free, mi_alloc, mi_free

    def add(self, launch_counts: np.ndarray) -> None:
        with _LOCK:
            if self.enabled:
                self.counts += launch_counts.astype(np.uint64)

    def reset(self) -> None:
        """Disabled, counts zero (numba-cuda's `rtsys.initialize`)."""
        with _LOCK:
            self.enabled = False
            self.counts[:] = 0


STATS_RUNTIME = RuntimeStats()


def harvest(memory, symbols: dict) -> None:
    """After a launch: add its NRT statistics (if it used NRT) to the process's."""
    where = symbols.get(STATS)
    if where is None or where[0] != "global":
        return
    STATS_RUNTIME.add(memory.global_heap.read(where[1], 32).view(np.uint64).copy())
