"""Linking a parsed kernel for the executor: inline every device-function call.

`link(program, kernel)` returns `kernel` itself when it makes no call; otherwise it
resolves the external functions the kernel can reach (numba-cuda's float16/bfloat16
shims, compiled by `gpusim.frontend.externs`) and inlines every call
(`isa.inline.inline_calls`), giving a call-free kernel. Errors (`UnsupportedCall`)
name the callee and the PTX line of the call. Source: PTX ISA chapter 7
"Abstracting the ABI".
"""
from __future__ import annotations

import dataclasses

from gpusim.frontend.externs import resolve_externs
from isa.inline import has_calls, inline_calls, reachable_externs
from isa.program import Kernel, Program


def link(program: Program, kernel: Kernel, sources: tuple = ()) -> Kernel:
    """A call-free equivalent of `kernel` (itself if it makes no call); `sources` are the
    kernel's `link=` files and code objects, searched for functions nothing else defines."""
    if not has_calls(kernel):
        return kernel
    needed = reachable_externs(program, kernel)
    externs = None
    if needed:
        externs = resolve_externs(program, needed, sources=sources)
    out = inline_calls(program, kernel, externs)
    extra = [v for v in getattr(externs, "globals", ()) if v.name not in {g.name for g in program.globals}]
    if extra:                            # the helper modules' own variables (assert messages, tables)
        out = dataclasses.replace(out, locals=out.locals + tuple(extra))
    return out
