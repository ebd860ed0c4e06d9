"""Recursive device functions: calls through a per-thread call stack in local memory.

`isa.inline` copies a callee's body into its caller, which cannot end for a function
that reaches itself. Those functions (every function on a cycle of the call graph,
self-recursion included) are instead placed once, after the kernel's body, and their
calls become what an ABI call is (PTX ISA chapter 7, "Abstracting the ABI": the
callee's `.param` and `.local` variables live in a frame on a per-thread stack):

- the stack is a `.local` array `__gpusim_stack` of `MAX_CALL_DEPTH` frames of the
  largest frame size; `%__sp` holds the running function's frame (a local-space
  address), set at kernel entry;
- a frame holds, from its base: the caller's `%__sp` (8 bytes), the number of the call
  site to return to (4 bytes, padded to 16), then every `.local` variable of the function
  (its local depot, the call-scope `.param`s it passes to its own calls, which become
  `.local` as in `isa.inline`) and its formal params and return values, each at its
  alignment, then a save area for the function's registers (8 bytes each);
- inside a recursive function, `[v+k]` on one of its variables becomes `[%__sp+off+k]`
  and a bare `v` (taking its address: `mov.u64 %SPL, __local_depot1`) becomes
  `%__sp + off`, so every activation has its own depot and its own params, and a
  pointer into a caller's depot (Numba returns values through one) stays valid;
- a call of a recursive function: check the stack (an overflow traps with
  `trap.gpusim_stack_overflow`, which the executor reports with the kernel, the line of
  the call and the thread), save the caller's registers when the callee can reach the
  caller again, copy the arguments into the callee's frame, store the caller's `%__sp`
  and the site number, switch `%__sp`, branch to the callee; at the site's return label
  copy the return values out of the callee's frame and restore the registers;
- `ret` in a recursive function restores `%__sp` and branches to the return label of
  the site number stored in its frame (a chain of compares, one per call site);
- a PTX system call (`malloc`/`free`) inside a recursive function goes through two
  kernel-level scratch variables, since the executor reads its params at fixed offsets.
Non-recursive callees are still inlined, into the kernel and into the recursive bodies.

Not modelled: cudaLimitStackSize (1 KiB per thread by default on a GPU: the depth a
GPU allows depends on ptxas's frame sizes, which the functional core does not know;
here the limit is `MAX_CALL_DEPTH` nested calls); indirect calls. Reconvergence:
lanes that return to different call sites diverge at the return's compare chain and
run apart until their paths meet a reconvergence point again (results are the same,
warp-instruction counts may be higher than a GPU's).

Sources: PTX ISA 8.x chapter 7 "Abstracting the ABI" (function declarations,
parameters, the stack), chapter 9 "Control Flow Instructions" (`call`, `ret`); CUDA C++
Programming Guide, "Recursion" / `cudaLimitStackSize`.
"""
from __future__ import annotations

import dataclasses

from isa.demangle import pretty_name
from isa.errors import UnsupportedCall
from isa.inline import SYSTEM_CALLS, _subst
from isa.program import (
    Address, ArgList, Guard, Imm, Instruction, Kernel, Label, LabelRef, Reg, RegDecl, Sym, VarDecl,
)
from isa.types import type_bytes

MAX_CALL_DEPTH = 64             # nested calls of recursive device functions per thread
STACK = "__gpusim_stack"
OVERFLOW = "gpusim_stack_overflow"     # the trap modifier the executor reports as a stack overflow
SP, NSP, END, ADDR, SITE, PRED = "%__sp", "%__nsp", "%__stack_end", "%__addr", "%__site", "%__callp"
TMP = {1: "%__t8", 2: "%__t16", 4: "%__t32", 8: "%__t64"}
SYS_ARG, SYS_RET = "__gpusim_sys_arg", "__gpusim_sys_ret"
HEADER_BYTES = 16


