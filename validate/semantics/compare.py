"""Run recorded hardware inputs through the simulator's semantics and report every instruction
form whose outputs differ from the recorded hardware outputs, bit for bit.

`data` maps `"in:<form>"` to the inputs, shape (k, n), and `"out:<form>"` to the outputs, shape
(n,): unsigned bit patterns of any width (an `np.load`ed .npz works as is). Form names follow
`validate.semantics.specs` (`lop3.b32#150`, `setp.lt.and.s32!`, `setp1.lt.f16x2`,
`carry|addc.cc.u32|cf`, `atom.global.cas.b32`); everything needed to rebuild the instruction is
in the name and the number of inputs, so the data file is self-describing.

Each form is built as an `isa.program.Instruction`, bound through `isa.optable.bind` (the path
the executor takes) and its `fn` applied to all n inputs at once under `np.errstate(all="ignore")`,
as the executor does. It checks the value semantics only: the executor's decoding, masks and
memory are not involved (atomics are checked as their combining function on one slot per lane).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from isa.optable import bind
from isa.program import Address, Imm, Instruction, PredPair, Reg
from isa.semantics.carry import implicit_operands
from isa.types import dtype, unsigned_dtype


@dataclass(frozen=True)
class Mismatch:
    """A form whose simulated outputs differ from hardware: how many of how many inputs, and the
    first differing input with both outputs (all as bit patterns)."""
    form: str
    count: int
    total: int
    inputs: tuple[int, ...]
    hardware: int
    simulated: int

    def __str__(self) -> str:
        ins = ", ".join(hex(v) for v in self.inputs)
        return (f"{self.form}: {self.count}/{self.total} outputs differ; first at inputs ({ins}): "
                f"hardware {self.hardware:#x}, simulator {self.simulated:#x}")


def forms(data) -> list[str]:
    """The form names in `data`, in file order."""
    return [k[3:] for k in data.keys() if k.startswith("in:")]


def compare(data) -> list[Mismatch]:
    """Every form of `data` whose simulated outputs differ from the recorded ones."""
    return [m for f in forms(data) if (m := compare_form(f, data["in:" + f], data["out:" + f]))]


def compare_form(form: str, inputs: np.ndarray, outputs: np.ndarray) -> Mismatch | None:
    """None when the simulator reproduces `outputs` from `inputs` exactly, else the Mismatch."""
    x = np.asarray(inputs).astype(np.uint64)
    y = np.asarray(outputs).astype(np.uint64)
    got = simulate(form, x)
    bad = np.nonzero(got != y)[0]
    if not len(bad):
        return None
    i = bad[0]
    return Mismatch(form, len(bad), len(y), tuple(int(v) for v in x[:, i]), int(y[i]), int(got[i]))


def simulate(form: str, x: np.ndarray) -> np.ndarray:
    """The simulator's outputs (uint64 bit patterns, packed as the hardware kernel stores them)
    of instruction form `form` on inputs `x`, shape (k, n) uint64."""
    with np.errstate(all="ignore"):
        if form.startswith("carry|"):
            return _carry(form, x)
        if form.startswith("atom."):
            return _atom(form, x)
        if form.startswith(("setp.", "setp1.")):
            return _setp(form, x)
        return _plain(form, x)


def _bound(mnemonic: str, operands: tuple):
    op, *suffixes = mnemonic.split(".")
    instr = Instruction(op, tuple(suffixes), operands)
    return instr, bind(instr)[1]


def _val(bits: np.ndarray, t: str) -> np.ndarray:
    dt = dtype(t)
    return bits.astype(unsigned_dtype(dt.itemsize)).view(dt)


def _bits(value, t: str) -> np.ndarray:
    dt = dtype(t)
    value = np.asarray(value)
    if value.dtype != dt:
        raise TypeError(f"semantics returned {value.dtype}, bound type {t} is {dt}")
    return value.view(unsigned_dtype(dt.itemsize)).astype(np.uint64)


def _regs(n: int, prefix: str = "%s") -> tuple[Reg, ...]:
    return tuple(Reg(f"{prefix}{i}") for i in range(n))


def _plain(form: str, x: np.ndarray) -> np.ndarray:
    mnemonic, _, lut = form.partition("#")
    imms = (int(lut),) if lut else ()
    k = len(x)
    _, b = _bound(mnemonic, (Reg("%d"),) + _regs(k) + tuple(Imm(v) for v in imms))
    args = [_val(x[i], t) for i, t in enumerate(b.src_types[:k])]
    args += [dtype(t).type(v) for t, v in zip(b.src_types[k:], imms)]
    return _bits(b.fn(*args), b.dst_types[0])


def _setp(form: str, x: np.ndarray) -> np.ndarray:
    """Packed p | q << 1; input 2 (when present) is the combine predicate c, negated for `!`."""
    negate = form.endswith("!")
    single = form.startswith("setp1.")
    mnemonic = "setp." + form.rstrip("!").split(".", 1)[1]
    suffixes = mnemonic.split(".")[1:]
    boolop = any(s in ("and", "or", "xor") for s in suffixes)
    if single or suffixes[-1] in ("f16", "bf16"):           # scalar half setp has only p
        dst = Reg("%p")
    else:
        dst = PredPair(Reg("%p"), Reg("%q"))
    _, b = _bound(mnemonic, (dst, Reg("%a"), Reg("%b")) + ((Reg("%c"),) if boolop else ()))
    args = [_val(x[i], t) for i, t in enumerate(b.src_types[:2])]
    if boolop:
        c = x[2].astype(np.uint32) != 0
        args.append(~c if negate else c)
    r = b.fn(*args)
    p, q = r if isinstance(r, tuple) else (r, np.zeros(x.shape[1], bool))
    return np.asarray(p).astype(np.uint64) | (np.asarray(q).astype(np.uint64) << np.uint64(1))


def _carry(form: str, x: np.ndarray) -> np.ndarray:
    """Part d: the result; part cf: the carry flag left behind. A carry-reading form's last input
    is the carry-in (non-zero = set)."""
    _, mnemonic, part = form.split("|")
    nsrc = 3 if mnemonic.startswith("mad") else 2
    instr, b = _bound(mnemonic, (Reg("%d"),) + _regs(nsrc))
    writes, reads = implicit_operands(instr)
    args = [_val(x[i], t) for i, t in enumerate(b.src_types[:nsrc])]
    if reads:
        args.append(x[nsrc].astype(np.uint32) != 0)
    r = b.fn(*args)
    d, cf = r if writes else (r, None)
    if part == "cf":
        return np.asarray(cf).astype(np.uint64)
    return _bits(d, b.dst_types[0])


def _atom(form: str, x: np.ndarray) -> np.ndarray:
    """The memory value after the atomic: fn(old, operands...) on input 0 = old."""
    nops = len(x) - 1
    _, b = _bound(form, (Reg("%d"), Address(Reg("%a"))) + _regs(nops))
    t = b.dst_types[0]
    return _bits(b.fn(*(_val(x[i], t) for i in range(nops + 1))), t)


def main(argv=None) -> int:
    """`python -m validate.semantics.compare DATA.npz`: print mismatches; exit 1 if any."""
    path = (argv or sys.argv[1:])[0]
    data = np.load(path)
    bad = compare(data)
    for m in bad:
        print(m)
    print(f"{len(forms(data))} forms, {len(bad)} mismatching")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
