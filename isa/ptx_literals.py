"""PTX operands and constants: text -> `isa.program` operand objects, and back.

What is modelled: every operand form of PTX ISA chapter 6 "Instruction Operands"
that NVVM emits — registers, special registers (chapter 10), immediates, symbols
used as values, addresses `[base+offset]`, braced vectors with the sink `_`,
`%p|%q` predicate pairs, branch targets — and `call`'s parenthesised lists
(chapter 7). Constants follow chapter 4 "Syntax", section "Constants": decimal,
hexadecimal (`0x`), octal (leading `0`) and binary (`0b`) integers with an optional
`U` suffix; `0f` + 8 hex digits is an exact `.f32`, `0d` + 16 hex digits an exact
`.f64`; a decimal floating literal (`1.5`) is an `.f64`.

Floating immediates keep their bit pattern (`Imm.bits`, `Imm.width`) and their
`text` is normalised to the exact hex form (`0f3F800000`), which the printer writes
back; integer immediates keep their source spelling in `text`. Every NaN value is
the one object `NAN`, so that two parses of the same text compare equal (NaN is
never `==` to itself, but tuples compare identical objects as equal).
"""
from __future__ import annotations

import math
import re
import struct

from isa.program import Address, ArgList, Imm, LabelRef, PredPair, Reg, Special, Sym, TensorRef, Vector

NAN = math.nan

SPECIAL_REGISTERS = frozenset({
    "tid", "ntid", "ctaid", "nctaid", "laneid", "warpid", "nwarpid", "smid", "nsmid",
    "gridid", "lanemask_eq", "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt",
    "clock", "clock_hi", "clock64", "globaltimer", "globaltimer_lo", "globaltimer_hi",
    "total_smem_size", "aggr_smem_size", "dynamic_smem_size", "is_explicit_cluster",
    "clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid", "cluster_ctarank",
    "cluster_nctarank", "current_graph_exec",
    *(f"pm{i}" for i in range(8)), *(f"pm{i}_64" for i in range(8)),
    *(f"envreg{i}" for i in range(32)),
    "reserved_smem_offset_begin", "reserved_smem_offset_end", "reserved_smem_offset_cap",
    "reserved_smem_offset_0", "reserved_smem_offset_1",
})

_INT_RE = re.compile(r"([+-]?)\s*(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)[uU]?$")
_FHEX_RE = re.compile(r"0([fF][0-9a-fA-F]{8}|[dD][0-9a-fA-F]{16})$")
_FDEC_RE = re.compile(r"[+-]?(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)$")
_IDENT_RE = re.compile(r"[A-Za-z_$][\w$]*$")
_REG_RE = re.compile(r"%[A-Za-z_$][\w$]*$")
_ADDR_RE = re.compile(r"\[\s*(?:([%A-Za-z_$][\w$.]*)\s*(?:([+-])\s*([+-]?\s*\w+))?|([+-]?\s*\w+))\s*\]$")
_INIT_TOKEN_RE = re.compile(r"[{}]|[^\s,{}]+")


def parse_int(text: str) -> int:
    """Value of a PTX integer constant (`-8`, `0xFF`, `010`, `0b101`, `7U`)."""
    m = _INT_RE.match(text.strip())
    if m is None:
        raise ValueError(f"not an integer constant: {text.strip()!r}")
    sign, digits = m.groups()
    if digits[:2] in ("0x", "0X"):
        v = int(digits[2:], 16)
    elif digits[:2] in ("0b", "0B"):
        v = int(digits[2:], 2)
    elif len(digits) > 1 and digits[0] == "0":
        v = int(digits[1:], 8)
    else:
        v = int(digits)
    return -v if sign == "-" else v


