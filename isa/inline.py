"""Inlining device-function calls, so that an executor that knows no `call` can run
a kernel that makes them.

What is modelled: the PTX call sequence of PTX ISA chapter 7 "Abstracting the ABI"
(sections "Function Declarations and Definitions" and "Function Parameters") and the
`call`/`ret` instructions of chapter 9 ("Control Flow Instructions"). A caller
declares call-scope `.param` variables (`param0`, `retval0`; the parser keeps them in
`Kernel.locals`), fills them with `st.param`, calls, and reads the result with
`ld.param`; the callee reads its formals with `ld.param [f_param_0]`, writes
`st.param [func_retval0]` and returns with `ret`.

`inline_calls` replaces every `call f` by f's body, recursively (f's own calls are
inlined first, once per function, then copied):
- each inline site gets a tag `$iN`, unique in the result, appended to every name of
  the callee: registers (`%SP` -> `%SP$i3`; a parameterized `%r<12>` becomes
  `%r$i3_<12>`, so `%r5` -> `%r$i3_5`), labels, local depots and call-scope params;
  the callee's registers and variables join the kernel's declarations;
- the callee's formal params and retvals are replaced by the call's actual
  variables (`[f_param_0]` -> `[param0]`). An actual register or immediate gets a
  fresh variable, stored before the body (`st.local`) or loaded after it (`ld.local`);
  a `.reg` formal becomes a fresh register set with `mov`;
- `ret` becomes `bra` to a fresh label placed right after the inlined body
  (`@%p ret` -> `@%p bra`); a guarded call `@%p call f` jumps over the body when `%p`
  is false. `exit` and `trap` stay what they are;
- every `.param` variable that is not a kernel entry parameter (call-scope params,
  and the fresh formal/retval variables) becomes a per-thread `.local` variable of the
  same type, size and alignment, and `ld.param`/`st.param` on it become
  `ld.local`/`st.local`. Inside an inlined body every `ld.param`/`st.param` is
  rewritten, so an address taken with `mov %rd, f_param_0` still works.
Inlined instructions keep their `.loc` (the callee's source line); one with no
`.loc` (NVVM's libdevice helpers, NVRTC-compiled shims) takes the call's. They keep
their PTX line when the callee is in the same module; a callee from `externs` (another
PTX module) is reported at the PTX line of the call.

PTX's system calls (`malloc`, `free`, `__assertfail`: PTX ISA chapter 7 "System Calls") are not
inlined: a `call` of one that the module declares but defines nowhere stays a `call`
(its call-scope params become `.local` like any other), for the executor to carry out
(`gpusim.functional.syscalls`).

Recursive functions (reachable from themselves) are not inlined: their calls stay, and
`isa.recursion` places each once and calls it through a per-thread stack.

Not modelled (`UnsupportedCall`, naming the callee and the PTX line of the call): calls through a register (function
pointers, `.callprototype`), calls to a `.extern .func` that neither the module nor
`externs` defines, nesting deeper than `max_depth`, and results larger than
`MAX_INSTRUCTIONS`. Call-site `.param` alignment beyond the declared one and the ABI
stack (`%SP` frames shared across calls) are not modelled: each site has its own
frame, which is what a non-recursive program cannot tell apart.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from isa.demangle import pretty_name
from isa.errors import UnsupportedCall
from isa.program import (
    Address, ArgList, Guard, Imm, Instruction, Kernel, Label, LabelRef, PredPair, Program,
    Reg, RegDecl, Statement, Sym, TensorRef, VarDecl, Vector,
)

MAX_INSTRUCTIONS = 1_000_000     # an inlined kernel larger than this is refused (exponential fan-out)
SYSTEM_CALLS = frozenset({"malloc", "free", "__assertfail"})   # PTX system calls the executor carries out
_TAG_RE = re.compile(r"\$i(\d+)")


def is_system_call(program: Program, ins: Instruction, externs: dict[str, Kernel] | None = None) -> bool:
    """Whether `ins` calls a PTX system call (`SYSTEM_CALLS`) that nothing defines."""
    if ins.opcode != "call":
        return False
    target = _split_call(ins)[1]
    if not isinstance(target, Sym) or target.name not in SYSTEM_CALLS:
        return False
    f = program.functions.get(target.name) or (externs or {}).get(target.name)
    return f is None or not f.defined


def has_calls(kernel: Kernel) -> bool:
    """Whether `kernel`'s body contains a `call`."""
    return any(i.opcode == "call" for i in kernel.instructions)