def recursive_functions(program, kernel: Kernel, defined: dict[str, Kernel]) -> frozenset[str]:
    """Names of the functions reachable from `kernel` that can reach themselves."""
    def callees(fn: Kernel) -> set[str]:
        out = set()
        for ins in fn.instructions:
            if ins.opcode == "call":
                t = _target(ins)
                if t is not None and t in defined:
                    out.add(t)
        return out
    graph: dict[str, set[str]] = {}
    work = list(callees(kernel))
    while work:
        n = work.pop()
        if n in graph:
            continue
        graph[n] = callees(defined[n])
        work.extend(graph[n])
    rec = set()
    for n in graph:
        seen, stack = set(), list(graph[n])
        while stack:
            m = stack.pop()
            if m == n:
                rec.add(n)
                break
            if m not in seen:
                seen.add(m)
                stack.extend(graph.get(m, ()))
    return frozenset(rec)


def _target(ins: Instruction) -> str | None:
    ops = ins.operands
    t = ops[1] if len(ops) > 1 and isinstance(ops[0], ArgList) else (ops[0] if ops else None)
    return t.name if isinstance(t, Sym) else None


def _reach(graph: dict[str, set[str]], a: str, b: str) -> bool:
    seen, stack = set(), [a]
    while stack:
        m = stack.pop()
        if m == b:
            return True
        if m not in seen:
            seen.add(m)
            stack.extend(graph.get(m, ()))
    return False


@dataclasses.dataclass
class _Frame:
    offsets: dict[str, int]            # variable -> offset in the frame
    saves: list[tuple[str, str, int]]  # (register, type, offset) of the register save area
    size: int


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def _frame(decl: Kernel, flat) -> _Frame:
    off, offsets = HEADER_BYTES, {}
    for v in (*decl.params, *decl.retvals, *flat.locals):
        if v.space not in ("local", "param") or v.name in offsets:
            continue
        a = max(v.align or v.elem_bytes, 1)
        off = _align(off, a)
        offsets[v.name] = off
        off += max(v.size_bytes, 1)
    off = _align(off, 8)
    saves = []
    for d in flat.regs:
        for n in d.names():
            saves.append((n, d.type, off))
            off += 8
    return _Frame(offsets, saves, _align(off, 16))


