"""Bit-exact validation of instruction semantics against hardware.

`specs` lists the PTX instruction forms (integer, bit, compare, carry-chain, atomic) and draws
their inputs; `measure` runs them on a real GPU through inline asm and writes
`data/measurements/semantics_<gpu>.npz` with a JSON provenance sidecar (needs CuPy and a GPU);
`compare` runs the recorded inputs through `isa`'s semantics and lists every form whose outputs
differ (no GPU). `tests/validate/test_semantics_h200.py` runs `compare` on the committed H200 data.
"""
