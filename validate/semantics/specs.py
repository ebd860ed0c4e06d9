"""The instruction forms checked against hardware, and the inputs each one is run on.

A form is `(name, asm, out_w, in_ws, gens)`: `asm` is inline PTX with `%0` for the one output and
`%1..` for the inputs; widths are bits (16/32/64) or 'f'/'d' for float32/float64 registers; `gens`
names the input generator of each input (see `gen`). Names follow PTX mnemonics, with four
conventions that `validate.semantics.compare` decodes:

- `lop3.b32#150`: the trailing `#n` is an immediate operand (the LUT);
- `setp.lt.and.s32!`: a trailing `!` negates the boolean-combine predicate `c`;
- `setp1.lt.f16x2`: setp with a single predicate destination (no `|q`);
- `carry|mad.lo.cc.u32|cf`: a carry-chain instruction; part `d` is its result, part `cf` is the
  carry flag it leaves (read back by `addc 0, 0`). Forms that read the carry take one more input,
  the carry-in (non-zero = set), set up by `add.cc.u32 tc, cin, 0xFFFFFFFF`.

setp outputs are packed as `p | q << 1`; setp's inputs after the two operands are the combine
predicate `c` (non-zero = true). Atomic forms (`ATOMS`: mnemonic, width, operand count) take the
initial memory value as input 0 and output the memory value after the atomic.

Inputs (`draw_inputs`) come from one `numpy.random.default_rng(1234)` stream, drawn form by form in
list order, so a re-run draws the same inputs as the recorded one. Each generator starts with a
deliberate block of edge cases (`EDGE_COUNT`: for "int", all 22 x 22 pairs of 0, 1, max, min,
sign boundaries, byte/halfword boundaries...; for floats and halves, all pairs of zeros,
infinities, NaNs, subnormals and ones), followed by random values.

Source: PTX ISA 9.0, chapter "Instructions".
"""
from __future__ import annotations

import numpy as np

N = 4096                 # inputs per form in a measurement
SEED = 1234

FLOAT_EDGES = {"f": [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-40, -1e-40, 2.0, 0.5, 3.0],
               "d": [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-310, -1e-310, 2.0, 0.5, 3.0]}
HALF_EDGES = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x8001, 0x3C00, 0xBC00, 0x3C01, 0x7BFF,
              0x7F80, 0xFF80, 0x7FC0, 0x3F80, 0x0080, 0x0040]     # f16 and bf16 bit patterns


def int_edges(w: int) -> list[int]:
    m = (1 << w) - 1
    return [0, 1, 2, 3, 7, m, m - 1, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1,
            0xFF, 0x80, 0x7F, 0x100, 0xFFFF & m, 0x8000 & m, 0x00FFFFFF & m, 0x800000 & m, 5, 6, 100, m - 6]


# Leading inputs of each generator that are deliberate edge cases (the rest are random).
EDGE_COUNT = {"int": len(int_edges(32)) ** 2, "amt": 128, "sel": 0,
              "f": len(FLOAT_EDGES["f"]) ** 2, "d": len(FLOAT_EDGES["d"]) ** 2,
              "h": len(HALF_EDGES) ** 2, "h2": len(HALF_EDGES) ** 2}