def prepare_kernel(program: Program, kernel: Kernel, externs: dict[str, Kernel] | None = None) -> Kernel:
    """`kernel` itself if it makes no call, else `inline_calls(program, kernel, externs)`."""
    if not has_calls(kernel):
        return kernel
    return inline_calls(program, kernel, externs)


def reachable_externs(program: Program, kernel: Kernel) -> tuple[str, ...]:
    """Names of the functions `kernel` may call, directly or through functions the
    module defines, that the module only declares (`.extern .func`), sorted."""
    seen: set[str] = set()
    out: set[str] = set()
    work = [kernel]
    while work:
        fn = work.pop()
        for ins in fn.instructions:
            if ins.opcode != "call":
                continue
            target = _split_call(ins)[1]
            if not isinstance(target, Sym) or target.name in seen or is_system_call(program, ins):
                continue
            seen.add(target.name)
            callee = program.functions.get(target.name)
            if callee is not None and callee.defined:
                work.append(callee)
            else:
                out.add(target.name)
    return tuple(sorted(out))


def inline_calls(program: Program, kernel: Kernel, externs: dict[str, Kernel] | None = None,
                 max_depth: int = 16) -> Kernel:
    """An equivalent kernel without `call` (see the module docstring). `externs` defines
    functions the module only declares (`gpusim.frontend.externs.resolve_externs`)."""
    from isa.recursion import lower, recursive_functions  # a cycle: isa.recursion inlines with this module
    defined = {n: f for n, f in program.functions.items() if f.defined}
    rec = recursive_functions(program, kernel, defined)
    inl = _Inliner(program, kernel, externs or {}, max_depth, keep=rec)
    flat = inl.flat(kernel, "module", (("module", kernel.name),))
    if rec:                 # recursive functions: placed once, called through a stack (isa.recursion)
        regs, locs, body = lower(inl, kernel, flat, rec,
                                 lambda n: inl.flat(inl.defined[n], "module", (("module", n),)))
        flat = _Flat(regs, locs, body, flat.pragmas)
    converted = {v.name for v in flat.locals if v.space == "param"}
    locals_ = tuple(dataclasses.replace(v, space="local") if v.space == "param" else v for v in flat.locals)
    body = tuple(_param_to_local(s, converted, None) if isinstance(s, Instruction) else s for s in flat.body)
    return dataclasses.replace(kernel, regs=flat.regs, locals=locals_, body=body, pragmas=flat.pragmas)


# ----------------------------------------------------------------------------- internals
@dataclass(frozen=True)
class _Flat:
    """A function's declarations and body with every call inlined."""
    regs: tuple[RegDecl, ...]
    locals: tuple[VarDecl, ...]
    body: tuple[Statement, ...]
    pragmas: tuple[tuple[int, str], ...]


def _split_call(ins: Instruction) -> tuple[tuple, object, tuple, tuple]:
    """(return operands, target, argument operands, anything left) of a `call`."""
    ops = list(ins.operands)
    rets = ops.pop(0).elems if ops and isinstance(ops[0], ArgList) else ()
    target = ops.pop(0) if ops else None
    args = ops.pop(0).elems if ops and isinstance(ops[0], ArgList) else ()
    return rets, target, args, tuple(ops)


def _callee_name(ins: Instruction) -> str | None:
    target = _split_call(ins)[1]
    return target.name if isinstance(target, Sym) else None


def _where(ins: Instruction, caller: str) -> str:
    src = f", {ins.loc.file}:{ins.loc.line}" if ins.loc else ""
    return f"called at PTX line {ins.ptx_line}{src}, from {pretty_name(caller)}"


