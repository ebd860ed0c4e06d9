"""Errors a gpusim user can act on: each names the kernel, and where it applies the
Python source line, the block and thread, and the offending value."""
from __future__ import annotations


class GpusimError(Exception):
    """Base of every error gpusim raises for bad input."""


class LaunchError(GpusimError):
    """A launch CUDA itself would refuse (bad grid/block shape, too much shared memory)."""


class ConfigError(GpusimError):
    """An invalid GPU spec or preset name."""


class KernelError(GpusimError):
    """The kernel did something undefined while running (bad address, deadlock)."""

    def __init__(self, what: str, *, kernel: str, source: str | None = None,
                 block: tuple[int, int, int] | None = None, thread: tuple[int, int, int] | None = None,
                 detail: str = ""):
        self.what, self.kernel, self.source = what, kernel, source
        self.block, self.thread, self.detail = block, thread, detail
        parts = [f"{what} in kernel {kernel}"]
        if source:
            parts.append(f"at {source}")
        if block is not None:
            parts.append(f"block {block}")
        if thread is not None:
            parts.append(f"thread {thread}")
        msg = ", ".join(parts)
        super().__init__(f"{msg}: {detail}" if detail else msg)


class MemoryAccessError(KernelError):
    """An access outside every allocation, or misaligned (compute-sanitizer memcheck's class)."""


class BarrierError(KernelError):
    """A barrier some live threads of a block can never reach (divergent syncthreads)."""


class UnsupportedKernel(GpusimError):
    """A kernel or argument the simulator cannot run (names what and why)."""
