"""The tensor validation set (issue 29.4): which programs, at which sizes, `validate measure
--suite tensor` runs on the GPU and `validate compare` predicts.

An `Entry` names a program by its module path (a module defining `PROGRAM`, a
`programs.base.ProgramSpec`), the parameters that choose its variant (tile, input type,
warps), and its sizes, each a label and the size parameters added to them. A record of the
data file is "<entry>/<size label>" with the entry's name under the key "tensor"; its case is
`PROGRAM.case({**variant, **size})` (seed 0), the program's own 'default' parameters filling
the rest. The set is what exists when it runs: an entry whose module does not import (a
program not written yet, Triton not installed) is left out with a note (`available`), so the
same command works as the programs arrive.

Sizes: GEMMs C = A B of 512^3 to 8192^3; attention forward passes of 1K to 16K keys (64-wide
heads, the number of heads falling as the sequence grows so that the float64 reference the
program checks against stays within a few GB). `ORDERINGS` are the issue's orderings at
4096^3: wgmma GEMM faster than mma.sync, than wmma, than the CUDA-core SGEMM;
double-buffered faster than single-buffered; FP8 faster than BF16.
"""
from __future__ import annotations

import re
import importlib
from dataclasses import dataclass, field

from programs.base import ProgramSpec

MATMUL_SIZES = {f"n{n}": {"m": n, "n": n, "k": n} for n in (512, 1024, 2048, 4096, 8192)}
ATTENTION_SIZES = {"s1k": {"heads": 16, "n_ctx": 1024}, "s4k": {"heads": 4, "n_ctx": 4096},
                   "s16k": {"heads": 1, "n_ctx": 16384}}


@dataclass(frozen=True)
class Entry:
    name: str                                    # the records' "tensor" key
    module: str                                  # a module defining PROGRAM
    variant: dict = field(default_factory=dict)  # parameters of every size (tile, dtype, warps...)
    sizes: dict = field(default_factory=dict)    # label -> size parameters
    family: str = "matmul"


_TRITON_MM = {"block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3}
_TRITON_ATTN = {"head_dim": 64, "block_m": 128, "block_n": 64, "num_warps": 8, "num_stages": 2}

ENTRIES: tuple[Entry, ...] = (
    Entry("cuda_sgemm", "programs.cuda_kernels.sgemm", {"tile": 128}, MATMUL_SIZES),
    Entry("cuda_wmma_f16", "programs.cuda_kernels.wmma_gemm", {"tile": 64, "dtype": "f16"}, MATMUL_SIZES),
    Entry("cuda_mma_double", "programs.cuda_kernels.mma_gemm", {"tile": 64}, MATMUL_SIZES),
    Entry("cuda_mma_single", "programs.cuda_kernels.mma_gemm_single", {"tile": 64}, MATMUL_SIZES),
    Entry("cuda_tma_wgmma", "programs.hopper_kernels.tma_wgmma_gemm", {}, MATMUL_SIZES),
    Entry("triton_matmul_f16", "programs.triton_kernels.matmul", {"dtype": "f16", **_TRITON_MM}, MATMUL_SIZES),
    Entry("triton_matmul_bf16", "programs.triton_kernels.matmul", {"dtype": "bf16", **_TRITON_MM}, MATMUL_SIZES),
    Entry("triton_matmul_fp8", "programs.triton_kernels.matmul", {"dtype": "fp8_e4m3", **_TRITON_MM,
                                                                  "block_k": 128}, MATMUL_SIZES),
    Entry("triton_attention", "programs.triton_kernels.flash_attention", _TRITON_ATTN, ATTENTION_SIZES,
          "attention"),
    Entry("triton_attention_causal", "programs.triton_kernels.flash_attention", {**_TRITON_ATTN, "causal": True},
          ATTENTION_SIZES, "attention"),
)
BY_NAME = {e.name: e for e in ENTRIES}


def _ordering(slower: str, faster: str, why: str):
    from validate.heldout2 import Ordering       # lazy: heldout2 defines Numba kernels at import
    return Ordering(slower, faster, why)


def orderings() -> tuple:
    """The issue's orderings as `validate.heldout2.Ordering`s of "<entry>/<size>" records."""
    at = "n4096"
    return (
        _ordering(f"cuda_mma_double/{at}", f"cuda_tma_wgmma/{at}", "wgmma (TMA-fed) beats warp-level mma.sync"),
        _ordering(f"cuda_wmma_f16/{at}", f"cuda_mma_double/{at}", "mma.sync with ldmatrix and cp.async beats wmma"),
        _ordering(f"cuda_sgemm/{at}", f"cuda_wmma_f16/{at}", "the tensor cores beat the best CUDA-core SGEMM"),
        *[_ordering(f"cuda_mma_single/{s}", f"cuda_mma_double/{s}",
                    "double buffering overlaps the next tile's copy with this tile's math") for s in ("n2048", at)],
        _ordering(f"triton_matmul_bf16/{at}", f"triton_matmul_fp8/{at}", "FP8 wgmma runs at twice BF16's rate"),
        _ordering("triton_matmul_bf16/n8192", "triton_matmul_fp8/n8192", "FP8 wgmma runs at twice BF16's rate"),
    )


def load(entry: Entry) -> tuple[ProgramSpec | None, str]:
    """(its PROGRAM, "") or (None, why it is left out)."""
    try:
        module = importlib.import_module(entry.module)
    except Exception as e:                       # noqa: BLE001 - absent programs are a note, not a failure
        return None, f"{entry.module} does not import ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    spec = getattr(module, "PROGRAM", None)
    if not isinstance(spec, ProgramSpec):
        return None, f"{entry.module} defines no PROGRAM (a programs.base.ProgramSpec)"
    return spec, ""


def available() -> tuple[list[Entry], dict[str, str]]:
    """The entries whose programs import, and {entry: why} for the others."""
    ok, notes = [], {}
    for e in ENTRIES:
        spec, why = load(e)
        if spec is None:
            notes[e.name] = why
        else:
            ok.append(e)
    return ok, notes


def spec(name: str) -> ProgramSpec:
    """Entry `name` as a ProgramSpec whose sizes are the entry's labels (each the entry's variant
    with the size's parameters), built by the program's own `build`."""
    entry = BY_NAME.get(name)
    if entry is None:
        raise KeyError(f"no tensor-set entry {name!r}; entries: {', '.join(BY_NAME)}")
    program, why = load(entry)
    if program is None:
        raise LookupError(f"tensor-set entry {name}: {why}")
    base = program.sizes.get("default", {})
    sizes = {label: {**base, **entry.variant, **size} for label, size in entry.sizes.items()}
    return ProgramSpec(name, program.description, program.build, {"default": sizes[next(iter(sizes))], **sizes},
                       program.tags)


def cases(only=None, skip=None) -> list[tuple[str, str]]:
    """(entry, size label) of the available entries, in order, filtered by regexes on
    "<entry>/<size>"."""
    ok, _ = available()
    keep = lambda n: (only is None or re.search(only, n)) and not (skip and re.search(skip, n))  # noqa: E731
    return [(e.name, s) for e in ok for s in e.sizes if keep(f"{e.name}/{s}")]