class _Inliner:
    def __init__(self, program: Program, root: Kernel, externs: dict[str, Kernel], max_depth: int,
                 keep: frozenset[str] = frozenset()):
        self.program, self.root, self.externs, self.max_depth = program, root, externs, max_depth
        self.keep = keep                     # recursive functions: their calls stay (isa.recursion lowers them)
        self.defined = {n: f for n, f in program.functions.items() if f.defined}
        self.cache: dict[tuple[str, str], _Flat] = {}
        self.next_tag = 1 + max((int(m) for fn in (root, *self.defined.values())
                                 for m in _TAG_RE.findall(_all_names(fn))), default=0)

    def lookup(self, name: str, origin: str, ins: Instruction, caller: str) -> tuple[Kernel, str]:
        """The definition of `name`: the caller's own module first."""
        order = (("externs", self.externs), ("module", self.defined))
        for where, table in (order if origin == "externs" else order[::-1]):
            f = table.get(name)
            if f is not None and f.defined:
                return f, where
        what = pretty_name(name)
        what = f"{what} ({name})" if what != name else name
        if name in self.program.functions or name in self.externs:
            why = ("is declared (.extern .func) but defined neither in this module nor in the linked "
                   "helper code, so gpusim cannot inline it")
        elif name in self.program.kernels:
            why = "is a kernel (.entry); calling a kernel from device code is not supported"
        else:
            why = "is not declared in this module"
        raise UnsupportedCall(f"device function {what} {why} ({_where(ins, caller)})",
                              callee=name, ptx_line=ins.ptx_line, kernel=self.root.name)

    def flat(self, fn: Kernel, origin: str, chain: tuple) -> _Flat:
        """`fn` with its calls inlined; `chain` is the (origin, name) of every function from the
        root to `fn`, origin 'module' or 'externs'."""
        key = (origin, fn.name)
        if key in self.cache:
            return self.cache[key]
        regs, locals_ = list(fn.regs), list(fn.locals)
        body: list[Statement] = []
        pragmas: list[tuple[int, str]] = []
        at: dict[int, list[str]] = {}
        for i, text in fn.pragmas:
            at.setdefault(i, []).append(text)
        for i, s in enumerate(fn.body):
            pragmas.extend((len(body), t) for t in at.get(i, ()))
            if isinstance(s, Instruction) and s.opcode == "call" and is_system_call(self.program, s, self.externs):
                body.append(s)                   # carried out by the executor (module docstring)
            elif isinstance(s, Instruction) and s.opcode == "call" and _callee_name(s) in self.keep:
                body.append(s)
            elif isinstance(s, Instruction) and s.opcode == "call":
                self.site(fn, origin, s, chain, regs, locals_, body)
                if len(body) > MAX_INSTRUCTIONS:
                    raise UnsupportedCall(
                        f"inlining the calls of {pretty_name(self.root.name)} gives more than "
                        f"{MAX_INSTRUCTIONS} instructions", callee=fn.name, ptx_line=s.ptx_line,
                        kernel=self.root.name)
            else:
                body.append(s)
        pragmas.extend((len(body), t) for t in at.get(len(fn.body), ()))
        out = _Flat(tuple(regs), tuple(locals_), tuple(body), tuple(pragmas))
        self.cache[key] = out
        return out

    def site(self, caller: Kernel, origin: str, ins: Instruction, chain: tuple,
             regs: list, locals_: list, body: list) -> None:
        """Append the inlined body of the call `ins` to `body` (declarations to regs/locals_)."""
        rets, target, args, rest = _split_call(ins)
        where = _where(ins, caller.name)
        if not isinstance(target, Sym) or rest:
            what = target.name if isinstance(target, (Reg, Sym)) else "?"
            raise UnsupportedCall(f"indirect call through {what} ({where}): gpusim inlines calls and "
                                  "needs the callee's name (function pointers are not supported)",
                                  callee=what, ptx_line=ins.ptx_line, kernel=self.root.name)
        callee, corigin = self.lookup(target.name, origin, ins, caller.name)
        if (corigin, callee.name) in chain:
            path = " -> ".join(pretty_name(n) for _, n in (*chain, (corigin, callee.name)))
            raise UnsupportedCall(f"recursive device function {pretty_name(callee.name)} ({where}): gpusim "
                                  f"inlines calls and cannot run recursion (call chain {path})",
                                  callee=callee.name, ptx_line=ins.ptx_line, kernel=self.root.name,
                                  source=f"{ins.loc.file}:{ins.loc.line}" if ins.loc else None)
        if len(chain) > self.max_depth:
            raise UnsupportedCall(f"device function {pretty_name(callee.name)} ({where}) is nested more than "
                                  f"{self.max_depth} calls deep", callee=callee.name,
                                  ptx_line=ins.ptx_line, kernel=self.root.name)
        # a void callee may be called with a result the caller ignores: Numba declares a C-ABI
        # `void f(...)` (declare_device(..., abi="c")) as returning a .b64 it never uses
        if len(args) != len(callee.params) or (len(rets) > len(callee.retvals) and callee.retvals):
            raise UnsupportedCall(f"call of {pretty_name(callee.name)} ({where}) passes {len(args)} arguments "
                                  f"and {len(rets)} return values; the function takes {len(callee.params)} "
                                  f"and {len(callee.retvals)}", callee=callee.name, ptx_line=ins.ptx_line,
                                  kernel=self.root.name)
        flat = self.flat(callee, corigin, (*chain, (corigin, callee.name)))
        tag = f"$i{self.next_tag}"
        self.next_tag += 1
        site = _Site(self, caller.name, ins, callee, flat, tag, foreign=corigin != origin)
        site.emit(rets, args, regs, locals_, body)


