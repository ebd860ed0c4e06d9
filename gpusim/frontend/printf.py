"""Device `printf` (Python `print()` in a kernel): records in a global FIFO, printed by the host.

What it models: CUDA's device printf writes each call's format pointer and argument
words into a FIFO in global memory, and the host formats and prints them when the
kernel completes. Numba lowers `print(...)` to `vprintf(fmt, args)`, where `args` is
a thread-local buffer holding the arguments as C varargs: each aligned to its size,
8 bytes for `%ll*`/`%l*`, `%f` (double), `%s`/`%p` (pointer), 4 for plain `%d`/`%u`/`%c`.
`instrument(ptx)` replaces the `.extern` declaration of `vprintf` with a PTX definition
that walks the format string to size the argument buffer,
reserves a record with an atomic add on `__gpusim_printf_head` and copies the format
address and the argument words into `__gpusim_printf_buf` (1 MiB, CUDA's default FIFO
size; records that do not fit are dropped, as CUDA drops them). Atomics apply in lane
order, so lines appear in lane order within a step. `lines(memory, symbols)` decodes the
records after the launch, reading strings from constant/global memory.

Does not model: `%*d` widths from arguments, `cudaDeviceSetLimit(cudaLimitPrintfFifoSize)`.

Sources: CUDA C++ Programming Guide, "Formatted Output" (FIFO, 1 MB default, output at
kernel completion); numba-cuda 0.30 `printimpl.py` (format and argument buffer).
"""
from __future__ import annotations

import re

import numpy as np

BUF_BYTES = 1 << 20
BUF, HEAD = "__gpusim_printf_buf", "__gpusim_printf_head"

_EXTERN = re.compile(r"\.extern\s+\.func\s*\(\s*\.param\s+\.b32\s+\w+\s*\)\s*vprintf\s*\([^)]*\)\s*;")

_VPRINTF = f"""
.global .align 8 .b8 {BUF}[{BUF_BYTES}];
.global .align 8 .u64 {HEAD};
.func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1)
{{
    .reg .pred %pp<6>;
    .reg .b32 %rc<4>;
    .reg .b64 %rp<18>;
    ld.param.u64 %rp1, [vprintf_param_0];
    ld.param.u64 %rp2, [vprintf_param_1];
    mov.u64 %rp3, 0;
    mov.u64 %rp4, %rp1;
$L_text:
    ld.u8 %rc1, [%rp4];
    setp.eq.u32 %pp1, %rc1, 0;
    @%pp1 bra $L_counted;
    add.u64 %rp4, %rp4, 1;
    setp.ne.u32 %pp1, %rc1, 37;
    @%pp1 bra $L_text;
    ld.u8 %rc1, [%rp4];
    setp.eq.u32 %pp1, %rc1, 37;
    @%pp1 bra $L_escaped;
    mov.u64 %rp15, 4;
$L_spec:
    ld.u8 %rc1, [%rp4];
    setp.eq.u32 %pp1, %rc1, 0;
    @%pp1 bra $L_counted;
    add.u64 %rp4, %rp4, 1;
    setp.eq.u32 %pp1, %rc1, 108;
    setp.eq.or.u32 %pp1, %rc1, 122, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 106, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 116, %pp1;
    @%pp1 mov.u64 %rp15, 8;
    @%pp1 bra $L_spec;
    setp.eq.u32 %pp1, %rc1, 104;
    setp.eq.or.u32 %pp1, %rc1, 45, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 43, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 32, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 35, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 46, %pp1;
    @%pp1 bra $L_spec;
    sub.u32 %rc2, %rc1, 48;
    setp.lt.u32 %pp1, %rc2, 10;
    @%pp1 bra $L_spec;
    or.b32 %rc3, %rc1, 32;
    setp.eq.u32 %pp1, %rc3, 102;
    setp.eq.or.u32 %pp1, %rc3, 101, %pp1;
    setp.eq.or.u32 %pp1, %rc3, 103, %pp1;
    setp.eq.or.u32 %pp1, %rc3, 97, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 115, %pp1;
    setp.eq.or.u32 %pp1, %rc1, 112, %pp1;
    @%pp1 mov.u64 %rp15, 8;
    add.u64 %rp16, %rp3, %rp15;
    add.u64 %rp16, %rp16, -1;
    neg.s64 %rp17, %rp15;
    and.b64 %rp3, %rp16, %rp17;
    add.u64 %rp3, %rp3, %rp15;
    bra.uni $L_text;
$L_escaped:
    add.u64 %rp4, %rp4, 1;
    bra.uni $L_text;
$L_counted:
    add.u64 %rp5, %rp3, 7;
    and.b64 %rp5, %rp5, -8;
    add.u64 %rp5, %rp5, 16;
    mov.u64 %rp6, {HEAD};
    atom.global.add.u64 %rp7, [%rp6], %rp5;
    add.u64 %rp8, %rp7, %rp5;
    setp.gt.u64 %pp2, %rp8, {BUF_BYTES};
    @%pp2 bra $L_done;
    mov.u64 %rp9, {BUF};
    add.u64 %rp9, %rp9, %rp7;
    st.global.u64 [%rp9], %rp1;
    st.global.u64 [%rp9+8], %rp3;
    mov.u64 %rp10, 0;
$L_copy:
    setp.ge.u64 %pp3, %rp10, %rp3;
    @%pp3 bra $L_done;
    add.u64 %rp12, %rp2, %rp10;
    ld.u32 %rc1, [%rp12];
    add.u64 %rp14, %rp9, %rp10;
    st.global.u32 [%rp14+16], %rc1;
    add.u64 %rp10, %rp10, 4;
    bra.uni $L_copy;
$L_done:
    mov.u32 %rc1, 0;
    st.param.b32 [func_retval0], %rc1;
    ret;
}}
"""