def lower(inl, kernel: Kernel, kflat, rec: frozenset[str], flat_of, max_depth: int = MAX_CALL_DEPTH):
    """The kernel's flat body (`kflat`, with calls of `rec` functions kept) and the bodies of
    the `rec` functions (`flat_of(name)`) as one call-free-but-for-system-calls body
    (see the module docstring). Returns (regs, locals, body) like `isa.inline._Flat`."""
    decls = {n: inl.defined[n] for n in sorted(rec)}
    flats = {n: flat_of(n) for n in decls}
    graph = {n: {t for t in (_target(i) for i in flats[n].body if isinstance(i, Instruction) and i.opcode == "call")
                 if t in rec} for n in decls}
    # rename each recursive function's registers and labels apart from the kernel's
    renamed: dict[str, tuple] = {}
    for k, n in enumerate(decls):
        tag = f"$rc{k}"
        f = flats[n]
        m: dict[str, object] = {}
        regs = []
        for d in f.regs:
            nd = RegDecl(d.type, d.name + tag) if d.count is None else RegDecl(d.type, f"{d.name}{tag}_", d.count)
            regs.append(nd)
            for a, b in zip(d.names(), nd.names()):
                m[a] = Reg(b)
        labels = {s.name: s.name + tag for s in f.body if isinstance(s, Label)}
        body = []
        for s in f.body:
            if isinstance(s, Label):
                body.append(Label(labels[s.name], s.ptx_line))
                continue
            guard = s.guard
            if guard is not None and guard.reg.name in m:
                guard = Guard(m[guard.reg.name], guard.negated)
            body.append(dataclasses.replace(s, operands=tuple(_subst(o, m, labels) for o in s.operands), guard=guard))
        renamed[n] = (type(f)(tuple(regs), f.locals, tuple(body), f.pragmas), f"$L__gpusim_entry{tag}")
    frames = {n: _frame(decls[n], renamed[n][0]) for n in decls}
    biggest = max(fr.size for fr in frames.values())
    stack_bytes = biggest * max_depth
    sites: dict[str, list[int]] = {n: [] for n in decls}
    out_body: list = []
    uses_sys = [False]

    def ins(op, sufs, operands, guard=None, at=None):
        return Instruction(op, sufs, operands, guard, at.loc if at else None, at.ptx_line if at else 0)

    def call_seq(call: Instruction, caller: str | None, emit: list) -> None:
        callee = _target(call)
        decl, fr = decls[callee], frames[callee]
        ops = call.operands
        rets = ops[0].elems if isinstance(ops[0], ArgList) else ()
        args = ops[-1].elems if isinstance(ops[-1], ArgList) and ops[-1] is not ops[0] else ()
        if len(args) != len(decl.params) or len(rets) > len(decl.retvals):
            raise UnsupportedCall(f"call of {pretty_name(callee)} passes {len(args)} arguments and {len(rets)} "
                                  f"return values; the function takes {len(decl.params)} and {len(decl.retvals)}",
                                  callee=callee, ptx_line=call.ptx_line, kernel=kernel.name)
        site = sum(len(v) for v in sites.values())
        sites[callee].append(site)
        skip = f"$L__gpusim_skip{site}"
        back = f"$L__gpusim_ret{site}"
        cf = frames[caller].size if caller else 0
        if call.guard is not None:
            emit.append(ins("bra", (), (LabelRef(skip),), Guard(call.guard.reg, not call.guard.negated), call))
        emit.append(ins("add", ("u64",), (Reg(NSP), Reg(SP), Imm(cf)), None, call))
        emit.append(ins("add", ("u64",), (Reg(ADDR), Reg(NSP), Imm(fr.size)), None, call))
        emit.append(ins("setp", ("gt", "u64"), (Reg(PRED), Reg(ADDR), Reg(END)), None, call))
        emit.append(ins("trap", (OVERFLOW,), (), Guard(Reg(PRED)), call))
        save = caller is not None and _reach(graph, callee, caller)
        if save:
            for r, t, o in frames[caller].saves:
                emit.extend(_save(r, t, o, call, ins))
        for formal, actual in zip(decl.params, args):
            emit.extend(_copy(actual, formal, fr.offsets[formal.name], NSP, True, call, ins))
        emit.append(ins("st", ("local", "u64"), (Address(Reg(NSP), 0), Reg(SP)), None, call))
        emit.append(ins("mov", ("u32",), (Reg(SITE), Imm(site)), None, call))
        emit.append(ins("st", ("local", "u32"), (Address(Reg(NSP), 8), Reg(SITE)), None, call))
        emit.append(ins("mov", ("u64",), (Reg(SP), Reg(NSP)), None, call))
        emit.append(ins("bra", (), (LabelRef(renamed[callee][1]),), None, call))
        emit.append(Label(back, call.ptx_line))
        emit.append(ins("add", ("u64",), (Reg(NSP), Reg(SP), Imm(cf)), None, call))
        for formal, actual in zip(decl.retvals, rets):
            emit.extend(_copy(actual, formal, fr.offsets[formal.name], NSP, False, call, ins))
        if save:
            for r, t, o in frames[caller].saves:
                emit.extend(_restore(r, t, o, call, ins))
        emit.append(Label(skip, call.ptx_line))

    # the kernel: set up the stack, then its body with recursive calls lowered
    first = next((s for s in kflat.body if isinstance(s, Instruction)), None)
    out_body.append(ins("mov", ("u64",), (Reg(SP), Sym(STACK)), None, first))
    out_body.append(ins("add", ("u64",), (Reg(END), Reg(SP), Imm(stack_bytes)), None, first))
    for s in kflat.body:
        if isinstance(s, Instruction) and s.opcode == "call" and _target(s) in rec:
            call_seq(s, None, out_body)
        else:
            out_body.append(s)
    out_body.append(ins("ret", (), (), None, None))
    # the recursive functions, each once
    tails = []
    for n in decls:
        f, entry = renamed[n]
        fr = frames[n]
        body: list = [Label(entry, decls[n].ptx_line)]
        for s in f.body:
            if not isinstance(s, Instruction):
                body.append(s)
            elif s.opcode == "call" and _target(s) in rec:
                call_seq(s, n, body)
            elif s.opcode == "call" and _target(s) in SYSTEM_CALLS:
                uses_sys[0] = True
                body.extend(_system_call(s, ins))
            elif s.opcode == "ret":
                body.append(s)              # lowered below, once every site is known
            else:
                body.append(s)
        tails.append((n, body))
    for n, body in tails:
        fr = frames[n]
        for s in body:
            if isinstance(s, Instruction) and s.opcode == "ret":
                out_body.extend(_return(s, sites[n], ins))
            elif isinstance(s, Instruction):
                out_body.extend(_frame_relative(s, fr.offsets, ins))
            else:
                out_body.append(s)
    regs = list(kflat.regs)
    for n in decls:
        regs.extend(renamed[n][0].regs)
    regs += [RegDecl("u64", SP), RegDecl("u64", NSP), RegDecl("u64", END), RegDecl("u64", ADDR),
             RegDecl("u32", SITE), RegDecl("pred", PRED), RegDecl("b8", TMP[1]), RegDecl("b16", TMP[2]),
             RegDecl("b32", TMP[4]), RegDecl("b64", TMP[8])]
    locals_ = list(kflat.locals) + [VarDecl("local", "b8", STACK, 16, (stack_bytes,))]
    if uses_sys[0]:
        locals_ += [VarDecl("local", "b64", SYS_ARG, 8), VarDecl("local", "b64", SYS_RET, 8)]
    return tuple(regs), tuple(locals_), tuple(out_body)


