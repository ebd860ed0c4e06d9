"""Whether the blocks of a launch may communicate, read from its PTX.

Two ways of running a launch depend on blocks not depending on each other:
- several worker processes (`parallel`), each running some batches of blocks: blocks
  of different workers see each other's writes only through the shared global heap,
  in no defined order;
- prediction-only launches (`gpusim.launch(..., outputs=False)`), which execute only
  the blocks the sampled timing model times: a timed block whose addresses or branches
  depended on what other blocks wrote would follow another path than in a full run.

Blocks communicate in CUDA only through global memory with atomics, fences or strong
(volatile, relaxed, acquire, release) accesses, the grid barrier, or device `malloc`
(one allocator): plain accesses between blocks have no defined order, so a kernel whose
result depends on them is racy. `blocks_communicate` finds any of these. Sampling is
stricter about atomics only where their value is used: a `red`, or an `atom` whose
returned value no instruction reads (`fastpath.liveness`), changes memory but not the
path or the addresses of the block issuing it, so `sampling_refusal` accepts it.
"""
from __future__ import annotations

from gpusim.functional.fastpath.liveness import kernel_liveness

_STRONG = ("volatile", "relaxed", "acquire", "release", "acq_rel", "sc", "mmio")


def _global(ins) -> bool:
    return ins.space in (None, "global")


def blocks_communicate(prepared, *, atomic_values_only: bool = False) -> str | None:
    """Why blocks of this launch may communicate, or None. With `atomic_values_only`,
    global atomics count only where the value they return is read."""
    if prepared.cooperative:
        return "the kernel synchronises the grid (this_grid().sync())"
    if prepared.memory.device_heap is not None:
        return "the kernel calls device malloc/free: one allocator serves every block"
    instrs = prepared.decoded.kernel.instructions
    live = None
    for i, ins in enumerate(instrs):
        where = f"{ins.mnemonic} (PTX line {ins.ptx_line})"
        if ins.opcode in ("atom", "red") and _global(ins):
            if atomic_values_only:
                if ins.opcode == "red":
                    continue
                if live is None:
                    live = _liveness(prepared)
                dst = ins.operands[0]
                if getattr(dst, "name", None) not in live.live_after(i):
                    continue
                return (f"{where} returns a value of global memory that other blocks update, and the kernel "
                        "uses it")
            return (f"{where} updates global memory atomically: blocks may communicate through it, and its "
                    "order and returned values follow the block order")
        if ins.opcode in ("membar", "fence") and not any(m.startswith("cta") for m in ins.modifiers) \
                and not _proxy_only(ins) and "mbarrier_init" not in ins.modifiers:
            return f"{where} orders memory between blocks"
        if ins.opcode in ("ld", "st", "ldu") and _global(ins) and any(m in _STRONG for m in ins.modifiers):
            return f"{where} is a volatile or ordered global access (a flag between blocks)"
    return None


# `fence.mbarrier_init.release.cluster` (TMA kernels, after mbarrier.init) orders only the prior
# mbarrier.init operations, objects in the CTA's shared memory, for the threads of its cluster
# (PTX ISA, "membar/fence"): no global memory between blocks, so it is no communication.


def _proxy_only(ins) -> bool:
    """A proxy fence without a gpu or system scope (`fence.proxy.async.shared::cta`, what
    TMA / wgmma kernels issue between their generic writes of shared memory and the async
    proxy's reads): it orders one thread's accesses through two proxies, not threads of
    different blocks (PTX ISA, "membar/fence": proxy fences)."""
    return ins.opcode == "fence" and "proxy" in ins.modifiers and not {"gpu", "sys"} & set(ins.modifiers)


def sampling_refusal(prepared) -> str | None:
    """Why a prediction-only launch cannot execute only the timed blocks, or None."""
    return blocks_communicate(prepared, atomic_values_only=True)


def _liveness(prepared):
    return kernel_liveness(prepared.decoded.kernel)
