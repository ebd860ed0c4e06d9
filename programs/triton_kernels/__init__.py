"""Triton kernels (`@triton.jit`) with numpy references, launched by gpusim as
`gpusim.launch(case.kernel, case.grid, None, case.args, **case.options)`. Kept out of the
top-level program library: importing them needs the optional `triton` extra."""
