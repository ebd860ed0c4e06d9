"""`gpusim check`: prints compute-sanitizer style reports, exit status 1 with findings, 0 clean."""
import textwrap

from gpusim.cli import main

RACY = textwrap.dedent('''
    import numpy as np
    from numba import cuda, float32
    from programs.base import Case, ProgramSpec

    @cuda.jit
    def racy(a, out):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        s[t] = a[t]
        out[t] = s[63 - t]

    def build(rng, n=64):
        a = rng.random(n).astype(np.float32)
        return Case("racy", racy, (1,), (64,), (a, np.zeros(n, np.float32)), {1: a[::-1].copy()})

    PROGRAM = ProgramSpec("racy", "a shared-memory race", build, {"default": {"n": 64}})
''')


def test_check_of_a_racy_file_prints_both_lines_and_exits_1(tmp_path, capsys):
    f = tmp_path / "racy.py"
    f.write_text(RACY)
    assert main(["check", str(f), "--tool", "racecheck"]) == 1
    out = capsys.readouterr().out
    assert "RAW hazard on shared memory" in out and f"{f}:10 (s[t] = a[t])" in out and f"{f}:11" in out
    assert "ERROR SUMMARY: 1 error" in out


def test_check_of_a_clean_program_exits_0(capsys):
    assert main(["check", "vector_add", "--set", "n=1000"]) == 0
    assert "ERROR SUMMARY: 0 errors" in capsys.readouterr().out


def test_check_with_an_unknown_tool_exits_2(capsys):
    assert main(["check", "vector_add", "--tool", "leakcheck"]) == 2
    assert "unknown sanitizer tool 'leakcheck'" in capsys.readouterr().err