def gen(kind: str, w: int, rng: np.random.Generator, n: int = N, j: int = 0) -> np.ndarray:
    """n inputs (uint64 bit patterns) of generator `kind` for a w-bit operand, the j-th input of
    its form (j picks how the edge block is crossed with the other inputs' edge blocks)."""
    if kind == "int":
        m = (1 << w) - 1
        base = np.array(int_edges(w), dtype=np.uint64)
        e = len(base)
        cross = np.repeat(base, e) if j == 0 else (np.tile(base, e) if j == 1 else np.roll(np.tile(base, e), 7 * j))
        r = (rng.integers(0, 1 << 63, size=n, dtype=np.uint64) * np.uint64(2)
             + rng.integers(0, 2, size=n, dtype=np.uint64))
        r &= np.uint64(m)
        k = n // 4
        r[:k] = rng.integers(0, 64, size=k).astype(np.uint64)                  # a quarter small
        r[k:2 * k] = (np.uint64(m) - rng.integers(0, 64, size=k).astype(np.uint64)) & np.uint64(m)  # a quarter near max
        r = rng.permutation(r)
        return np.concatenate([cross, r])[:n]
    if kind == "amt":   # shift amounts / bit positions / field lengths: 0..63, then 64 huge, then 0..299
        r = rng.integers(0, 300, size=n).astype(np.uint64)
        r[:64] = np.arange(64)
        r[64:128] = rng.integers(0, 1 << 32, size=64).astype(np.uint64)
        return r
    if kind == "sel":   # uniformly random 32-bit (prmt selectors, dp4a bytes)
        return rng.integers(0, 1 << 32, size=n, dtype=np.uint64)
    if kind in ("f", "d"):
        dt, ut = (np.float32, np.uint32) if kind == "f" else (np.float64, np.uint64)
        vals = np.array(FLOAT_EDGES[kind], dtype=dt)
        r = rng.choice(vals, size=n)
        e = len(vals)
        r[:e * e] = np.repeat(vals, e) if j == 0 else np.tile(vals, e)
        return r.view(ut).astype(np.uint64)
    if kind in ("h", "h2"):
        vals = np.array(HALF_EDGES, dtype=np.uint64)
        e = len(vals)
        r = rng.choice(vals, size=n)
        r[:e * e] = np.repeat(vals, e) if j == 0 else np.tile(vals, e)
        if kind == "h2":
            r2 = rng.choice(vals, size=n)
            r2[:e * e] = np.tile(vals, e) if j == 0 else np.repeat(vals, e)
            r = r | (r2 << np.uint64(16))
        return r
    raise ValueError(kind)


SPECS = []


def add(name, asm, out_w, in_ws, gens=None):
    SPECS.append((name, asm, out_w, tuple(in_ws), tuple(gens or ["int"] * len(in_ws))))


for op in ("div", "rem"):
    for t, w in (("s16", 16), ("u16", 16), ("s32", 32), ("u32", 32), ("s64", 64), ("u64", 64)):
        add(f"{op}.{t}", f"{op}.{t} %0, %1, %2;", w, (w, w))
for t, w in (("s16", 16), ("u16", 16), ("s32", 32), ("u32", 32), ("s64", 64), ("u64", 64)):
    add(f"mul.hi.{t}", f"mul.hi.{t} %0, %1, %2;", w, (w, w))
    add(f"mul.lo.{t}", f"mul.lo.{t} %0, %1, %2;", w, (w, w))
    add(f"mad.hi.{t}", f"mad.hi.{t} %0, %1, %2, %3;", w, (w, w, w))
    add(f"sad.{t}", f"sad.{t} %0, %1, %2, %3;", w, (w, w, w))
    add(f"min.{t}", f"min.{t} %0, %1, %2;", w, (w, w))
    add(f"max.{t}", f"max.{t} %0, %1, %2;", w, (w, w))
for t, w in (("s16", 16), ("u16", 16), ("s32", 32), ("u32", 32)):
    add(f"mul.wide.{t}", f"mul.wide.{t} %0, %1, %2;", 2 * w, (w, w))
    add(f"mad.wide.{t}", f"mad.wide.{t} %0, %1, %2, %3;", 2 * w, (w, w, 2 * w))
add("mad.hi.sat.s32", "mad.hi.sat.s32 %0, %1, %2, %3;", 32, (32, 32, 32))
add("add.sat.s32", "add.sat.s32 %0, %1, %2;", 32, (32, 32))
add("sub.sat.s32", "sub.sat.s32 %0, %1, %2;", 32, (32, 32))
add("min.relu.s32", "min.relu.s32 %0, %1, %2;", 32, (32, 32))
add("max.relu.s32", "max.relu.s32 %0, %1, %2;", 32, (32, 32))
add("min.s16x2", "min.s16x2 %0, %1, %2;", 32, (32, 32))
add("max.u16x2", "max.u16x2 %0, %1, %2;", 32, (32, 32))
add("max.relu.s16x2", "max.relu.s16x2 %0, %1, %2;", 32, (32, 32))
for t in ("s32", "u32"):
    for m in ("lo", "hi"):
        add(f"mul24.{m}.{t}", f"mul24.{m}.{t} %0, %1, %2;", 32, (32, 32))
        add(f"mad24.{m}.{t}", f"mad24.{m}.{t} %0, %1, %2, %3;", 32, (32, 32, 32))