class _Site:
    """One inline site: the renaming of a callee's flat body for tag `tag`."""

    def __init__(self, inl: _Inliner, caller: str, call: Instruction, callee: Kernel, flat: _Flat, tag: str,
                 foreign: bool):
        self.inl, self.caller, self.call, self.callee, self.flat, self.tag = inl, caller, call, callee, flat, tag
        self.foreign = foreign
        self.subst: dict[str, object] = {}
        self.labels = {s.name: s.name + tag for s in flat.body if isinstance(s, Label)}
        self.ret_label = f"$L__ret{tag}_end"
        self.entry_params = {p.name for p in inl.root.params}

    def instr(self, opcode: str, suffixes: tuple, operands: tuple, guard: Guard | None = None) -> Instruction:
        return Instruction(opcode, suffixes, operands, guard, self.call.loc, self.call.ptx_line)

    def emit(self, rets: tuple, args: tuple, regs: list, locals_: list, body: list) -> None:
        tag, flat, call = self.tag, self.flat, self.call
        for d in flat.regs:
            nd = RegDecl(d.type, d.name + tag) if d.count is None else RegDecl(d.type, f"{d.name}{tag}_", d.count)
            regs.append(nd)
            for a, b in zip(d.names(), nd.names()):
                self.subst[a] = Reg(b)
        for v in flat.locals:
            locals_.append(dataclasses.replace(v, name=v.name + tag))
            self.subst[v.name] = Sym(v.name + tag)
        pre: list[Instruction] = []
        post: list[Instruction] = []
        for formal, actual in zip(self.callee.params, args):
            self.bind(formal, actual, regs, locals_, pre, incoming=True)
        for k, formal in enumerate(self.callee.retvals):
            self.bind(formal, rets[k] if k < len(rets) else None, regs, locals_, post, incoming=False)
        if call.guard is not None:             # a false guard skips the call
            body.append(self.instr("bra", (), (LabelRef(self.ret_label),),
                                   Guard(call.guard.reg, not call.guard.negated)))
        body.extend(pre)
        for s in flat.body:
            body.append(Label(self.labels[s.name], call.ptx_line if self.foreign else s.ptx_line)
                        if isinstance(s, Label) else self.rewrite(s))
        body.append(Label(self.ret_label, call.ptx_line))
        body.extend(post)

    def bind(self, formal: VarDecl, actual, regs: list, locals_: list, copies: list, incoming: bool) -> None:
        """Make `formal` name the call's `actual` (a copy through a fresh variable if needed)."""
        fresh = formal.name + self.tag
        if formal.space == "reg":
            regs.append(RegDecl(formal.type, fresh))
            self.subst[formal.name] = Reg(fresh)
            if actual is not None:
                src, dst = (actual, Reg(fresh)) if incoming else (Reg(fresh), actual)
                self._check_value(formal, actual)
                copies.append(self.instr("mov", (formal.type,), (dst, src)))
            return
        if isinstance(actual, Sym):
            self.subst[formal.name] = actual
            return
        locals_.append(VarDecl("local", formal.type, fresh, formal.align, formal.dims, None, None,
                               self.call.ptx_line))
        self.subst[formal.name] = Sym(fresh)
        if actual is None:
            return
        self._check_value(formal, actual)
        if formal.dims:
            raise UnsupportedCall(f"call of {pretty_name(self.callee.name)} ({_where(self.call, self.caller)}) passes "
                                  f"a register for the array parameter {formal.name}", callee=self.callee.name,
                                  ptx_line=self.call.ptx_line, kernel=self.inl.root.name)
        if incoming:
            copies.append(self.instr("st", ("local", formal.type), (Address(Sym(fresh)), actual)))
        else:
            copies.append(self.instr("ld", ("local", formal.type), (actual, Address(Sym(fresh)))))

    def _check_value(self, formal: VarDecl, actual) -> None:
        if not isinstance(actual, (Reg, Imm)):
            raise UnsupportedCall(f"call of {pretty_name(self.callee.name)} ({_where(self.call, self.caller)}) "
                                  f"passes {actual!r} for parameter {formal.name}", callee=self.callee.name,
                                  ptx_line=self.call.ptx_line, kernel=self.inl.root.name)

    def rewrite(self, s: Instruction) -> Instruction:
        m, labels = self.subst, self.labels
        ops = tuple(_subst(o, m, labels) for o in s.operands)
        guard = s.guard
        if guard is not None and guard.reg.name in m:
            guard = Guard(m[guard.reg.name], guard.negated)
        loc = s.loc or self.call.loc
        line = self.call.ptx_line if self.foreign else s.ptx_line
        if s.opcode == "ret":
            return Instruction("bra", (), (LabelRef(self.ret_label),), guard, loc, line)
        out = Instruction(s.opcode, s.suffixes, ops, guard, loc, line)
        return _param_to_local(out, None, self.entry_params)