def float_from_bits(bits: int, width: int) -> float:
    """The Python float that `width`-bit IEEE pattern `bits` encodes (NaN -> `NAN`)."""
    fmt = "<f" if width == 32 else "<d"
    v = struct.unpack(fmt, bits.to_bytes(width // 8, "little"))[0]
    return NAN if v != v else v


def float_bits(value: float, width: int) -> int:
    """The `width`-bit IEEE pattern of `value` (rounded to f32 when width is 32)."""
    fmt, ifmt = ("<f", "<I") if width == 32 else ("<d", "<Q")
    return struct.unpack(ifmt, struct.pack(fmt, value))[0]


def float_text(bits: int, width: int) -> str:
    """PTX exact-hex spelling: `0f3F800000` (32-bit) or `0d3FF0000000000000`."""
    return f"0f{bits:08X}" if width == 32 else f"0d{bits:016X}"


def parse_imm(text: str) -> Imm:
    """An immediate operand; raises ValueError if `text` is not a PTX constant."""
    t = text.strip()
    if _FHEX_RE.match(t):
        width = 32 if t[1] in "fF" else 64
        bits = int(t[2:], 16)
        return Imm(float_from_bits(bits, width), bits, width, float_text(bits, width))
    if _FDEC_RE.match(t):
        bits = float_bits(float(t), 64)
        return Imm(float_from_bits(bits, 64), bits, 64, float_text(bits, 64))
    return Imm(parse_int(t), None, None, t)


def split_operands(text: str) -> list[str]:
    """Split an operand list at the commas outside `[]`, `{}` and `()`."""
    text = text.strip()
    if not text:
        return []
    if "{" not in text and "(" not in text and "[" not in text:
        return [t.strip() for t in text.split(",")]
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced {c!r} in operands")
        elif c == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError("unbalanced brackets in operands")
    out.append(text[start:].strip())
    return out


def _register(tok: str) -> Reg | Special:
    base = tok[1:].split(".", 1)[0]
    if base in SPECIAL_REGISTERS:
        return Special(tok)
    if not _REG_RE.match(tok):
        raise ValueError(f"malformed register {tok!r}")
    return Reg(tok)


def parse_operand(tok: str, branch: bool = False):
    """One operand. `branch` says an identifier is a label (`bra`), not a symbol."""
    if not tok:
        raise ValueError("empty operand")
    c = tok[0]
    if "|" in tok and (c == "%" or tok.startswith("_")):     # `%p|%q`, `%r|_`, `_|%p` (elect.sync)
        a, b = (x.strip() for x in tok.split("|", 1))
        if a == "_" and b == "_":
            raise ValueError(f"malformed operand pair {tok!r}")
        return PredPair(None if a == "_" else Reg(a), None if b == "_" else Reg(b))
    if c == "%":
        return _register(tok)
    if c == "[" and "{" in tok:                              # `[tmap, {c0, c1}]` (cp.async.bulk.tensor)
        return _tensor_ref(tok)
    if c == "[":
        m = _ADDR_RE.match(tok)
        if m is None:
            raise ValueError(f"malformed address {tok!r}")
        base, sign, off, only = m.groups()
        if base is None:
            return Address(None, parse_int(only))
        b = Reg(base) if base[0] == "%" else Sym(base)
        offset = 0 if off is None else parse_int(off.replace(" ", ""))
        return Address(b, -offset if sign == "-" else offset)
    if c == "{":
        if tok[-1] != "}":
            raise ValueError(f"malformed vector {tok!r}")
        elems = []
        for e in tok[1:-1].split(","):
            e = e.strip()
            if e == "_":
                elems.append(None)
            elif e[:1] == "%" or _IDENT_RE.match(e):
                elems.append(Reg(e))
            else:
                elems.append(parse_imm(e))
        return Vector(tuple(elems))
    if c == "(":
        if tok[-1] != ")":
            raise ValueError(f"malformed argument list {tok!r}")
        return ArgList(tuple(parse_operand(e) for e in split_operands(tok[1:-1])))
    if c == "!":
        raise ValueError(f"negated predicate operand {tok!r} is not supported")
    if c.isdigit() or c in "+-.":
        return parse_imm(tok)
    if tok == "_":
        return Sym("_")
    if _IDENT_RE.match(tok):
        return LabelRef(tok) if branch else Sym(tok)
    raise ValueError(f"unrecognised operand {tok!r}")


def _tensor_ref(tok: str) -> TensorRef:
    inner = tok[1:-1].strip() if tok.endswith("]") else ""
    parts = split_operands(inner) if inner else []
    if len(parts) != 2 or not parts[1].startswith("{"):
        raise ValueError(f"malformed tensor operand {tok!r}")
    base = parse_operand(parts[0])
    coords = parse_operand(parts[1])
    if not isinstance(base, (Reg, Sym)) or not isinstance(coords, Vector) or None in coords.elems:
        raise ValueError(f"malformed tensor operand {tok!r}")
    return TensorRef(base, coords.elems)


def parse_initializer(text: str) -> tuple[int | float, ...]:
    """`{1, 2, {3, 4}}` or `5` -> a flat tuple of values (braces only nest)."""
    out: list[int | float] = []
    depth = 0
    for tok in _INIT_TOKEN_RE.findall(text):
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced '}' in initializer")
        else:
            try:
                out.append(parse_imm(tok).value)
            except ValueError:
                raise ValueError(f"initializer element {tok!r} is not a constant "
                                 "(symbolic initializers are not supported)") from None
    if depth:
        raise ValueError("unbalanced '{' in initializer")
    return tuple(out)
