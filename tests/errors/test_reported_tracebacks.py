"""Issue 25's internal tracebacks and silent acceptances, each now one `error: ...` line with its
exit status (or, through the Python API, a GpusimError naming the argument)."""
from __future__ import annotations

import numpy as np
import pytest
from numba import cuda as numba_cuda

import gpusim
from gpusim import errors
from gpusim.cli import main

from bad_inputs import copy, one_line


def test_a_gpu_spec_file_that_is_not_utf8(run_cli, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_bytes(b'base = "h100"\n[hbm]\nbandwidth_GBps = 3000 # \xff\xfe\n')
    code, _, err = run_cli("run", "vector_add", "--gpu", str(f), "--functional")
    assert code == 4 and one_line(err) == (f"error: {f}: not a UTF-8 text file (byte 44: b'\\xff'); "
                                           "TOML files are UTF-8")


def test_a_sweep_file_that_is_not_utf8(run_cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_bytes(b'programs = ["vector_add\xc3"]\n')
    code, _, err = run_cli("sweep", "--file", str(f))
    assert code == 4 and "not a UTF-8 text file" in one_line(err)


def test_a_sweep_file_varying_an_alias_with_a_comma_list(run_cli, tmp_path):
    """`"sm.count" = "66,132"`: the alias is the field sm_count (its table column too)."""
    f = tmp_path / "s.toml"
    f.write_text('programs = ["vector_add"]\nsizes = [{n = 1024}]\n[vary]\n"sm.count" = "66,132"\n')
    out = tmp_path / "s.csv"
    code, stdout, err = run_cli("sweep", "--file", str(f), "--workers", "1", "--no-progress", "--out", str(out))
    assert code == 0, err
    import pandas as pd
    assert pd.read_csv(out)["sm_count"].tolist() == [66, 132] and "sm_count" in stdout


@pytest.mark.parametrize("text, what", [
    ("sizes = [5]", "sizes is a list of size names or tables of parameters"),
    ("sizes = 5", "sizes is a list of size names"),
    ("programs = [1]", "programs is a list of program names"),
    ("seed = -1", "seed is a whole number >= 0"),
    ("gpu = 7", "gpu is a preset name or a .toml file"),
    ("vary = 3", "[vary] is a table of spec fields"),
])
def test_a_sweep_file_with_a_setting_of_the_wrong_type(run_cli, tmp_path, text, what):
    f = tmp_path / "s.toml"
    f.write_text(f'{text}\n' if text.startswith("programs") else f'programs = ["vector_add"]\n{text}\n')
    code, _, err = run_cli("sweep", "--file", str(f), "--workers", "1")
    assert code == 4 and what in one_line(err)


def test_a_size_parameter_of_the_wrong_type(run_cli):
    code, _, err = run_cli("sweep", "vector_add", "--size", "n=abc", "--workers", "1")
    assert code == 4 and "vector_add: parameter n takes int values (default" in one_line(err)


@pytest.mark.parametrize("check", [3, 2.5, object()])
def test_launch_check_of_the_wrong_type(check):
    a = np.arange(32, dtype=np.float32)
    with pytest.raises(errors.ConfigError, match="check= takes a tool name, 'all', True or a list"):
        gpusim.launch(copy, 1, 32, (a, np.zeros_like(a)), check=check)


def test_a_big_endian_array_through_launch():
    from numba.cuda.core.errors import NumbaValueError
    a = np.arange(32, dtype=">f4")
    with pytest.raises(errors.UnsupportedKernel, match=r"argument 0 \(a\): an array of non-native byte order "
                                                        r"\(dtype >f4, big-endian\)") as e:
        gpusim.launch(copy, 1, 32, (a, np.zeros(32, np.float32)))
    assert isinstance(e.value, NumbaValueError)                    # what Numba raises for it too


def test_a_debug_kernel_that_raises_through_gpusim_run(run_cli, tmp_path):
    f = tmp_path / "raises.py"
    f.write_text('''
import numpy as np
from numba import cuda
from programs.base import ProgramSpec, Case

@cuda.jit(debug=True, opt=False)
def boom(a):
    i = cuda.grid(1)
    if i == 3:
        raise ValueError("bad value")
    a[i] = i

def build(rng, n=32):
    return Case("boom", boom, (1,), (n,), (np.zeros(n, np.float32),), {0: np.arange(n, dtype=np.float32)})

PROGRAM = ProgramSpec("boom", "raises", build, {"default": {"n": 32}, "large": {"n": 64}})
''')
    code, _, err = run_cli("run", str(f), "--functional")
    assert code == 7
    assert one_line(err) == (f"error: kernel boom raised ValueError: In function 'boom', file {f}, line 10, "
                             "tid=[0, 0, 3] ctaid=[0, 0, 0]: bad value")


def test_a_trace_to_a_full_device(run_cli):
    code, _, err = run_cli("run", "vector_add", "--size", "default", "--trace", "/dev/full")
    assert code == 11 and one_line(err) == "error: --trace /dev/full: cannot write /dev/full: No space left on device"


@pytest.fixture
def no_launch(monkeypatch):
    def launch(*a, **k):
        raise AssertionError("launched before the output paths were checked")
    monkeypatch.setattr(gpusim.api, "launch", launch)


def test_html_naming_a_directory_fails_before_any_work(run_cli, tmp_path, no_launch):
    code, _, err = run_cli("run", "vector_add", "--html", str(tmp_path))
    assert code == 11 and one_line(err) == f"error: --html {tmp_path}: is a directory; --html takes a file name"


def test_plot_naming_a_file_fails_before_any_work(run_cli, tmp_path, no_launch):
    f = tmp_path / "figures.png"
    f.write_bytes(b"")
    code, _, err = run_cli("run", "vector_add", "--plot", str(f))
    assert code == 11 and "names a file; --plot takes a folder for the figures" in one_line(err)


def test_a_broadcast_view_larger_than_this_machine(monkeypatch):
    """2^33 elements of one broadcast value: a 32 GiB dense copy, here more than the machine
    (physical memory patched to 1 GiB, so the test never allocates it)."""
    import gpusim.frontend.args as args
    monkeypatch.setattr(args, "physical_memory", lambda: 1 << 30)
    big = np.broadcast_to(np.float32(1), (2 ** 33,))
    with pytest.raises(errors.LaunchError, match=r"argument 0 \(a\): its 8,589,934,592 float32 elements "
                                                 r"\(32 GiB as a dense copy\) are more than this machine"):
        gpusim.launch(copy, 1, 32, (big, np.zeros(32, np.float32)))


def test_a_broadcast_view_larger_than_any_machine():
    big = np.broadcast_to(np.float64(1), (2 ** 42,))             # 32 TiB as a dense copy
    with pytest.raises(errors.LaunchError, match="32 TiB as a dense copy"):
        gpusim.launch(copy, 1, 32, (big, np.zeros(32, np.float64)))


def test_device_array_larger_than_the_gpu():
    from gpusim import cuda
    with pytest.raises(errors.LaunchError, match=r"\(8 TiB\) is more than the 79.2 GiB of device memory of h100"):
        cuda.device_array(2 ** 40)


def test_a_numba_cuda_launch_after_the_drop_in():
    """Without a GPU the drop-in answers Numba's device queries; a kernel launched through
    numba.cuda itself cannot run: CudaSupportError (as without gpusim) saying how to run it."""
    from numba.cuda.cudadrv.error import CudaSupportError

    from gpusim import cuda
    from gpusim.cuda._hostcompile import _INSTALLED
    if not _INSTALLED:
        pytest.skip("a CUDA driver is present: numba.cuda launches on the GPU")

    @cuda.jit
    def simulated(a):
        a[cuda.grid(1)] = 1

    @numba_cuda.jit
    def real(a):
        a[numba_cuda.grid(1)] = 2
    a = np.zeros(32, np.float32)
    simulated[1, 32](a)
    with pytest.raises(errors.UnsupportedKernel, match="from gpusim import cuda") as e:
        real[1, 32](a)
    assert isinstance(e.value, CudaSupportError) and "\n" not in str(e.value)


@pytest.mark.parametrize("argv, message", [
    (["sweep", "vector_add", "--workers", "0"], "argument --workers: must be at least 1, got 0"),
    (["sweep", "vector_add", "--workers", "-1"], "argument --workers: must be at least 1, got -1"),
    (["sweep", "vector_add", "--vary", "sm.count=66,132", "--vary", "sm_count=8"],
     "error: --vary sm_count=8: sm_count is already varied (--vary sm.count=66,132); give each field's values once"),
    (["run", ""], "error: an empty program name; `gpusim list` shows the programs"),
    (["run", "  "], "error: an empty program name; `gpusim list` shows the programs"),
    (["sweep", ""], "error: gpusim sweep: an empty program name (gpusim list shows them)"),
])
def test_refusals_of_the_command_line(run_cli, argv, message):
    code, _, err = run_cli(*argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_a_file_varying_a_field_the_command_line_varies_too(run_cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('programs = ["vector_add"]\n[vary]\n"hbm.bandwidth_GBps" = [1000, 2000]\n')
    code, _, err = run_cli("sweep", "--file", str(f), "--vary", "hbm.bandwidth=3000")
    assert code == 2 and "hbm.bandwidth_GBps is already varied (hbm.bandwidth_GBps in" in one_line(err)


def test_a_million_value_range_is_refused_with_its_count_before_any_spec(run_cli):
    import time
    t0 = time.perf_counter()
    code, _, err = run_cli("sweep", "vector_add", "--vary", "hbm.bandwidth_GBps=1000:8000:1000000")
    assert code == 4 and one_line(err) == (
        "error: this sweep has 1,000,000 points (1,000,000 values of hbm.bandwidth_GBps), more than 10,000: pass "
        "--yes (gpusim sweep) or max_points=None (gpusim.sweep) to run it anyway")
    assert time.perf_counter() - t0 < 20                         # not the 1,000,000 specs (~1 ms each)


def test_three_thousand_value_fields_are_refused_even_with_yes(run_cli):
    code, _, err = run_cli("sweep", "vector_add", "--yes", "--vary", "hbm.bandwidth_GBps=1000:8000:1000",
                           "--vary", "l2.hit_latency_cycles=100:1099:1000", "--vary", "hbm.latency_ns=100:1099:1000")
    assert code == 4 and "this sweep has 1,000,000,000 points (1,000 values of hbm.bandwidth_GBps x 1,000 values " \
                         "of l2.hit_latency_cycles x 1,000 values of hbm.latency_ns): a sweep holds at most " \
                         "1,000,000" in one_line(err)


def test_yes_lifts_the_ten_thousand_point_limit(monkeypatch):
    import gpusim.sweep as sweep_mod
    seen = {}

    def fake(*a, **k):
        seen.update(k)
        raise errors.ConfigError("stop")
    monkeypatch.setattr(sweep_mod, "sweep", fake)
    main(["sweep", "vector_add", "--yes", "--workers", "1"])
    assert seen["max_points"] is None
    main(["sweep", "vector_add", "--workers", "1"])
    assert seen["max_points"] == 10_000


def test_a_collective_over_a_thousand_gpus_is_refused_at_once_with_an_estimate(run_cli):
    code, _, err = run_cli("collective", "all_reduce", "--gpus", "1000")
    assert code == 2 and one_line(err).startswith("error: simulating all_reduce over 1000 GPUs takes about 4 to 46 "
                                                  "min per size (15 sizes)") and "pass --yes" in err


def test_a_long_collective_says_what_it_is_doing(run_cli, monkeypatch):
    """--yes runs it; a line on stderr every few seconds says which size and for how long (here
    each size's simulation is slowed and the ticker made faster)."""
    import time

    import gpusim.collectives.run as run
    from gpusim.cli import progress
    monkeypatch.setattr(progress.Ticker, "DELAY_S", 0.05)
    real = run.simulate
    monkeypatch.setattr(run, "simulate", lambda op, size, spec, n, *a, **k: (time.sleep(0.5), real(op, size, spec, 2,
                                                                                                 *a, **k))[1])
    code, out, err = run_cli("collective", "all_reduce", "--gpus", "300", "--yes", "--sizes", "64K")
    assert code == 0 and "all_reduce over 300 GPUs: size 1 of 1 (65,536 B), 0:00 elapsed" in err
