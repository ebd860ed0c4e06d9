"""Writing a `Program` back as PTX text.

What is modelled: `format_program(p)` produces a module that `isa.parser.parse`
reads back to the same structure: `strip_lines(parse(format_program(p))) ==
strip_lines(p)` for every `p` that `parse` produced (`tests/isa/test_printer.py`
checks it on every fixture). Only the PTX line numbers differ, hence `strip_lines`,
which sets every `ptx_line` to 0.

Layout, chosen so that the text is valid PTX for ptxas as well:
`.version`/`.target`/`.address_size`; module `.pragma`s; a prototype of every
`.func` (so definitions may come in any order); module variables; `.func`
definitions; `.entry` definitions; the `.file` table last, as NVVM writes it. In a
body, declarations come first (the flattened `{ }` scopes of `isa.parser` are not
restored), then statements, with a `.loc` before each instruction whose source
location differs from the previous instruction's. Floating immediates are written as
their exact hex bits (`0f3F800000`); integers keep their source spelling.

Not modelled: comments and the original whitespace; `.loc` extras
(`function_name`, `inlined_at`); `.section` debug blocks. An instruction with no
location after one with a location reads back with the previous location (PTX has
no way to clear a `.loc`).

Source: PTX ISA 9.x, chapters 4 "Syntax", 5 "State Spaces, Types, and Variables",
6 "Instruction Operands", 11 "Directives".
"""
from __future__ import annotations

import dataclasses
import math

from isa.program import (
    Address, ArgList, Imm, Instruction, Kernel, Label, LabelRef, PredPair, Program, Reg, TensorRef,
    SourceLoc, Special, Sym, VarDecl, Vector,
)
from isa.ptx_literals import float_bits, float_from_bits, float_text


def format_program(p: Program) -> str:
    """PTX text of `p` (see the module docstring for the layout)."""
    out: list[str] = []
    if p.version:
        out.append(f".version {p.version}")
    if p.target:
        out.append(f".target {p.target}")
    out.append(f".address_size {p.address_size}")
    out.append("")
    out.extend(f".pragma {t};" for t in p.pragmas)
    file_index = {path: n for n, path in p.files.items()}
    files = dict(p.files)
    for f in p.functions.values():
        out.append(_header(f) + ";")
    out.extend(format_var(v) + ";" for v in p.globals)
    out.append("")
    for k in (*p.functions.values(), *p.kernels.values()):
        if k.defined:
            out.extend(_kernel_lines(k, file_index, files))
            out.append("")
    out.extend(f'.file {n} "{path}"' for n, path in sorted(files.items()))
    return "\n".join(out) + "\n"


def format_kernel(k: Kernel, files: dict[int, str] | None = None) -> str:
    """PTX text of one `.entry`/`.func` definition (`files`: the module's `.file` table)."""
    files = dict(files or {})
    return "\n".join(_kernel_lines(k, {p: n for n, p in files.items()}, files)) + "\n"


def format_instruction(i: Instruction) -> str:
    """`@%p1 bra $L__BB0_2;`-style text of one instruction (no `.loc`, no indent)."""
    g = "" if i.guard is None else f"@{'!' if i.guard.negated else ''}{i.guard.reg.name} "
    ops = ", ".join(format_operand(o) for o in i.operands)
    return f"{g}{i.mnemonic}{' ' + ops if ops else ''};"


def format_operand(o) -> str:
    """PTX text of one operand."""
    if isinstance(o, (Reg, Special, Sym, LabelRef)):
        return o.name
    if isinstance(o, Imm):
        return _imm(o)
    if isinstance(o, Address):
        base = "" if o.base is None else o.base.name
        if not base:
            return f"[{o.offset}]"
        return f"[{base}+{o.offset}]" if o.offset else f"[{base}]"
    if isinstance(o, Vector):
        return "{" + ", ".join("_" if e is None else format_operand(e) for e in o.elems) + "}"
    if isinstance(o, TensorRef):
        return f"[{o.base.name}, {{{', '.join(format_operand(e) for e in o.coords)}}}]"
    if isinstance(o, PredPair):
        return f"{'_' if o.first is None else o.first.name}|{'_' if o.second is None else o.second.name}"
    if isinstance(o, ArgList):
        return "(" + ", ".join(format_operand(e) for e in o.elems) + ")"
    raise TypeError(f"not a PTX operand: {o!r}")


