"""A grammar of small random CUDA kernels, as Hypothesis strategies producing Python source.

A *random kernel* (`kernel_body`) is a straight-line sequence of typed statements over a
pool of variables, in the dtypes int8, int16, int32, int64, uint8, uint16, uint32, uint64,
float32, float64 and bool (loaded from input arrays of those types):
arithmetic, bitwise ops, shifts, floor division and modulo, min/max, conversions,
comparisons and selects; `if`/`else` on per-thread data (divergence), nested once;
`for` loops with per-thread trip counts, `while` loops with a `break`; per-thread local
arrays indexed by thread data; shared memory written, `syncthreads`, read at
another thread's slot, `syncthreads`; warp shuffles (xor, up, down, idx) and votes
(ballot, any, all) in converged code, and xor shuffles and votes of the lanes of one side
of a divergent branch (masks 0x0000ffff, 0xffff0000, even and odd lanes); integer atomics
(add, min, max, and, or, xor) on a per-kernel slot of global memory and on shared memory
(read after a barrier). Every variable it defines is written to an output row.

`composite_source` puts many random kernels into one `@cuda.jit` function (each in its
own rows of the outputs, one after another), so one compile and one launch check them
all: Numba's compile time, not the kernels, dominates a single small kernel.

The grammar only produces programs whose results CUDA defines, so that gpusim, Numba's
CUDA simulator and a GPU must agree bit for bit:
- every operation has operands of one dtype D, literals are typed constants defined once
  (`ci3 = int32(3)`: Numba types Python literals as int64/float64, numpy 2 keeps the
  operand's type), and int32/uint32 results are cast back (`int32(x * y)`: Numba computes
  them in 64 bits), so both wrap identically;
- divisors are positive (`(y & 7) + 1`), shifts 0..7, no float-to-int conversion;
- no signed overflow: Numba marks signed arithmetic `nsw` (overflow is undefined, and LLVM
  folds `48 >= x*x` to `x*x <u 49`), so int64 operations whose magnitude bound may exceed
  2**62 go through uint64 (`int64(uint64(a) * uint64(b))`); int32 arithmetic is computed in
  64 bits by Numba and cannot overflow there;
- floats never overflow (each variable carries a magnitude bound; a product that could
  exceed it is not drawn), and are divided only by constants, so no inf or NaN appears;
- a float product never feeds an addition: NVVM contracts `a*b + c` into one `fma`
  (one rounding), which Python's two roundings do not match;
- float atomics (order-dependent sums) and atomics' return values are not used.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

INTS = ("int32", "int64", "uint32", "uint64", "int8", "int16", "uint8", "uint16")
FLOATS = ("float32", "float64")
DTYPES = INTS + FLOATS
SHUFFLE_TYPES = ("int32", "int64", "float32", "float64")
INPUTS = {"int32": "xi", "int64": "xl", "uint32": "xu", "uint64": "xq", "float32": "xf", "float64": "xd",
          "int8": "xb", "int16": "xh", "uint8": "xc", "uint16": "xw"}
OUTPUTS = {"int32": "oi", "int64": "ol", "uint32": "ou", "uint64": "oq", "float32": "of", "float64": "od",
           "int8": "ob", "int16": "oh", "uint8": "oc", "uint16": "ow"}
ARGS = tuple(INPUTS.values()) + tuple(OUTPUTS.values()) + ("ai", "au", "al")
ATOMICS = {"int32": "ai", "uint32": "au", "int64": "al"}
PARTIAL = [                        # (lanes taking a branch, their mask, xor distances staying among them)
    ("(t & 31) < 16", 0x0000FFFF, (1, 2, 4, 8)), ("(t & 31) >= 16", 0xFFFF0000, (1, 2, 4, 8)),
    ("(t & 1) == 0", 0x55555555, (2, 4, 8, 16)), ("(t & 1) == 1", 0xAAAAAAAA, (2, 4, 8, 16)),
]
MAX_VARS = 12                      # output rows per random kernel and dtype
ATOMIC_SLOTS = 4                   # atomic accumulator slots per random kernel and dtype
FLOAT_LIMIT = {"float32": 1e30, "float64": 1e300}
INPUT_FLOAT_MAG = 8.0


@dataclass
class Var:
    name: str
    dtype: str                     # one of DTYPES or 'bool'
    prod: bool = False             # float: may hold a product at its top (must not feed + or -)
    mag: float = 0.0               # bound on the magnitude (floats: no overflow; int64: no signed overflow)


@dataclass
class Body:
    k: int                         # index of the random kernel in its composite
    block: int                     # threads per block
    lines: list[str] = field(default_factory=list)
    vars: list[Var] = field(default_factory=list)
    n: int = 0
    atomics: int = 0

    def new(self, dtype: str, prod: bool = False, mag: float = 0.0) -> Var:
        v = Var(f"v{self.k}_{self.n}", dtype, prod, mag)
        self.n += 1
        return v

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)


FLOAT_CONSTANTS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.25, -1.0, -2.5, 7.0, 0.125, 4.0, 3.0, 10.0, -8.0]
INT_CONSTANTS = [0, 1, 2, 3, 4, 5, 6, 7, -1, -7, 100, -100, 255, 1000, -1000, 65535, 65536, 123456789]
BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
SHORT = {"int32": "i", "int64": "l", "uint32": "u", "uint64": "q", "float32": "f", "float64": "d",
         "int8": "b", "int16": "h", "uint8": "c", "uint16": "w"}


def table(dtype: str) -> list:
    """The typed constants of `dtype`: every value of the list that it holds."""
    if dtype in FLOATS:
        return FLOAT_CONSTANTS
    n = BITS[dtype]
    lo, hi = (0, 2 ** n - 1) if dtype.startswith("u") else (-2 ** (n - 1), 2 ** (n - 1) - 1)
    return [v for v in INT_CONSTANTS if lo <= v <= hi]


def constants(dtype: str) -> list:
    """The constants a literal of `dtype` is drawn from."""
    return table(dtype)[:10] + table(dtype)[10:][:4]


def const(dtype: str, value) -> str:
    """The name of the typed constant `value` of `dtype` (see `constant_lines`)."""
    return f"c{SHORT[dtype]}{table(dtype).index(value)}"


def constant_lines() -> list[str]:
    return [f"    c{SHORT[d]}{i} = {d}({v!r})" for d in DTYPES for i, v in enumerate(table(d))]


def wrap(dtype: str, text: str) -> str:
    """`text` (an operation on two `dtype` values) as a `dtype`: Numba computes integer
    arithmetic narrower than 64 bits in 64 bits (numpy in the operand type), so those are
    cast back; other dtypes keep their type."""
    return f"{dtype}({text})" if dtype in BITS and BITS[dtype] < 64 else f"({text})"


def _literal(draw, dtype: str) -> tuple[str, float]:
    c = draw(st.sampled_from(constants(dtype)))
    return const(dtype, c), abs(c)


INT64_SAFE = 2.0 ** 62             # int64 results below this bound cannot overflow


def int64_op(a: str, op: str, b: str, mag: float) -> tuple[str, bool, float]:
    """`a op b` on int64 values: signed when the bound `mag` rules out overflow, else wrapped
    through uint64 (Numba marks signed arithmetic `nsw`, so an overflow lets LLVM fold
    comparisons as if it could not happen, as C compilers do)."""
    if mag < INT64_SAFE:
        return f"({a} {op} {b})", False, mag
    return f"int64(uint64({a}) {op} uint64({b}))", False, 2.0 ** 63


def _pick(draw, body: Body, dtype: str, allow_prod: bool = True) -> Var | None:
    cands = [v for v in body.vars if v.dtype == dtype and (allow_prod or not v.prod)]
    return draw(st.sampled_from(cands)) if cands else None


def _leaf(draw, body: Body, dtype: str, allow_prod: bool) -> tuple[str, bool, float]:
    v = _pick(draw, body, dtype, allow_prod) if draw(st.integers(0, 3)) else None
    if v is None:
        text, mag = _literal(draw, dtype)
        return text, False, mag
    return v.name, v.prod, v.mag


def expr(draw, body: Body, dtype: str, depth: int, allow_prod: bool = True) -> tuple[str, bool, float]:
    """(source, may hold a product on top, magnitude bound) of an expression of `dtype`."""
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        return _leaf(draw, body, dtype, allow_prod)
    if dtype in INTS:
        kind = draw(st.sampled_from(["bin", "bin", "shift", "div", "minmax", "conv", "select"]))
        if kind == "bin":
            op = draw(st.sampled_from(["+", "-", "*", "&", "|", "^"]))
            a, _, ma = expr(draw, body, dtype, depth - 1)
            b, _, mb = expr(draw, body, dtype, depth - 1)
            mag = ma * mb if op == "*" else ma + mb if op in "+-" else 2 * max(ma, mb)
            if dtype == "int64":
                return int64_op(a, op, b, mag)
            return wrap(dtype, f"{a} {op} {b}"), False, mag
        if kind == "shift":
            op = draw(st.sampled_from(["<<", ">>"]))
            a, _, ma = expr(draw, body, dtype, depth - 1)
            n = draw(st.integers(0, 7))
            if dtype == "int64" and op == "<<":
                return int64_op(a, op, const(dtype, n), ma * 2 ** n)
            return wrap(dtype, f"{a} {op} {const(dtype, n)}"), False, ma * 2 ** n
        if kind == "div":
            op = draw(st.sampled_from(["//", "%"]))
            a, _, ma = expr(draw, body, dtype, depth - 1)
            b, _, _ = expr(draw, body, dtype, depth - 1)
            d = wrap(dtype, f"{wrap(dtype, f'{b} & {const(dtype, 7)}')} + {const(dtype, 1)}")
            return wrap(dtype, f"{a} {op} {d}"), False, ma
        if kind == "minmax":
            f = draw(st.sampled_from(["min", "max"]))
            a, _, ma = expr(draw, body, dtype, depth - 1)
            b, _, mb = expr(draw, body, dtype, depth - 1)
            return f"{f}({a}, {b})", False, max(ma, mb)
        if kind == "conv":
            src = draw(st.sampled_from([d for d in INTS + ("bool",) if d != dtype]))
            v = _pick(draw, body, src)
            if v is None:
                return _leaf(draw, body, dtype, allow_prod)
            return f"{dtype}({v.name})", False, (2.0 ** BITS[src] if src in BITS and BITS[src] < 64 else
                                                 1.0 if src == "bool" else 2.0 ** 63) if dtype == "int64" else 2.0 ** 64
        c = cond(draw, body, depth - 1)
        a, _, ma = expr(draw, body, dtype, depth - 1)
        b, _, mb = expr(draw, body, dtype, depth - 1)
        return f"({a} if {c} else {b})", False, max(ma, mb)
    # floats
    limit = FLOAT_LIMIT[dtype]
    kind = draw(st.sampled_from(["add", "add", "mul", "div", "minmax", "conv", "neg", "select"]))
    if kind == "add":
        op = draw(st.sampled_from(["+", "-"]))
        a, _, ma = expr(draw, body, dtype, depth - 1, allow_prod=False)
        b, _, mb = expr(draw, body, dtype, depth - 1, allow_prod=False)
        return f"({a} {op} {b})", False, ma + mb
    if kind == "mul" and allow_prod:
        a, _, ma = expr(draw, body, dtype, depth - 1)
        b, _, mb = expr(draw, body, dtype, depth - 1)
        if ma * mb < limit:
            return f"({a} * {b})", True, ma * mb
        return a, True, ma
    if kind == "div" and allow_prod:
        a, _, ma = expr(draw, body, dtype, depth - 1)
        c = draw(st.sampled_from([2.0, 4.0, 0.5, 3.0, 10.0, -8.0]))
        return f"({a} / {const(dtype, c)})", True, ma / abs(c)
    if kind == "minmax":
        f = draw(st.sampled_from(["min", "max"]))
        a, pa, ma = expr(draw, body, dtype, depth - 1, allow_prod)
        b, pb, mb = expr(draw, body, dtype, depth - 1, allow_prod)
        return f"{f}({a}, {b})", pa or pb, max(ma, mb)
    if kind == "conv":
        src = draw(st.sampled_from([d for d in DTYPES if d != dtype]))
        v = _pick(draw, body, src)
        if v is None or (src in FLOATS and v.mag >= limit):
            return _leaf(draw, body, dtype, allow_prod)
        mag = v.mag if src in FLOATS else 2.0 ** 64
        return f"{dtype}({v.name})", False, mag
    if kind == "neg":
        a, pa, ma = expr(draw, body, dtype, depth - 1, allow_prod)
        return f"(-{a})", pa, ma
    if kind == "select":
        c = cond(draw, body, depth - 1)
        a, pa, ma = expr(draw, body, dtype, depth - 1, allow_prod)
        b, pb, mb = expr(draw, body, dtype, depth - 1, allow_prod)
        return f"({a} if {c} else {b})", pa or pb, max(ma, mb)
    return _leaf(draw, body, dtype, allow_prod)


def cond(draw, body: Body, depth: int) -> str:
    """A bool expression: a comparison of two expressions of one dtype, or a bool variable."""
    v = _pick(draw, body, "bool") if draw(st.integers(0, 3)) == 0 else None
    if v is not None:
        return v.name
    dtype = draw(st.sampled_from(DTYPES))
    op = draw(st.sampled_from(["<", "<=", "==", "!=", ">", ">="]))
    a, _, _ = expr(draw, body, dtype, max(depth, 0))
    b, _, _ = expr(draw, body, dtype, max(depth, 0))
    return f"({a} {op} {b})"


def _assign(draw, body: Body, indent: int, dtype: str, allow_prod: bool = True) -> Var:
    text, prod, mag = expr(draw, body, dtype, draw(st.integers(1, 3)), allow_prod)
    v = body.new(dtype, prod, mag)
    body.emit(f"{v.name} = {text}", indent)
    return v


def statement(draw, body: Body, top: bool, indent: int = 1) -> None:
    kinds = ["assign", "assign", "assign", "if", "loop", "cond", "while", "local"]
    if top:
        kinds += ["shared", "shuffle", "vote", "atomic", "partial", "shared_atomic"]
    kind = draw(st.sampled_from(kinds))
    if kind == "assign":
        body.vars.append(_assign(draw, body, indent, draw(st.sampled_from(DTYPES))))
    elif kind == "cond":
        v = body.new("bool")
        body.emit(f"{v.name} = {cond(draw, body, 1)}", indent)
        body.vars.append(v)
    elif kind == "if":
        dtype = draw(st.sampled_from(DTYPES))
        body.emit(f"if {cond(draw, body, 1)}:", indent)
        a = _assign(draw, body, indent + 1, dtype)
        if top and draw(st.booleans()):
            body.emit(f"if {cond(draw, body, 1)}:", indent + 1)
            b = _assign(draw, body, indent + 2, dtype)
            body.emit(f"{a.name} = {b.name}", indent + 2)
            a.prod, a.mag = a.prod or b.prod, max(a.mag, b.mag)
        body.emit("else:", indent)
        c = _assign(draw, body, indent + 1, dtype)
        body.emit(f"{a.name} = {c.name}", indent + 1)
        a.prod, a.mag = a.prod or c.prod, max(a.mag, c.mag)
        body.vars.append(a)
    elif kind == "loop":
        dtype = draw(st.sampled_from(DTYPES))
        init, _ = _literal(draw, dtype)
        acc = body.new(dtype)
        j = body.new("int32")
        body.emit(f"{acc.name} = {init}", indent)
        trips = f"t & {draw(st.sampled_from([1, 3, 7]))}" if draw(st.booleans()) else str(draw(st.integers(0, 4)))
        body.emit(f"for {j.name}_ in range({trips}):", indent)
        body.emit(f"{j.name} = int32({j.name}_)", indent + 1)
        body.vars.append(j)
        step, _, ms = expr(draw, body, dtype, 2, allow_prod=False)
        if dtype in FLOATS:
            body.emit(f"{acc.name} = {acc.name} + {step}", indent + 1)
            acc.mag = 8 * ms + 10
        elif dtype == "int64":                       # up to 7 trips: wrap through uint64 (see int64_op)
            op = draw(st.sampled_from(["+", "^", "*", "-"]))
            body.emit(f"{acc.name} = {int64_op(acc.name, op, step, 2.0 ** 63)[0]}", indent + 1)
            acc.mag = 2.0 ** 63
        else:
            op = draw(st.sampled_from(["+", "^", "*", "-"]))
            body.emit(f"{acc.name} = {wrap(dtype, f'{acc.name} {op} {step}')}", indent + 1)
            acc.mag = 2.0 ** 64
        body.vars.remove(j)
        body.vars.append(acc)
    elif kind == "shared":
        dtype = draw(st.sampled_from(DTYPES))
        src = _pick(draw, body, dtype) or _assign(draw, body, indent, dtype)
        sh = f"sh{body.k}_{body.n}"
        body.n += 1
        xor = draw(st.sampled_from([m for m in (1, 2, 16, 32) if body.block % (2 * m) == 0]))
        other = draw(st.sampled_from([f"{body.block - 1} - t", f"(t + {draw(st.integers(1, body.block - 1))}) % "
                                      f"{body.block}", f"t ^ {xor}"]))
        body.emit(f"{sh} = cuda.shared.array({body.block}, {dtype})", indent)
        body.emit(f"{sh}[t] = {src.name}", indent)
        body.emit("cuda.syncthreads()", indent)
        v = body.new(dtype, src.prod, src.mag)
        body.emit(f"{v.name} = {sh}[{other}]", indent)
        body.emit("cuda.syncthreads()", indent)
        body.vars.append(v)
    elif kind == "shuffle":
        dtype = draw(st.sampled_from(SHUFFLE_TYPES))
        src = _pick(draw, body, dtype) or _assign(draw, body, indent, dtype)
        how = draw(st.sampled_from(["xor", "up", "down", "idx"]))
        arg = draw(st.sampled_from([1, 2, 4, 8, 16])) if how != "idx" else draw(st.integers(0, 31))
        fn = {"xor": "shfl_xor_sync", "up": "shfl_up_sync", "down": "shfl_down_sync", "idx": "shfl_sync"}[how]
        v = body.new(dtype, src.prod, src.mag)
        body.emit(f"{v.name} = cuda.{fn}(0xFFFFFFFF, {src.name}, {arg})", indent)
        body.vars.append(v)
    elif kind == "while":                            # a loop with a per-thread trip count and a break
        dtype = draw(st.sampled_from(DTYPES))
        init, _ = _literal(draw, dtype)
        acc = body.new(dtype)
        j = body.new("int32")
        body.emit(f"{acc.name} = {init}", indent)
        body.emit(f"{j.name} = {const('int32', 0)}", indent)
        body.emit(f"while {j.name} < int32(t & {draw(st.sampled_from([3, 7]))}):", indent)
        body.vars.append(j)
        step, _, ms = expr(draw, body, dtype, 1, allow_prod=False)
        if dtype in FLOATS:
            body.emit(f"{acc.name} = {acc.name} + {step}", indent + 1)
            acc.mag = 8 * ms + 10
        elif dtype == "int64":
            body.emit(f"{acc.name} = {int64_op(acc.name, '^', step, 2.0 ** 63)[0]}", indent + 1)
            acc.mag = 2.0 ** 63
        else:
            body.emit(f"{acc.name} = {wrap(dtype, f'{acc.name} + {step}')}", indent + 1)
            acc.mag = 2.0 ** 64
        body.vars.append(acc)
        body.emit(f"if {cond(draw, body, 0)}:", indent + 1)
        body.emit("break", indent + 2)
        body.emit(f"{j.name} = int32({j.name} + {const('int32', 1)})", indent + 1)
        body.vars.remove(acc)
        body.vars.remove(j)
        body.vars.append(acc)
    elif kind == "local":                            # a per-thread array indexed by thread data
        dtype = draw(st.sampled_from(DTYPES))
        la = f"la{body.k}_{body.n}"
        body.n += 1
        body.emit(f"{la} = cuda.local.array(4, {dtype})", indent)
        prod, mag = False, 0.0
        for q in range(4):
            text, p_, m_ = _leaf(draw, body, dtype, True)
            prod, mag = prod or p_, max(mag, m_)
            body.emit(f"{la}[{q}] = {text}", indent)
        v = body.new(dtype, prod, mag)
        body.emit(f"{v.name} = {la}[(t + {draw(st.integers(0, 3))}) & 3]", indent)
        body.vars.append(v)
    elif kind == "shared_atomic":                    # atomics on shared memory, read after a barrier
        dtype = draw(st.sampled_from(tuple(ATOMICS)))
        sa = f"sa{body.k}_{body.n}"
        body.n += 1
        src = _pick(draw, body, dtype)
        val = src.name if src is not None else _literal(draw, dtype)[0]
        op = draw(st.sampled_from(["add", "min", "max", "and_", "or_", "xor"] if dtype != "int64"
                                  else ["add", "min", "max"]))
        body.emit(f"{sa} = cuda.shared.array(4, {dtype})", indent)
        body.emit("if t < 4:", indent)
        body.emit(f"{sa}[t] = {_literal(draw, dtype)[0]}", indent + 1)
        body.emit("cuda.syncthreads()", indent)
        body.emit(f"cuda.atomic.{op}({sa}, t & 3, {val})", indent)
        body.emit("cuda.syncthreads()", indent)
        v = body.new(dtype, mag=2.0 ** 64)
        body.emit(f"{v.name} = {sa}[t & 3]", indent)
        body.emit("cuda.syncthreads()", indent)
        body.vars.append(v)
    elif kind == "partial":                          # a collective of the lanes of one side of a branch
        test, mask, xors = draw(st.sampled_from(PARTIAL))
        dtype = draw(st.sampled_from(SHUFFLE_TYPES))
        src = _pick(draw, body, dtype) or _assign(draw, body, indent, dtype)
        other = _pick(draw, body, dtype) or src
        v = body.new(dtype, src.prod or other.prod, max(src.mag, other.mag))
        body.emit(f"if {test}:", indent)
        if draw(st.booleans()):
            body.emit(f"{v.name} = cuda.shfl_xor_sync({mask:#010x}, {src.name}, {draw(st.sampled_from(xors))})",
                      indent + 1)
        else:
            how = draw(st.sampled_from(["ballot_sync", "any_sync", "all_sync"]))
            # Numba types a vote's result int32 (Numba's simulator: a Python int): uint32 first
            body.emit(f"{v.name} = {dtype}(uint32(cuda.{how}({mask:#010x}, {cond(draw, body, 1)})))", indent + 1)
            v.prod, v.mag = other.prod, max(other.mag, 2.0 ** 32)
        body.emit("else:", indent)
        body.emit(f"{v.name} = {other.name}", indent + 1)
        body.vars.append(v)
    elif kind == "vote":
        c = cond(draw, body, 1)
        how = draw(st.sampled_from(["ballot_sync", "any_sync", "all_sync"]))
        dtype = "uint32" if how == "ballot_sync" else "int32"
        v = body.new(dtype, mag=2.0 ** 32)
        body.emit(f"{v.name} = {dtype}(cuda.{how}(0xFFFFFFFF, {c}))", indent)
        body.vars.append(v)
    elif kind == "atomic" and body.atomics < ATOMIC_SLOTS:
        dtype = draw(st.sampled_from(tuple(ATOMICS)))
        src = _pick(draw, body, dtype)
        val = src.name if src is not None else _literal(draw, dtype)[0]
        op = draw(st.sampled_from(["add", "min", "max", "and_", "or_", "xor"] if dtype != "int64"
                                  else ["add", "min", "max"]))
        body.emit(f"cuda.atomic.{op}({ATOMICS[dtype]}, {body.k * ATOMIC_SLOTS + body.atomics}, {val})", indent)
        body.atomics += 1


@st.composite
def kernel_body(draw, k: int, block: int) -> list[str]:
    """The source lines of random kernel number `k` of a composite (see module doc)."""
    body = Body(k, block)
    for dtype, arr in INPUTS.items():             # loaded once per composite (`composite_source`)
        if draw(st.integers(0, 2)):
            body.vars.append(Var(f"in_{arr}", dtype, False, INPUT_FLOAT_MAG if dtype in FLOATS else 2.0 ** 64))
    inputs = len(body.vars)
    for _ in range(draw(st.integers(2, 5))):
        statement(draw, body, top=True)
    written: dict[str, int] = {}
    for v in body.vars[inputs:]:                  # the inputs themselves need no checking
        dtype = "int32" if v.dtype == "bool" else v.dtype
        col = written.get(dtype, 0)
        if col >= MAX_VARS:
            continue
        written[dtype] = col + 1
        value = f"int32({v.name})" if v.dtype == "bool" else v.name
        body.emit(f"{OUTPUTS[dtype]}[{k * MAX_VARS + col}, g] = {value}")
    return body.lines


def composite_source(bodies: list[list[str]], name: str = "composite") -> str:
    """One kernel running every random kernel of `bodies` in turn, after loading each thread's
    inputs and defining the typed constants the bodies use (Numba compiles each line)."""
    import re
    text = "\n".join(line for b in bodies for line in b)
    used = set(re.findall(r"\b(c[a-z]\d+|in_x[a-z])\b", text))
    prelude = [line for line in constant_lines() if line.split("=")[0].strip() in used]
    for dtype, arr in INPUTS.items():
        if f"in_{arr}" in used:
            prelude.append(f"    in_{arr} = {dtype}({arr}[g])")
    head = [
        "from numba import cuda",
        "from numba import int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64",
        "",
        "",
        "@cuda.jit",
        f"def {name}({', '.join(ARGS)}):",
        "    t = int32(cuda.threadIdx.x)",
        "    g = int32(cuda.grid(1))",
    ] + prelude
    lines = list(head)
    for b in bodies:
        lines += b
    return "\n".join(lines) + "\n"
