"""Newer architectures are honest (issue 29.5): a SASS opcode the table lacks refuses the
kernel, or with unknown_sass='warn' is timed as generic, warned about and counted; a compute
capability newer than the tables is refused."""
import dataclasses

import numpy as np
import pytest
from numba import cuda

import gpusim
from gpusim import specs
from gpusim.errors import ConfigError, UnsupportedKernel
from gpusim.frontend.sass import opcodes
from gpusim.timing.engine import TimingOptions


def axpy(out, x, a):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + out[i]


def _launch(options=None):
    out, x = np.ones(256, np.float32), np.arange(256, dtype=np.float32)
    return gpusim.launch(axpy, 2, 128, (out, x, np.float32(2.0)), gpu="h100", timing=True,
                         timing_options=options or TimingOptions(mode="full"))


@pytest.fixture
def isetp_unknown(monkeypatch):
    """The table as if it had no entry for ISETP (which every bounds check compiles to)."""
    monkeypatch.setattr(opcodes, "ALU", opcodes.ALU - {"ISETP"})


def test_an_opcode_without_a_table_entry_refuses_the_kernel_naming_it_and_its_line(isetp_unknown):
    with pytest.raises(UnsupportedKernel, match=r"kernel axpy: SASS opcode ISETP \(line \d+ of test_unknown_sass.py"):
        _launch()


def test_with_unknown_sass_warn_it_is_timed_warned_about_and_counted(isetp_unknown):
    with pytest.warns(RuntimeWarning, match="SASS opcode ISETP"):
        r = _launch(TimingOptions(mode="full", unknown_sass="warn"))
    executed = sum(int(n) for x, n in zip(r.sass.instructions, r.sass.inst) if x.base == "ISETP")
    assert executed > 0
    assert r.metrics["gpusim__sass_estimated_inst.sum"] == executed


def test_known_kernels_carry_no_estimated_count():
    assert "gpusim__sass_estimated_inst.sum" not in _launch().metrics


def test_unknown_sass_option_is_checked():
    with pytest.raises(ConfigError, match="unknown_sass must be 'error' or 'warn'"):
        TimingOptions(unknown_sass="ignore")


def test_opcodes_the_programs_emit_on_sm_90_are_in_the_table():
    # seen in this project's compiled kernels (numba's reductions, its test kernels)
    for text in ("ENDCOLLECTIVE", "LEPC R2", "QSPC.E.S P0, RZ, [R2]"):
        base, _, ops = text.partition(" ")
        x = gpusim.frontend.sass.SassInstr(0, base if "." not in text else text.split()[0], text, None, operands=ops)
        assert opcodes.classify(x, (9, 0)).known, text


@pytest.mark.parametrize("cc", [(10, 0), (12, 0), (9, 1)])
def test_a_compute_capability_newer_than_the_tables_is_refused(cc):
    with pytest.raises(ConfigError, match=r"newer than gpusim's SASS tables"):
        dataclasses.replace(specs.get("h100"), compute_capability=cc)


def test_a_spec_file_naming_compute_capability_10_is_refused(tmp_path):
    f = tmp_path / "b200.toml"
    f.write_text('base = "h100"\ncompute_capability = "10.0"\n')
    with pytest.raises(ConfigError, match=r"compute_capability 10\.0 is newer than gpusim's SASS tables"):
        specs.resolve(str(f))
