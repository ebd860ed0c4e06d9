"""The parsed form of a PTX module: what a program *is*, with no notion of time.

A `Program` holds module directives, module-scope variables (`.global`, `.shared`,
`.const`) and entry kernels. A `Kernel` holds its parameters, register and local
declarations, and a flat body of `Instruction`s and `Label`s in source order; its
control-flow graph lives in `isa.cfg`. Every instruction keeps the PTX line it came
from and the Python source location of the nearest preceding `.loc`, so that any
error or counter can be traced back to the user's kernel line.

Sources: PTX ISA reference, chapters "Syntax", "State Spaces, Types, and Variables",
"Instruction Operands" and "Instructions".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from isa.types import type_bytes

# PTX fundamental type names (PTX ISA "Fundamental Types").
TYPE_NAMES = frozenset({
    "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
    "b8", "b16", "b32", "b64", "b128",
    "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "pred",
})

# State spaces (PTX ISA "State Spaces").
STATE_SPACES = frozenset({"reg", "sreg", "const", "global", "local", "param", "shared", "tex"})


# ----------------------------------------------------------------------------- operands
@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand, e.g. `%r5`, `%rd12`, `%p1`, `%f9`."""
    name: str


@dataclass(frozen=True, slots=True)
class Special:
    """A special register, e.g. `%tid.x`, `%ctaid.y`, `%laneid`, `%clock64`, `%lanemask_lt`."""
    name: str


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate. Integers keep their Python value (may be negative); float
    immediates (`0f3F800000`, `0d3FF0000000000000`) keep their exact bit pattern in
    `bits` with `width` 32 or 64, so nothing is lost to decimal rounding."""
    value: int | float
    bits: int | None = None
    width: int | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Sym:
    """A symbol used as a value: a variable or parameter name (`mov.u64 %rd1, smem;`)."""
    name: str


@dataclass(frozen=True, slots=True)
class Address:
    """A memory operand `[base+offset]`: base is a Reg, a Sym, or None for `[imm]`."""
    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True, slots=True)
class TensorRef:
    """A tensor operand `[tensorMap, {c0, c1, ...}]` of `cp.async.bulk.tensor`: the tensor
    map's address (a register or a symbol) and the box's starting coordinates (registers or
    immediates), innermost dimension first."""
    base: "Reg | Sym"
    coords: tuple


@dataclass(frozen=True, slots=True)
class Vector:
    """A braced vector operand `{%f1, %f2, _, %f4}`; `None` stands for the sink `_`."""
    elems: tuple[Reg | Imm | None, ...]


@dataclass(frozen=True, slots=True)
class LabelRef:
    """A branch target, e.g. `$L__BB0_2`."""
    name: str


@dataclass(frozen=True, slots=True)
class PredPair:
    """Two destinations `%p|%q` (setp with a complement output; `elect.sync %r|%p`); either
    may be the sink `_` (None)."""
    first: Reg | None
    second: Reg | None


@dataclass(frozen=True, slots=True)
class ArgList:
    """A parenthesised operand list of `call`: the return parameters `(retval0)` or
    the arguments `(param0, param1)`. `call.uni (retval0), func, (param0, param1);`
    has operands `(ArgList((Sym('retval0'),)), Sym('func'), ArgList((Sym('param0'),
    Sym('param1'))))`; a list keeps its position, so a call without return value
    starts with the callee. Elements are `Sym` (param names), `Reg` or `Imm`."""
    elems: tuple["Operand", ...]


Operand = Reg | Special | Imm | Sym | Address | TensorRef | Vector | LabelRef | PredPair | ArgList


@dataclass(frozen=True, slots=True)
class Guard:
    """An instruction guard `@%p` or `@!%p`."""
    reg: Reg
    negated: bool = False


def operand_regs(*operands) -> list[str]:
    """The register names `operands` mention, in order (repeats kept): a register; the
    registers of a vector (not the sink `_`) or a call's argument list; both of a `%p|%q`
    pair; an address's base; a tensor operand's map and coordinates; and the register of a
    negated predicate source `!%p` (a negated `Guard` in operand position, which
    `gpusim.functional.decode` reads as the inverse of %p: it reads %p; the parser refuses
    such operands today). Immediates, symbols, special registers and labels name none."""
    out: list[str] = []
    for o in operands:
        if isinstance(o, Reg):
            out.append(o.name)
        elif isinstance(o, Address):
            if isinstance(o.base, Reg):
                out.append(o.base.name)
        elif isinstance(o, (Vector, ArgList)):
            out += operand_regs(*o.elems)
        elif isinstance(o, TensorRef):
            out += operand_regs(o.base, *o.coords)
        elif isinstance(o, PredPair):
            out += [r.name for r in (o.first, o.second) if r is not None]
        elif isinstance(o, Guard):
            out.append(o.reg.name)
    return out


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A `.loc file line column` position resolved against the module's `.file` table."""
    file: str
    line: int
    column: int = 0


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True, slots=True)
class Instruction:
    """One PTX instruction.

    `opcode` is the base mnemonic (`add`, `ld`, `setp`, `cvt`); `suffixes` are the
    dotted parts in source order (`("rn", "f32")`, `("global", "v4", "f32")`,
    `("lt", "s32")`). `types` and `modifiers` split them; the printer uses `suffixes`.
    """
    opcode: str
    suffixes: tuple[str, ...]
    operands: tuple[Operand, ...]
    guard: Guard | None = None
    loc: SourceLoc | None = None
    ptx_line: int = 0

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(s for s in self.suffixes if s in TYPE_NAMES)

    @property
    def modifiers(self) -> tuple[str, ...]:
        return tuple(s for s in self.suffixes if s not in TYPE_NAMES)

    @property
    def space(self) -> str | None:
        """State space named by the instruction (`ld.global` -> 'global'); None = generic.
        `.shared::cta` is `.shared` (the executing CTA's window); `.shared::cluster` is the
        window of the whole cluster ('shared::cluster': any CTA of the cluster, PTX ISA
        "State Spaces: Shared")."""
        for s in self.suffixes:
            if s in STATE_SPACES:
                return s
            if s == "shared::cta":
                return "shared"
            if s == "shared::cluster":
                return "shared::cluster"
        return None

    @property
    def mnemonic(self) -> str:
        """The full dotted mnemonic, e.g. `ld.global.v4.f32`."""
        return ".".join((self.opcode, *self.suffixes))


