"""Errors a user can act on, raised while reading or giving meaning to a program.

Each names what the user wrote: the kernel, the PTX line and the Python source line.
"""
from __future__ import annotations


class IsaError(Exception):
    """Base of every error the `isa` layer raises. Pickles with its message and fields, whatever
    its constructor takes (errors cross process pools)."""

    def __reduce__(self):
        return rebuild, (type(self), self.args, dict(self.__dict__))


def rebuild(cls, args: tuple, state: dict) -> BaseException:
    """An exception of class `cls` with `args` and attributes `state`, without calling its
    constructor (what `__reduce__` of IsaError and gpusim.errors.GpusimError returns)."""
    e = cls.__new__(cls)
    e.args = args
    e.__dict__.update(state)
    return e


class PtxSyntaxError(IsaError):
    """The PTX text could not be parsed."""

    def __init__(self, message: str, ptx_line: int, text: str = ""):
        self.ptx_line = ptx_line
        self.text = text
        where = f"PTX line {ptx_line}"
        super().__init__(f"{message} at {where}: {text.strip()!r}" if text else f"{message} at {where}")


class UnsupportedInstruction(IsaError):
    """An opcode (or an opcode/type/modifier combination) outside the opcode table."""

    def __init__(self, mnemonic: str, *, ptx_line: int = 0, source: str | None = None,
                 kernel: str | None = None, reason: str = "not in the opcode table"):
        self.mnemonic = mnemonic
        self.ptx_line = ptx_line
        self.source = source
        self.kernel = kernel
        parts = [f"unsupported PTX instruction '{mnemonic}' ({reason})"]
        if kernel:
            parts.append(f"in kernel {kernel}")
        parts.append(f"at PTX line {ptx_line}")
        if source:
            parts.append(f"from {source}")
        super().__init__(", ".join(parts))


class UnsupportedCall(IsaError):
    """A `call` that `isa.inline` cannot turn into straight-line code: recursion, a call
    through a register, or a callee with no definition. The message names the callee
    and the PTX line of the call; the fields keep them for tools."""

    def __init__(self, message: str, *, callee: str = "", ptx_line: int = 0,
                 kernel: str | None = None, source: str | None = None):
        self.callee = callee
        self.ptx_line = ptx_line
        self.kernel = kernel
        self.source = source
        super().__init__(message)
