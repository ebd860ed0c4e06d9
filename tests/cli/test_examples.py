"""The README's own-program-file examples (docs/examples/): a ProgramSpec file runs under
`gpusim run FILE`, and a float kernel whose last bits differ from numpy's by FMA contraction
passes its check through a tolerance instead of needing --no-check."""
from __future__ import annotations

from pathlib import Path

from gpusim import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def exact_copy(tmp_path) -> Path:
    text = (EXAMPLES / "mandelbrot.py").read_text().replace("rtol=0.0, atol=ATOL)", ")")
    path = tmp_path / "mandelbrot_exact.py"
    path.write_text(text)
    return path


def test_mandelbrot_example_passes_its_check_with_its_own_tolerance(capsys):
    assert cli.main(["run", str(EXAMPLES / "mandelbrot.py"), "--functional"]) == 0
    assert "== mandelbrot [h=128 w=256] ==" in capsys.readouterr().out


def test_fma_contraction_fails_an_exact_check_naming_the_tolerance(tmp_path, capsys):
    path = exact_copy(tmp_path)
    assert cli.main(["run", str(path), "--functional"]) == 1
    err = capsys.readouterr().err
    assert "differs from the numpy reference" in err and "--tolerance" in err


def test_tolerance_on_the_command_line_passes_it(tmp_path, capsys):
    path = exact_copy(tmp_path)
    assert cli.main(["run", str(path), "--functional", "--tolerance", "0.05"]) == 0
    assert cli.main(["run", str(path), "--functional", "--tolerance", "1e-3,x"]) == 2
    assert "--tolerance expects" in capsys.readouterr().err
