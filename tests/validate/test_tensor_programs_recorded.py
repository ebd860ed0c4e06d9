"""The CUDA C++ tensor-core programs against their outputs recorded on an H100/H200
(`validate/tensor_programs/record.py` -> data/measurements/tensor_programs_<gpu>.npz): every small
recorded case, bit for bit. The larger recorded cases: `python -m validate.tensor_programs.compare`."""
from pathlib import Path

import numpy as np
import pytest

from validate.tensor_programs.compare import recorded_cases, run_case
from validate.datadir import DATA_DIR

DATA = sorted(DATA_DIR.glob("tensor_programs_*.npz"))
QUICK = ("default", "bf16")
CASES = [(f, p, s) for f in DATA for p, s in recorded_cases(np.load(f)) if s in QUICK]


@pytest.mark.skipif(not CASES, reason="no GPU recording yet: run `python -m validate.tensor_programs.record "
                                      "--out $OUT` on an H100/H200 and commit its npz to data/measurements/")
@pytest.mark.parametrize("path,program,size", CASES or [(None, None, None)],
                         ids=lambda v: v.stem if isinstance(v, Path) else str(v))
def test_small_recorded_case_is_bit_exact(path, program, size):
    got, want = run_case(np.load(path), program, size)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