def uses_printf(ptx: str) -> bool:
    return _EXTERN.search(ptx) is not None


def instrument(ptx: str) -> str:
    """`ptx` with vprintf defined (see module doc); unchanged if it does not print."""
    return _EXTERN.sub(lambda m: _VPRINTF, ptx, count=1)


# ----------------------------------------------------------------------------- host side
_CONV = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?(hh|h|ll|l|z|j|t)?([diouxXeEfFgGcsp%])")


def _cstring(memory, addr: int) -> str:
    for heap in (memory.const_heap, memory.global_heap):
        off = addr - heap.base
        if 0 <= off < len(heap.data):
            raw = bytes(heap.data[off:off + 4096])
            return raw.split(b"\0", 1)[0].decode(errors="replace")
    return "(null)" if addr == 0 else f"<string at {addr:#x}>"


def format_c(memory, fmt: str, payload: bytes) -> str:
    """C printf formatting of `fmt` with its argument buffer: each argument aligned to its
    size, 8 bytes for l/ll/z/j/t lengths, floats (doubles), strings and pointers, else 4."""
    pos = 0

    def conv(m: re.Match) -> str:
        nonlocal pos
        flags, width, prec, length, kind = m.groups()
        if kind == "%":
            return "%"
        size = 8 if length in ("ll", "l", "z", "j", "t") or kind in "eEfFgGaAsp" else 4
        pos = -(-pos // size) * size
        w = int.from_bytes(payload[pos:pos + size], "little")
        pos += size
        bits = 8 * size
        spec = f"%{flags}{width}" + (f".{prec}" if prec is not None else "")
        if kind in "di":
            return (spec + "d") % (w - (1 << bits) if w >> (bits - 1) else w)
        if kind in "ouxX":
            return (spec + kind.replace("u", "d")) % w
        if kind in "eEfFgG":
            return (spec + kind) % float(np.array([w], np.uint64).view(np.float64)[0])
        if kind == "c":
            return (spec + "c") % chr(w & 0xFF)
        if kind == "s":
            return (spec + "s") % _cstring(memory, w)
        return f"{w:#x}"
    return _CONV.sub(conv, fmt)


def lines(memory, symbols: dict) -> str:
    """Everything the launch printed, in FIFO order."""
    head = symbols.get(HEAD)
    buf = symbols.get(BUF)
    if head is None or buf is None:
        return ""
    used = int(memory.global_heap.read(head[1], 8).view(np.uint64)[0])
    raw = memory.global_heap.read(buf[1], min(used, BUF_BYTES))
    out, pos = [], 0
    while pos + 16 <= len(raw):
        fmt_addr, n = (int(x) for x in raw[pos:pos + 16].view(np.uint64))
        out.append(format_c(memory, _cstring(memory, fmt_addr), bytes(raw[pos + 16:pos + 16 + n])))
        pos += 16 + (-(-n // 8) * 8)
    return "".join(out)