def _bits(t: str) -> str:
    return "b" + str(8 * type_bytes(t))


def _save(r: str, t: str, off: int, at, ins) -> list:
    if t == "pred":
        return [ins("selp", ("u32",), (Reg(TMP[4]), Imm(1), Imm(0), Reg(r)), None, at),
                ins("st", ("local", "u32"), (Address(Reg(SP), off), Reg(TMP[4])), None, at)]
    return [ins("st", ("local", _bits(t)), (Address(Reg(SP), off), Reg(r)), None, at)]


def _restore(r: str, t: str, off: int, at, ins) -> list:
    if t == "pred":
        return [ins("ld", ("local", "u32"), (Reg(TMP[4]), Address(Reg(SP), off)), None, at),
                ins("setp", ("ne", "u32"), (Reg(r), Reg(TMP[4]), Imm(0)), None, at)]
    return [ins("ld", ("local", _bits(t)), (Reg(r), Address(Reg(SP), off)), None, at)]


def _copy(actual, formal: VarDecl, off: int, base: str, incoming: bool, at, ins) -> list:
    """Copy an argument into (incoming) or a return value out of the callee's frame at `base`."""
    if isinstance(actual, Sym):
        e = formal.elem_bytes if formal.elem_bytes in TMP else 1
        t, tmp = f"b{8 * e}", Reg(TMP[e])
        out = []
        for k in range(0, max(formal.size_bytes, 1), e):
            a, b = Address(actual, k), Address(Reg(base), off + k)
            src, dst = (a, b) if incoming else (b, a)
            out += [ins("ld", ("local", t), (tmp, src), None, at), ins("st", ("local", t), (dst, tmp), None, at)]
        return out
    t = formal.type
    if incoming:
        return [ins("st", ("local", t), (Address(Reg(base), off), actual), None, at)]
    return [ins("ld", ("local", t), (actual, Address(Reg(base), off)), None, at)]


