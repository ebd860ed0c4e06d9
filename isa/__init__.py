"""isa: what a PTX program means, with no notion of time.

- `isa.program`: the parsed form (Program, Kernel, Instruction, operands).
- `isa.parser` / `isa.printer`: PTX text <-> Program.
- `isa.cfg`: basic blocks and immediate post-dominators (reconvergence points).
- `isa.opcodes` + `isa.semantics`: the opcode table and each opcode's meaning over lanes.
- `isa.types`, `isa.memory_map`: PTX types and the generic address windows.

This package never imports simpy or gpusim.
"""

from isa import numba_cache  # noqa: F401,E402  (numba's disk cache stamped by import closure: before any compiled function)
