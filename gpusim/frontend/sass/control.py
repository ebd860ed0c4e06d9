"""The scheduling control information ptxas writes into every SASS instruction (Volta and
newer: sm_70 ... sm_90, 128-bit instructions), read from the cubin's code section.

Each 16-byte instruction carries, in its top 23 bits (bits 105..127; bits 41..63 of its
second little-endian 64-bit word), from low to high:
- stall count (4 bits): cycles the warp waits after issuing this instruction before it may
  issue its next one. Fixed-latency results (ALU, FMA, HMMA, ...) are not checked by any
  hardware interlock: ptxas spaces a consumer from its producer with these counts;
- yield (1 bit): the raw bit; 0 is the hint that the scheduler may switch away from this
  warp after it (shown as 'Y'), 1 that it keeps the warp (shown as '-');
- write dependency barrier (3 bits): the scoreboard (0..5) a variable-latency result
  (memory, shared memory, MUFU, S2R, ...) releases when written; 7: none;
- read dependency barrier (3 bits): the scoreboard released once its source registers
  have been read (a store's data may be overwritten then); 7: none;
- wait mask (6 bits): the scoreboards this instruction waits on before it issues;
- reuse (4 bits): operand-reuse-cache flags, one per source operand slot.

`control_bits(cubin, entry)` reads the entry's `.text.<entry>` section from the ELF and
decodes one `Control` per instruction (its byte offset / 16). `Control.text` prints it as
CuAssembler does: `[B--2---:R-:W1:Y:S04]` (wait mask from barrier 0 up, the read and write
barrier, yield, stall).

Sources: Jia, Maggioni, Staiger, Scarpazza, "Dissecting the NVIDIA Volta GPU Architecture via
Microbenchmarking" (2018), section 2.1 "Control information"; CuAssembler's notes on Ampere
control codes; ELF-64 object file format (section headers). Checked against ptxas 13 cubins:
dependent fixed-latency instructions are spaced by stall counts >= their latency (tests).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from gpusim.frontend.sass.tools import SassToolError

INSTR_BYTES = 16
NO_BARRIER = 7


@dataclass(frozen=True, slots=True)
class Control:
    """One instruction's control information."""
    stall_cycles: int                # 0..15: cycles before the warp's next issue
    yield_bit: int                   # raw bit: 0 = may yield ('Y')
    write_barrier: int | None        # scoreboard its result releases, None: none
    read_barrier: int | None         # scoreboard released when its sources are read, None: none
    wait_mask: int                   # bit b: waits for scoreboard b
    reuse: int                       # operand reuse flags

    @property
    def waits_on(self) -> tuple[int, ...]:
        return tuple(b for b in range(6) if self.wait_mask >> b & 1)

    @property
    def text(self) -> str:
        """CuAssembler's notation, e.g. '[B0-----:R-:W1:Y:S04]'."""
        mask = "".join(str(b) if self.wait_mask >> b & 1 else "-" for b in range(6))
        r = "-" if self.read_barrier is None else str(self.read_barrier)
        w = "-" if self.write_barrier is None else str(self.write_barrier)
        return f"[B{mask}:R{r}:W{w}:{'Y' if self.yield_bit == 0 else '-'}:S{self.stall_cycles:02d}]"


def decode(word_hi: int) -> Control:
    """The control information in an instruction's second (high) 64-bit word."""
    c = word_hi >> 41
    wb, rb = (c >> 5) & 7, (c >> 8) & 7
    return Control(stall_cycles=c & 15, yield_bit=(c >> 4) & 1,
                   write_barrier=None if wb == NO_BARRIER else wb, read_barrier=None if rb == NO_BARRIER else rb,
                   wait_mask=(c >> 11) & 63, reuse=(c >> 17) & 15)


def code_section(cubin: bytes, entry: str) -> bytes:
    """The bytes of section `.text.<entry>` of an ELF-64 little-endian cubin."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise SassToolError(f"not a 64-bit little-endian ELF cubin (entry {entry!r})")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + k * shentsize) for k in range(shnum)]
    names_off = headers[shstrndx][4]
    want = f".text.{entry}".encode()
    for name, _type, _flags, _addr, off, size, *_ in headers:
        start = names_off + name
        if cubin[start:cubin.index(b"\0", start)] == want:
            return cubin[off:off + size]
    raise SassToolError(f"cubin has no section .text.{entry}")


def control_bits(cubin: bytes, entry: str) -> tuple[Control, ...]:
    """One `Control` per 16-byte instruction of `entry`'s code (index = byte offset / 16)."""
    code = code_section(cubin, entry)
    if len(code) % INSTR_BYTES:
        raise SassToolError(f".text.{entry} is {len(code)} bytes, not whole 16-byte instructions (sm_70 or newer)")
    return tuple(decode(hi) for _lo, hi in struct.iter_unpack("<QQ", code))