add("mad24.hi.sat.s32", "mad24.hi.sat.s32 %0, %1, %2, %3;", 32, (32, 32, 32))
for t, w in (("s16", 16), ("s32", 32), ("s64", 64)):
    add(f"abs.{t}", f"abs.{t} %0, %1;", w, (w,))
    add(f"neg.{t}", f"neg.{t} %0, %1;", w, (w,))
# bits
for t, w in (("b16", 16), ("b32", 32), ("b64", 64)):
    add(f"shl.{t}", f"shl.{t} %0, %1, %2;", w, (w, 32), ["int", "amt"])
    add(f"cnot.{t}", f"cnot.{t} %0, %1;", w, (w,))
for t, w in (("s16", 16), ("u16", 16), ("s32", 32), ("u32", 32), ("b32", 32), ("s64", 64), ("u64", 64)):
    add(f"shr.{t}", f"shr.{t} %0, %1, %2;", w, (w, 32), ["int", "amt"])
for d in ("l", "r"):
    for m in ("wrap", "clamp"):
        add(f"shf.{d}.{m}.b32", f"shf.{d}.{m}.b32 %0, %1, %2, %3;", 32, (32, 32, 32), ["int", "int", "amt"])
for t, w in (("b32", 32), ("b64", 64)):
    add(f"popc.{t}", f"popc.{t} %0, %1;", 32, (w,))
    add(f"clz.{t}", f"clz.{t} %0, %1;", 32, (w,))
    add(f"brev.{t}", f"brev.{t} %0, %1;", w, (w,))
    add(f"bfi.{t}", f"bfi.{t} %0, %1, %2, %3, %4;", w, (w, w, 32, 32), ["int", "int", "amt", "amt"])
for t, w in (("s32", 32), ("u32", 32), ("s64", 64), ("u64", 64)):
    add(f"bfind.{t}", f"bfind.{t} %0, %1;", 32, (w,))
    add(f"bfind.shiftamt.{t}", f"bfind.shiftamt.{t} %0, %1;", 32, (w,))
    add(f"bfe.{t}", f"bfe.{t} %0, %1, %2, %3;", w, (w, 32, 32), ["int", "amt", "amt"])
add("prmt.b32", "prmt.b32 %0, %1, %2, %3;", 32, (32, 32, 32), ["int", "int", "sel"])
for m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
    add(f"prmt.b32.{m}", f"prmt.b32.{m} %0, %1, %2, %3;", 32, (32, 32, 32), ["int", "int", "sel"])
for lut in (0x96, 0xE8, 0x01, 0xCA, 0x6A, 0xFE, 0x80, 0x3C, 0x00, 0xFF, 0x5B):
    add(f"lop3.b32#{lut}", f"lop3.b32 %0, %1, %2, %3, {lut};", 32, (32, 32, 32))
for at in ("u32", "s32"):
    for bt in ("u32", "s32"):
        add(f"dp4a.{at}.{bt}", f"dp4a.{at}.{bt} %0, %1, %2, %3;", 32, (32, 32, 32), ["sel", "sel", "int"])
        for m in ("lo", "hi"):
            add(f"dp2a.{m}.{at}.{bt}", f"dp2a.{m}.{at}.{bt} %0, %1, %2, %3;", 32, (32, 32, 32), ["sel", "sel", "int"])
add("fns.b32", "fns.b32 %0, %1, %2, %3;", 32, (32, 32, 32), ["sel", "amt", "int"])


# compares (predicate outputs packed as p | q<<1)
def setp_asm(cmp, t, boolop=None, neg=False):
    dst = "p" if t in ("f16", "bf16") else "p|q"
    if boolop:
        body = f"setp.{cmp}.{boolop}.{t} {dst}, %1, %2, {'!' if neg else ''}c;"
    else:
        body = f"setp.{cmp}.{t} {dst}, %1, %2;"
    if dst == "p":
        body += " setp.eq.u32 q, 0, 1;"
    return ("{.reg .pred p, q, c; .reg .u32 t1, t2; setp.ne.u32 c, %3, 0; " + body +
            " selp.u32 t1, 1, 0, p; selp.u32 t2, 2, 0, q; or.b32 %0, t1, t2;}")


