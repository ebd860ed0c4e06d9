"""Compiled ALU segments: consecutive register-only instructions of a basic block run as
one machine-code function over the lanes of a step.

ALU instructions read and write only their own lane's registers, so running a run of
them lane by lane (all instructions for lane 0, then lane 1, ...) gives exactly what
the reference gives running them instruction by instruction over all lanes. A
`SegmentOp` (`segment_op`) stands for such a run inside a block's op list: per lane it loads the
registers the run reads, computes every instruction (`forms`; a guarded
instruction keeps the old value where its predicate is false), and stores the
registers it writes. Loads, stores, collectives and barriers stay separate ops
between segments, so the order of memory effects is the reference's; ALU instructions
move up past memory instructions they share no register with (`hoist`), and a warp
shuffle between two runs can join them as a lane loop of its own (`shuffle_step`).

Each segment variant is compiled with llvmlite (LLVM's MCJIT) into its own small
module once its reference ops have done `COMPILE_AFTER` lane-instructions' worth of work
(each op run counts its lanes plus `OP_LANES` for its fixed cost): some milliseconds a
variant, no numba typing. A segment whose compilation fails, or whose
special registers are not what it was compiled for, runs its reference ops.

Machine code is cached on disk as numba's kernels are (`<$GPUSIM_CACHE_DIR or
~/.cache/gpusim>/segments/`, checked entries of `gpusim.frontend.diskcache`;
`GPUSIM_DISK_CACHE=0` turns it off): a variant whose object code is there is loaded
(about a millisecond) the first time it runs, without waiting for `COMPILE_AFTER`, so a
kernel launched again in a new process runs compiled from its first step. The entry's
key is everything the code is made from: the kernel (its parsed PTX, `repr` of
`isa.program.Kernel`), the variable layout, the segment (its ops, by instruction and kind, and
the registers its table holds, in order: a chain's segment (`decode.chains`) may start at the
same instruction as a block's own and run further, and with only its first instruction in the
key one's object code was loaded for the other, whose table it then misread: a segmentation
fault in session 51) and its variant, the source of `isa` and `gpusim.functional` (any change
there is a new key), llvmlite's version and the host CPU and its features.

Registers stay where the reference keeps them (`BatchState.regs`: an array over the
batch, or one value for every lane); a segment reads a uniform register through an
index mask of 0 and makes the registers it writes arrays (as a partial write by the
reference does), which changes no value.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import llvmlite

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir

from gpusim.frontend.diskcache import cache_dir, read_entry, write_entry
from gpusim.functional.fastpath import alu_ir
from gpusim.functional.fastpath.alu_ir import convertible
from gpusim.functional.fastpath.forms import form
from gpusim.functional.fastpath.segment_ir import BOOL, U32, UNIFORM_SPECIALS
from gpusim.functional.fastpath.liveness import kernel_liveness
from gpusim.functional.ops import AluOp
from gpusim.functional.decode import PREDEFINED, imm_value
from isa.program import Imm, Reg, Special, Sym
from isa.types import dtype as ptx_dtype
from isa.semantics.carry import implicit_operands
from isa import optable

if TYPE_CHECKING:                       # the op that runs a segment (it imports this module)
    from gpusim.functional.fastpath.segment_op import SegmentOp

# A segment variant is compiled once its reference ops have run this many lane-instructions
# (about the numpy time its compilation costs, a few ms): short launches never wait for LLVM.
# GPUSIM_COMPILE_AFTER=0 compiles every segment at once (the tests comparing the cores do).
COMPILE_AFTER = int(os.environ.get("GPUSIM_COMPILE_AFTER", 1 << 20))
# What one run of a reference op costs besides its lanes (its Python and numpy calls, about
# 5 us on this project's 2-core VM), in lane-instructions (about 2.5 ns each there): a segment
# of many ops on a small block (a 128-thread Triton program) compiles after some runs, where
# counting its lanes alone put that thousands of runs away.
OP_LANES = 2048
# A variant first compiled for a step of at least this many lanes goes through LLVM's optimising
# pipeline, which vectorises its lane loop (measured: a Triton attention's segments over 2048
# lanes 6.1 -> 2.1 ms a launch) at about 3.5 times the compile time (an 85-instruction segment
# 23 -> 85 ms); smaller steps (most tests' kernels, 128-thread blocks) keep the quick compile.
VECTOR_LANES = 1024
# ... or whose step times its instructions is at least this many lane-instructions: a long segment on
# a small step (the attention default's softmax, 159 instructions over 128 lanes: 43 -> 11 us of machine
# code a run, about 0.9 s more to compile it, once a machine) does as much work a run as a short one over
# a large step
VECTOR_LANE_OPS = 16 * VECTOR_LANES
SEGMENT_FN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_LLVM_LOCK = threading.Lock()
_LLVM_READY = False


def _llvm_target():
    """A target machine for this host's CPU and its features (FMA, AVX: a fused multiply-add is
    one instruction, not a libm call; both round correctly, so results do not depend on it): a
    new one each call, since an MCJIT engine owns (and frees) the one it is created with."""
    global _LLVM_READY
    with _LLVM_LOCK:
        if not _LLVM_READY:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _LLVM_READY = True
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2)


@lru_cache(maxsize=None)
def _emitter():
    """The target machine that compiles segments to object code (owned by no engine)."""
    return _llvm_target()


def _optimised(mod):
    """`mod` through LLVM's O3 pipeline for this host (the builder's IR is unoptimised: loads
    of the table in the loop, no vectorisation): the lane loop unswitched on the mask and, with
    the segment's alias scopes (`segment_ir`), vectorised. Integer and IEEE float operations
    give the same bits in vector form; nothing here allows reassociation or fast-math."""
    tm = _emitter()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


@lru_cache(maxsize=None)
def _code_digest() -> str:
    """What a segment's machine code depends on besides its kernel (module docstring): the
    source of `isa` and `gpusim.functional`, llvmlite's version, the host CPU and features."""
    h = hashlib.sha256(f"{llvmlite.__version__} {llvm.get_host_cpu_name()} "
                       f"{llvm.get_host_cpu_features().flatten()}".encode())
    here = Path(__file__).resolve()
    for root in (here.parents[3] / "isa", here.parents[1]):
        for f in sorted(root.rglob("*.py")):
            h.update(f.relative_to(root.parent).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _disk_cache() -> Path | None:
    """The segments' object-code directory, or None when disk caches are off."""
    return None if os.environ.get("GPUSIM_DISK_CACHE", "1") == "0" else cache_dir().parent / "segments"


class FastAluOp(AluOp):
    """A reference ALU op that a segment can compile: its emitter and where its sources
    come from (("reg", slot, dtype), ("not", slot), ("imm", value), ("special", name, dtype))."""
    __slots__ = ("emit", "sources", "src_dtypes", "dst_dtypes")

    @classmethod
    def build(cls, ref: AluOp, dec, ins, bound):
        emit = form(ins, bound)
        if emit is None:
            return None
        srcs = _sources(dec, ins, bound)
        if srcs is None:
            return None
        op = cls(ref.index, ref.guard, ref.fn, ref.srcs, ref.dsts)
        op.emit, op.sources = emit, srcs
        op.src_dtypes = [ptx_dtype(t) for t in bound.src_types]
        op.dst_dtypes = [ptx_dtype(t) for t in bound.dst_types]
        rd = dec.reg_dtypes
        for (kind, *rest), want in zip(srcs, op.src_dtypes):
            have = rd[rest[0]] if kind in ("reg", "not") else (U32 if kind == "special" and rest[0] not in
                                                               UNIFORM_SPECIALS else want)
            if have not in alu_ir.COMPILED_DTYPES or not convertible(have, want) or (kind == "not" and want != BOOL):
                return None
        for d, have in zip(op.dsts, op.dst_dtypes):
            if d is not None and (rd[d] not in alu_ir.COMPILED_DTYPES or not convertible(have, rd[d])):
                return None
        if op.guard is not None and rd[op.guard[0]] != BOOL:
            return None
        if len(op.dsts) != len(op.dst_dtypes):
            return None
        return op


def _sources(dec, ins, bound):
    """Source descriptors in the order of Decoder.flat_sources (None if one is not compiled)."""
    hidden_dsts, hidden_srcs = implicit_operands(ins)
    if hidden_dsts or hidden_srcs:
        return None
    nd = dec.ndests(dec_spec(ins), len(bound.dst_types), ins)
    out = []
    for o, t in zip(ins.operands[nd:], bound.src_types):
        if isinstance(o, Reg):
            out.append(("reg", dec.slot(o, ins), ptx_dtype(t)))
        elif getattr(o, "negated", False) and hasattr(o, "reg"):
            out.append(("not", dec.slot(o.reg, ins)))
        elif isinstance(o, Imm):
            out.append(("imm", imm_value(o, t)))
        elif isinstance(o, Special):
            out.append(("special", o.name, ptx_dtype(t)))
        elif isinstance(o, Sym):
            if o.name in PREDEFINED and o.name not in dec.symbols:
                out.append(("imm", imm_value(Imm(PREDEFINED[o.name]), t)))
            else:
                out.append(("imm", imm_value(Imm(dec.symbol_address(o.name, ins)), t)))
        else:
            return None
    if len(out) != len(bound.src_types) or len(ins.operands) - nd != len(out):
        return None
    return out


def dec_spec(ins):
    return optable.lookup(ins)


class KernelCode:
    """The machine code of one decoded kernel's segments: each segment variant is compiled
    on first use (`variant`), into its own small module."""

    def __init__(self):
        self.segments: list[SegmentOp] = []
        self.dec = None                      # the Decoder (kernel, CFG, register slots), for liveness
        self.failed = False
        self._ready = False
        self._engines: list = []
        self._lock = threading.Lock()
        self._ident: str | None = None       # the kernel's part of the disk cache's keys

    def _path(self, seg: "SegmentOp", key, vector: bool) -> Path | None:
        """Where the object code of `seg`'s variant `key` (optimised and vectorised, or not) is
        cached, or None (no disk cache)."""
        folder = _disk_cache()
        if folder is None:
            return None
        if self._ident is None:
            dec = self.dec
            self._ident = hashlib.sha256(f"{dec.kernel!r} {sorted(dec.symbols.items())!r}".encode()).hexdigest()
        uniform = sorted(key[0])
        plan = seg.plan
        shape = ([(getattr(op, "index", None), type(op).__name__) for op in seg.ops], plan.loads, plan.stores,
                 plan.specials)
        h = hashlib.sha256(f"{_code_digest()} {self._ident} {plan.name} {shape} {uniform} {key[1]}"
                           f"{' vector' if vector else ''}".encode())
        return folder / f"{h.hexdigest()}.o"

    def _load(self, seg: "SegmentOp", key, name: str, obj: bytes, once):
        """Object code -> (function, registers stored once), kept as `seg`'s variant `key`."""
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _llvm_target())
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        self._engines.append(engine)
        hit = (SEGMENT_FN(engine.get_function_address(name)), frozenset(once))
        seg.variants[key] = hit
        return hit

    def _prepare(self) -> None:
        """Trim each segment's stores to the registers live after it (or read by a later lane
        loop of its own), and mark the segments inside a loop (`SegmentOp.again`)."""
        live = kernel_liveness(self.dec.kernel)
        slots = self.dec.reg_slots
        cfg = live.cfg
        back = [(s, b.index) for b in cfg.blocks for s in b.succs if 0 <= s <= b.index]   # (header, latch)
        for seg in self.segments:
            b = cfg.block_of[seg.index]
            seg.again = any(h <= b <= t for h, t in back)   # in a loop: it may run again with the same registers
            after = live.live_after(max(op.index for op in seg.ops)) | seg.also_live   # (moved ops: `hoist`)
            keep = {slots[r] for r in after if r in slots}
            seg.plan.stores = [r for r in seg.plan.written if r in keep or r in seg.plan.cross]
            seg.table = np.zeros(2 * (len(seg.plan.loads) + len(seg.plan.stores) + len(seg.plan.specials)), np.int64)

    def variant(self, seg: "SegmentOp", key, compile: bool = True, lanes: int = 0):
        """(function, registers stored once) of `seg` for key (uniform loads, whole): from
        the disk cache (either flavour), else (with `compile`) compiled and cached, through
        LLVM's optimising pipeline (`_optimised`) when the step runs at least `VECTOR_LANES`
        lanes or `VECTOR_LANE_OPS` lane-instructions; None when it is not cached and not to be
        compiled, or does not compile (the segment then runs its reference ops)."""
        with self._lock:
            if self.failed or key in seg.failed:
                return None
            if not self._ready:
                try:
                    self._prepare()
                except Exception:          # no liveness: no segment is compiled
                    self.failed = True
                    return None
                self._ready = True
            try:
                hit = seg.variants.get(key)
                if hit is not None:
                    return hit
                name = f"{seg.plan.name}_{'_'.join(map(str, sorted(key[0])))}_{int(key[1])}"
                for vector in (True, False):
                    path = self._path(seg, key, vector)
                    entry = None if path is None else read_entry(path)
                    if entry is not None:      # the registers stored once, then the object code
                        head, _, obj = entry.partition(b"\n")
                        return self._load(seg, key, name, obj, [int(r) for r in head.split()])
                if not compile:
                    return None
                vector = lanes >= VECTOR_LANES or lanes * len(seg.ops) >= VECTOR_LANE_OPS
                path = self._path(seg, key, vector)
                module = ir.Module(name=seg.plan.name)
                once = seg.plan.define(module, name, key[0], key[1])
                mod = llvm.parse_assembly(str(module))
                mod.verify()
                obj = _emitter().emit_object(_optimised(mod) if vector else mod)
                if path is not None:
                    write_entry(path, " ".join(map(str, once)).encode() + b"\n" + obj)
                return self._load(seg, key, name, obj, once)
            except Exception:              # an LLVM failure: this variant runs the reference ops
                seg.failed.add(key)
                return None