def _system_call(call: Instruction, ins) -> list:
    """`malloc`/`free` inside a recursive function: through fixed scratch variables."""
    ops = call.operands
    rets = ops[0].elems if isinstance(ops[0], ArgList) else ()
    args = ops[-1].elems if isinstance(ops[-1], ArgList) and ops[-1] is not ops[0] else ()
    out = []
    for a in args:
        out += [ins("ld", ("local", "b64"), (Reg(TMP[8]), Address(a, 0)), None, call),
                ins("st", ("local", "b64"), (Address(Sym(SYS_ARG), 0), Reg(TMP[8])), None, call)]
    new_ops = ((ArgList((Sym(SYS_RET),)),) if rets else ()) + (ops[1] if rets else ops[0], ArgList((Sym(SYS_ARG),)))
    out.append(dataclasses.replace(call, operands=new_ops))
    for r in rets:
        out += [ins("ld", ("local", "b64"), (Reg(TMP[8]), Address(Sym(SYS_RET), 0)), None, call),
                ins("st", ("local", "b64"), (Address(r, 0), Reg(TMP[8])), None, call)]
    return out


def _return(ret: Instruction, sites: list[int], ins) -> list:
    out = []
    skip = f"$L__gpusim_noret{ret.ptx_line}_{id(ret)}"
    if ret.guard is not None:
        out.append(ins("bra", (), (LabelRef(skip),), Guard(ret.guard.reg, not ret.guard.negated), ret))
    out.append(ins("ld", ("local", "u32"), (Reg(SITE), Address(Reg(SP), 8)), None, ret))
    out.append(ins("ld", ("local", "u64"), (Reg(SP), Address(Reg(SP), 0)), None, ret))
    for s in sites:
        out.append(ins("setp", ("eq", "u32"), (Reg(PRED), Reg(SITE), Imm(s)), None, ret))
        out.append(ins("bra", (), (LabelRef(f"$L__gpusim_ret{s}"),), Guard(Reg(PRED)), ret))
    out.append(ins("trap", (), (), None, ret))
    if ret.guard is not None:
        out.append(Label(skip, ret.ptx_line))
    return out


def _frame_relative(s: Instruction, offsets: dict[str, int], ins) -> list:
    """`s` with its function's variables addressed relative to `%__sp`."""
    pre = []
    ops = []
    touched = False
    for o in s.operands:
        if isinstance(o, Address) and isinstance(o.base, Sym) and o.base.name in offsets:
            ops.append(Address(Reg(SP), offsets[o.base.name] + o.offset))
            touched = True
        elif isinstance(o, Sym) and o.name in offsets:
            if pre:
                raise UnsupportedCall(f"instruction at PTX line {s.ptx_line} takes the address of two variables of "
                                      "a recursive function", callee="", ptx_line=s.ptx_line)
            pre.append(ins("add", ("u64",), (Reg(ADDR), Reg(SP), Imm(offsets[o.name])), None, s))
            ops.append(Reg(ADDR))
        elif isinstance(o, ArgList) and any(isinstance(e, Sym) and e.name in offsets for e in o.elems):
            raise UnsupportedCall(f"call at PTX line {s.ptx_line} inside a recursive function passes a frame "
                                  "variable to a function gpusim cannot lower", callee="", ptx_line=s.ptx_line)
        else:
            ops.append(o)
    if not touched and not pre:
        return [s]
    sufs = s.suffixes
    if touched and s.opcode in ("ld", "st") and any(x.startswith("param") for x in sufs):
        sufs = tuple("local" if x.startswith("param") else x for x in sufs)
    return pre + [dataclasses.replace(s, suffixes=sufs, operands=tuple(ops))]