def format_var(v: VarDecl, *, linkage: bool = True) -> str:
    """A variable or parameter declaration, without the trailing `;`."""
    parts = []
    if linkage and v.linkage:
        parts.append(f".{v.linkage}")
    parts.append(f".{v.space}")
    if v.align is not None:
        parts.append(f".align {v.align}")
    parts.append(f".{v.type}")
    text = " ".join(parts) + " " + v.name + "".join(f"[{d}]" if d else "[]" for d in v.dims)
    if v.init is not None:
        text += " = " + _init(v)
    return text


def strip_lines(p: Program) -> Program:
    """`p` with every `ptx_line` set to 0: the equality `format_program` preserves."""
    def var(v: VarDecl) -> VarDecl:
        return dataclasses.replace(v, ptx_line=0)

    def stmt(s):
        return dataclasses.replace(s, ptx_line=0)

    def kernel(k: Kernel) -> Kernel:
        return dataclasses.replace(
            k, ptx_line=0, params=tuple(map(var, k.params)), retvals=tuple(map(var, k.retvals)),
            locals=tuple(map(var, k.locals)), body=tuple(map(stmt, k.body)))

    return dataclasses.replace(
        p, globals=tuple(map(var, p.globals)),
        kernels={n: kernel(k) for n, k in p.kernels.items()},
        functions={n: kernel(k) for n, k in p.functions.items()})


# ----------------------------------------------------------------------------- helpers
def _imm(o: Imm) -> str:
    if o.bits is not None and o.width in (32, 64):
        return float_text(o.bits, o.width)
    if isinstance(o.value, float):
        return float_text(float_bits(o.value, 64), 64)
    return o.text or str(o.value)


def _init_value(x: int | float, typ: str) -> str:
    if not isinstance(x, float):
        return str(x)
    if typ == "f32":                            # exact in f32 (always, for 0f... literals)
        bits = float_bits(x, 32)
        if math.isnan(x) or float_from_bits(bits, 32) == x:
            return float_text(bits, 32)
    return float_text(float_bits(x, 64), 64)


def _init(v: VarDecl) -> str:
    vals = [_init_value(x, v.type) for x in v.init or ()]
    if not v.dims:
        return vals[0] if len(vals) == 1 else "{" + ", ".join(vals) + "}"
    n = 1
    for d in v.dims:
        n *= d
    if len(v.dims) > 1 and len(vals) == n:      # nest by the declared shape
        for d in reversed(v.dims[1:]):
            vals = ["{" + ", ".join(vals[i:i + d]) + "}" for i in range(0, len(vals), d)]
    return "{" + ", ".join(vals) + "}"


def _header(k: Kernel) -> str:
    parts = [f".{k.linkage}"] if k.linkage else []
    parts.append(".entry" if k.is_entry else ".func")
    if k.retvals:
        parts.append("(" + ", ".join(format_var(r, linkage=False) for r in k.retvals) + ")")
    parts.append(k.name)
    text = " ".join(parts)
    if k.params:
        text += "(\n" + ",\n".join("\t" + format_var(v, linkage=False) for v in k.params) + "\n)"
    else:
        text += "()"
    for d in k.directives:
        text += "\n" + d
    return text


def _kernel_lines(k: Kernel, file_index: dict[str, int], files: dict[int, str]) -> list[str]:
    out = [_header(k), "{"]
    for r in k.regs:
        out.append(f"\t.reg .{r.type} {r.name}" + (f"<{r.count}>" if r.count is not None else "") + ";")
    out.extend("\t" + format_var(v) + ";" for v in k.locals)
    pragmas: dict[int, list[str]] = {}
    for at, text in k.pragmas:
        pragmas.setdefault(at, []).append(text)
    current: SourceLoc | None = None
    for idx, s in enumerate(k.body):
        out.extend(f"\t.pragma {t};" for t in pragmas.get(idx, ()))
        if isinstance(s, Label):
            out.append(f"{s.name}:")
            continue
        if s.loc is not None and s.loc != current:
            n = file_index.get(s.loc.file)
            if n is None:                       # a location in a file the table lacks
                n = file_index[s.loc.file] = max(files, default=0) + 1
                files[n] = s.loc.file
            out.append(f"\t.loc {n} {s.loc.line} {s.loc.column}")
            current = s.loc
        out.append("\t" + format_instruction(s))
    out.extend(f"\t.pragma {t};" for t in pragmas.get(len(k.body), ()))
    out.append("}")
    return out