def _subst(o, m: dict, labels: dict):
    if isinstance(o, (Reg, Sym)):
        return m.get(o.name, o)
    if isinstance(o, LabelRef):
        return LabelRef(labels[o.name]) if o.name in labels else o
    if isinstance(o, Address):
        return o if o.base is None else Address(m.get(o.base.name, o.base), o.offset)
    if isinstance(o, Vector):
        return Vector(tuple(None if e is None else m.get(e.name, e) if isinstance(e, Reg) else e
                            for e in o.elems))
    if isinstance(o, TensorRef):
        return TensorRef(m.get(o.base.name, o.base), tuple(m.get(e.name, e) if isinstance(e, Reg) else e
                                                           for e in o.coords))
    if isinstance(o, PredPair):
        return PredPair(None if o.first is None else m.get(o.first.name, o.first), None if o.second is None else m.get(o.second.name, o.second))
    if isinstance(o, ArgList):
        return ArgList(tuple(_subst(e, m, labels) for e in o.elems))
    return o


def _param_to_local(ins: Instruction, converted: set[str] | None, keep: set[str] | None) -> Instruction:
    """`ld.param`/`st.param` -> `.local`: on a variable in `converted` (when given), or on
    anything but a name in `keep` (when `converted` is None: inside an inlined body)."""
    if ins.opcode not in ("ld", "st") or not any(x.startswith("param") for x in ins.suffixes):
        return ins
    addr = next((o for o in ins.operands if isinstance(o, Address)), None)
    base = addr.base.name if addr is not None and isinstance(addr.base, Sym) else None
    if converted is not None and base not in converted:
        return ins
    if converted is None and base is not None and base in keep:
        return ins
    sufs = tuple("local" if x.startswith("param") else x for x in ins.suffixes)
    return dataclasses.replace(ins, suffixes=sufs)


def _all_names(fn: Kernel) -> str:
    """Every declared register, variable and label name of `fn`, joined (for tag scanning)."""
    parts = [d.name for d in fn.regs]
    parts += [v.name for v in fn.locals]
    parts += [s.name for s in fn.body if isinstance(s, Label)]
    return " ".join(parts)
