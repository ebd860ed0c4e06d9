"""Fixture of the bad-input tests: the `gpusim` command run in-process, returning its exit
status, stdout and stderr (bad_inputs.py holds the kernels and `one_line`)."""
import pytest

from gpusim import cli


@pytest.fixture
def run_cli(capsys):
    def run(*argv):
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err
    return run

