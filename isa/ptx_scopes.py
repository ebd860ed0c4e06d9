"""A PTX function body being read, and how its `{ }` scopes are flattened.

What is modelled: PTX block scoping (PTX ISA chapter 4 "Syntax", "Statements", and
chapter 5, "Variables": a declaration inside `{ }` is visible only in that block
and hides an outer one of the same name). `isa.program.Kernel` has one flat list of
declarations, so the reader flattens scopes here:

- A declaration in a nested block that *hides* a name visible from an enclosing
  block gets a fresh name, `NAME$k` (`%p1` -> `%p1$1`; a parameterized `%r<3>`
  becomes `%r$1_<3>`), and every use inside that block is renamed. NVVM needs this:
  the inline-asm blocks of `cuda.syncthreads_count` declare `.reg .pred %p1;` inside
  a kernel that already has `%p<4>`, and the outer `%p1` is read after the block.
- A declaration that hides nothing keeps its name. Sibling blocks declaring the same
  name (every `// callseq` block declares `.param .b64 param0;` and
  `.reg .b32 temp_param_reg;`) share one declaration: a value never flows from one
  sibling block to the next, so sharing is exact. If the siblings disagree on type
  or size, a `.param`/`.local` becomes one `.b8` array large and aligned enough for
  all of them; registers that disagree are an error.
- `$` never occurs in NVVM's register names, so fresh names cannot collide.
"""
from __future__ import annotations

from isa.program import Address, ArgList, Guard, PredPair, Reg, RegDecl, Sym, TensorRef, VarDecl, Vector


class ScopeError(Exception):
    """A declaration that cannot be flattened (the reader adds the PTX line)."""


class FunctionBody:
    """A function being read: declarations and statements that become a `Kernel`."""

    def __init__(self, name: str, is_entry: bool, line: int):
        self.name, self.is_entry, self.line = name, is_entry, line
        self.linkage: str | None = None
        self.params: tuple[VarDecl, ...] = ()
        self.retvals: tuple[VarDecl, ...] = ()
        self.directives: tuple[str, ...] = ()
        self.defined = False
        self.regs: dict[str, RegDecl] = {}
        self.locals: dict[str, VarDecl] = {}
        self.body: list = []                # Label | raw instruction tuple (see isa.parser)
        self.labels: set[str] = set()
        self.pragmas: list[tuple[int, str]] = []
        self.scopes: list[dict[str, str]] = [{}]   # per open block: declared name -> actual name
        self.renames: dict[str, str] = {}          # in force in the innermost block
        self._fresh = 0

    # ------------------------------------------------------------------ blocks
    def start_body(self) -> None:
        self.scopes = [{p.name: p.name for p in (*self.params, *self.retvals)}]
        self.renames = {}

    def open_block(self) -> None:
        self.scopes.append({})

    def close_block(self) -> None:
        self.scopes.pop()
        self._update_renames()

    def _update_renames(self) -> None:
        m: dict[str, str] = {}
        for scope in self.scopes:          # inner blocks override outer ones
            m.update(scope)
        self.renames = {k: v for k, v in m.items() if k != v}

    def _hidden(self, names: tuple[str, ...]) -> bool:
        return len(self.scopes) > 1 and any(n in s for s in self.scopes[:-1] for n in names)

    # ------------------------------------------------------------------ declarations
    def declare_reg(self, d: RegDecl) -> None:
        names = d.names()
        if self._hidden(names):
            self._fresh += 1
            k = self._fresh
            new = RegDecl(d.type, f"{d.name}${k}" if d.count is None else f"{d.name}${k}_", d.count)
            for old_name, new_name in zip(names, new.names()):
                self.scopes[-1][old_name] = new_name
            self._update_renames()
            d = new
        else:
            for n in names:
                self.scopes[-1][n] = n
        old = self.regs.get(d.name)
        if old is None:
            self.regs[d.name] = d
        elif old != d:
            raise ScopeError(f"register {d.name} redeclared with another type in {self.name}")

    def declare_var(self, d: VarDecl) -> None:
        if self._hidden((d.name,)):
            self._fresh += 1
            new_name = f"{d.name}${self._fresh}"
            self.scopes[-1][d.name] = new_name
            self._update_renames()
            d = VarDecl(d.space, d.type, new_name, d.align, d.dims, d.init, d.linkage, d.ptx_line)
        else:
            self.scopes[-1][d.name] = d.name
        old = self.locals.get(d.name)
        if old is None:
            self.locals[d.name] = d
            return
        if (old.space, old.type, old.align, old.dims, old.init) == (d.space, d.type, d.align, d.dims, d.init):
            return
        size = max(old.size_bytes, d.size_bytes)
        align = max(old.align or old.elem_bytes, d.align or d.elem_bytes)
        self.locals[d.name] = VarDecl(old.space, "b8", d.name, align, (size,), None, None, old.ptx_line)

    # ------------------------------------------------------------------ uses
    def rename(self, operands: tuple, guard: Guard | None) -> tuple[tuple, Guard | None]:
        """`operands` and `guard` with the renames of the innermost block applied."""
        m = self.renames
        if guard is not None and guard.reg.name in m:
            guard = Guard(Reg(m[guard.reg.name]), guard.negated)
        return tuple(_rename(op, m) for op in operands), guard


def _rename(op, m: dict[str, str]):
    if isinstance(op, Reg):
        return Reg(m[op.name]) if op.name in m else op
    if isinstance(op, Sym):
        return Sym(m[op.name]) if op.name in m else op
    if isinstance(op, Address):
        return Address(_rename(op.base, m), op.offset) if op.base is not None else op
    if isinstance(op, Vector):
        return Vector(tuple(None if e is None else _rename(e, m) for e in op.elems))
    if isinstance(op, TensorRef):
        return TensorRef(_rename(op.base, m), tuple(_rename(e, m) for e in op.coords))
    if isinstance(op, PredPair):
        return PredPair(_rename(op.first, m), None if op.second is None else _rename(op.second, m))
    if isinstance(op, ArgList):
        return ArgList(tuple(_rename(e, m) for e in op.elems))
    return op


def bare_regs(operands: tuple, bare: set[str]) -> tuple:
    """Registers may be declared without `%` (`.reg .b32 temp_param_reg;`); the
    operand reader took their uses for symbols, which this turns back into `Reg`s."""
    def fix(op):
        if isinstance(op, Sym) and op.name in bare:
            return Reg(op.name)
        if isinstance(op, Address) and isinstance(op.base, Sym) and op.base.name in bare:
            return Address(Reg(op.base.name), op.offset)
        if isinstance(op, Vector):
            return Vector(tuple(fix(e) if e is not None else None for e in op.elems))
        if isinstance(op, ArgList):
            return ArgList(tuple(fix(e) for e in op.elems))
        return op
    return tuple(fix(op) for op in operands)