for t, w in (("f32", "f"), ("f64", "d")):
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
        add(f"setp.{cmp}.{t}", setp_asm(cmp, t), 32, (w, w, 32), [w, w, "int"])
    # f32 adds .ftz. For f64 (no .ftz) the recorded run listed setp.lt.f64 a second time here:
    # its inputs were drawn twice and the later draw is the one measured and kept. The entry
    # stays so that every later form draws the same inputs as recorded; FORMS keeps the later one.
    add(f"setp.lt.ftz.{t}" if t == "f32" else f"setp.lt.{t}", setp_asm("lt.ftz" if t == "f32" else "lt", t),
        32, (w, w, 32), [w, w, "int"])
for t, w in (("s32", 32), ("u32", 32), ("s64", 64), ("b16", 16), ("s16", 16)):
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"):
        if t.startswith("b") and cmp not in ("eq", "ne"):
            continue
        if t.startswith("s") and cmp in ("lo", "ls", "hi", "hs"):
            continue
        add(f"setp.{cmp}.{t}", setp_asm(cmp, t), 32, (w, w, 32))
for cmp in ("lt", "equ", "ne", "nan"):
    add(f"setp.{cmp}.f16", setp_asm(cmp, "f16"), 32, (16, 16, 32), ["h", "h", "int"])
    add(f"setp.{cmp}.ftz.f16", setp_asm(cmp + ".ftz", "f16"), 32, (16, 16, 32), ["h", "h", "int"])
    add(f"setp.{cmp}.bf16", setp_asm(cmp, "bf16"), 32, (16, 16, 32), ["h", "h", "int"])
    add(f"setp.{cmp}.f16x2", setp_asm(cmp, "f16x2"), 32, (32, 32, 32), ["h2", "h2", "int"])
    add(f"setp.{cmp}.bf16x2", setp_asm(cmp, "bf16x2"), 32, (32, 32, 32), ["h2", "h2", "int"])
    add(f"setp.{cmp}.or.f16x2", setp_asm(cmp, "f16x2", "or"), 32, (32, 32, 32), ["h2", "h2", "int"])
add("setp1.lt.f16x2", "{.reg .pred p; setp.lt.f16x2 p, %1, %2; selp.u32 %0, 1, 0, p;}", 32, (32, 32), ["h2", "h2"])
add("add.u16x2", "add.u16x2 %0, %1, %2;", 32, (32, 32))
add("add.s16x2", "add.s16x2 %0, %1, %2;", 32, (32, 32))
for bo in ("and", "or", "xor"):
    add(f"setp.lt.{bo}.s32", setp_asm("lt", "s32", bo), 32, (32, 32, 32))
    add(f"setp.lt.{bo}.s32!", setp_asm("lt", "s32", bo, neg=True), 32, (32, 32, 32))
add("slct.b32.s32", "slct.b32.s32 %0, %1, %2, %3;", 32, (32, 32, 32))
add("slct.b32.f32", "slct.b32.f32 %0, %1, %2, %3;", 32, (32, 32, "f"), ["int", "int", "f"])
add("slct.ftz.b32.f32", "slct.ftz.b32.f32 %0, %1, %2, %3;", 32, (32, 32, "f"), ["int", "int", "f"])
add("set.lt.u32.s32", "set.lt.u32.s32 %0, %1, %2;", 32, (32, 32))
add("set.ltu.f32.f32", "set.ltu.f32.f32 %0, %1, %2;", "f", ("f", "f"), ["f", "f"])

# carry chains: name "carry|<mnemonic>|<part>", part d (result) or cf (carry-out read by addc 0,0).
CARRY_OPS = ["add.cc.u32", "addc.u32", "addc.cc.u32", "sub.cc.u32", "subc.cc.u32", "subc.u32", "mad.lo.cc.u32",
             "madc.hi.u32", "madc.hi.cc.u32", "mad.hi.cc.s32", "madc.lo.cc.s32", "add.cc.u64", "addc.cc.u64",
             "subc.cc.s64", "sub.cc.u64", "madc.lo.cc.u64", "mad.hi.cc.u64", "madc.hi.cc.s64"]