@dataclass(frozen=True, slots=True)
class Label:
    """A label definition `$L__BB0_2:` in a kernel body."""
    name: str
    ptx_line: int = 0


Statement = Instruction | Label


# ----------------------------------------------------------------------------- declarations
@dataclass(frozen=True, slots=True)
class RegDecl:
    """`.reg .b32 %r<12>;` (count=12, parameterized) or `.reg .f32 %f;` (count=None)."""
    type: str
    name: str
    count: int | None = None

    def names(self) -> tuple[str, ...]:
        if self.count is None:
            return (self.name,)
        return tuple(f"{self.name}{i}" for i in range(self.count))


@dataclass(frozen=True, slots=True)
class VarDecl:
    """A variable in a state space: `.shared .align 4 .b8 smem[1024];`, `.const .f32 c[4] = {...};`,
    `.local .align 16 .b8 __local_depot0[32];`, or a kernel `.param .u64 name`.

    `dims` is empty for a scalar; an unsized array `name[]` (extern dynamic shared
    memory) has dims `(0,)`; `init` holds the initializer as a flat tuple of
    Python ints/floats (element values, in `type`), or None.
    """
    space: str
    type: str
    name: str
    align: int | None = None
    dims: tuple[int, ...] = ()
    init: tuple[int | float, ...] | None = None
    linkage: str | None = None          # 'visible', 'extern', 'weak', 'common' or None
    ptx_line: int = 0

    @property
    def elem_bytes(self) -> int:
        return type_bytes(self.type)

    @property
    def size_bytes(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n * self.elem_bytes


@dataclass(frozen=True)
class Kernel:
    """An `.entry` (or a `.func` when `is_entry` is False) with its flat body."""
    name: str
    params: tuple[VarDecl, ...]
    regs: tuple[RegDecl, ...]
    locals: tuple[VarDecl, ...]          # .local / .shared (and call-scope .param) declared inside the body
    body: tuple[Statement, ...]
    is_entry: bool = True
    directives: tuple[str, ...] = ()     # performance directives kept verbatim (.maxntid ...)
    ptx_line: int = 0
    linkage: str | None = None           # 'visible', 'extern', 'weak' or None
    retvals: tuple[VarDecl, ...] = ()    # `.func (.param .b32 func_retval0) f(...)` return params
    defined: bool = True                 # False: a prototype only (`.extern .func f(...);`), no body
    pragmas: tuple[tuple[int, str], ...] = ()   # body `.pragma "nounroll";` as (body index it precedes, text)

    @cached_property
    def instructions(self) -> tuple[Instruction, ...]:
        return tuple(s for s in self.body if isinstance(s, Instruction))

    @cached_property
    def register_types(self) -> dict[str, str]:
        """Register name -> declared PTX type."""
        out: dict[str, str] = {}
        for d in self.regs:
            for n in d.names():
                out[n] = d.type
        return out


@dataclass(frozen=True)
class Program:
    """A PTX module."""
    version: str
    target: str
    address_size: int
    globals: tuple[VarDecl, ...]
    kernels: dict[str, Kernel]
    files: dict[int, str] = field(default_factory=dict)
    functions: dict[str, Kernel] = field(default_factory=dict)
    pragmas: tuple[str, ...] = ()        # module-scope `.pragma "...";` texts

    def kernel(self, name: str | None = None) -> Kernel:
        """The named entry, or the only one."""
        if name is None:
            if len(self.kernels) != 1:
                raise KeyError(f"module has {len(self.kernels)} entries; name one of {sorted(self.kernels)}")
            return next(iter(self.kernels.values()))
        return self.kernels[name]