for mn in CARRY_OPS:
    w = 64 if mn.endswith("64") else 32
    nsrc = 3 if mn.startswith("mad") else 2
    cin = mn.split(".")[0] in ("addc", "subc", "madc")
    ins = ", ".join(f"%{i + 1}" for i in range(nsrc))
    cinreg = f"%{nsrc + 1}"
    r = "u64" if w == 64 else "u32"
    for part in (("d", "cf") if ".cc." in mn else ("d",)):
        pre = f"add.cc.u32 tc, {cinreg}, 0xFFFFFFFF; " if cin else ""
        if part == "d":
            body = f"{pre}{mn} %0, {ins};"
        else:
            body = f"{pre}{mn} tr, {ins}; addc.{r} %0, 0, 0;"
        asm = "{.reg .u32 tc; .reg ." + r + " tr; " + body + "}"
        add(f"carry|{mn}|{part}", asm, w, (w,) * nsrc + ((32,) if cin else ()))

# atomics: (mnemonic, width, operand count); input 0 is the initial memory value (a per-thread
# slot), inputs 1.. the operands; the output is the memory value after the atomic.
ATOMS = [("atom.global.inc.u32", 32, 1), ("atom.global.dec.u32", 32, 1), ("atom.global.add.f32", "f", 1),
         ("atom.shared.add.f32", "f", 1), ("atom.global.add.noftz.f16", 16, 1), ("atom.global.add.noftz.bf16", 16, 1),
         ("atom.global.add.noftz.f16x2", 32, 1), ("atom.global.add.noftz.bf16x2", 32, 1),
         ("atom.global.cas.b32", 32, 2), ("atom.global.min.s64", 64, 1), ("atom.global.max.u32", 32, 1),
         ("atom.global.add.f64", "d", 1)]

# name -> (asm, out_w, in_ws, gens) of the non-atomic forms, one per name (the later of a repeat).
FORMS = {name: rest for name, *rest in SPECS}


def atom_inputs(mn: str, w, nops: int, rng: np.random.Generator) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """Inputs of atomic form `mn` and the generator kind each one mostly follows."""
    ww = w if isinstance(w, int) else 32
    g = "int" if isinstance(w, int) else w
    xs = [gen(g, ww, rng, j=j) for j in range(nops + 1)]
    gens = [g] * (nops + 1)
    if "inc" in mn or "dec" in mn:
        xs[1] = gen("amt", 32, rng) % np.uint64(8)   # small bounds so wraparound happens
        xs[0] = xs[0] % np.uint64(12)
        xs[0][:200] = gen("int", 32, rng)[:200]
    if "cas" in mn:
        xs[1][::2] = xs[0][::2]                      # half the compares succeed
    if "f16" in mn or "bf16" in mn:
        xs = [rng.integers(0, 1 << ww, size=N, dtype=np.uint64) for _ in xs]
        gens = ["sel"] * (nops + 1)
    return xs, tuple(gens)


def draw_inputs(seed: int = SEED):
    """(name, inputs (k, N) uint64, generator kinds) of every form, in measurement order, all
    from one stream so the inputs are those of the recorded run. A repeated name comes twice."""
    rng = np.random.default_rng(seed)
    for name, asm, ow, iws, gens in SPECS:
        xs = [gen(g, w if isinstance(w, int) else 32, rng, j=j) for j, (g, w) in enumerate(zip(gens, iws))]
        yield name, np.stack(xs), gens
    for mn, w, nops in ATOMS:
        xs, gens = atom_inputs(mn, w, nops, rng)
        yield mn, np.stack(xs), gens


def kept_indices(gens, seed: int = SEED, n: int = N, random_count: int = 192) -> np.ndarray:
    """Which of a form's n inputs the committed data keeps: the leading edge-case block (the
    longest over its inputs' generators, at least 64) and `random_count` of the rest, drawn
    with a fixed seed; sorted."""
    edges = max([64] + [EDGE_COUNT[g] for g in gens])
    rest = np.random.default_rng(seed).choice(np.arange(edges, n), size=random_count, replace=False)
    return np.sort(np.concatenate([np.arange(edges), rest]))
