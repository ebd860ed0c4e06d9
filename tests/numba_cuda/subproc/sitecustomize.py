"""The one-import change of `child.py` in the Python processes a numba-cuda test starts itself
(`TestCase.run_test_in_subprocess` runs the test again under `python -m numba.runtests`):
`child.py` puts this directory first on PYTHONPATH and sets GPUSIM_NUMBA_CUDA_REWRITE=1."""
import os
import sys

if os.environ.get("GPUSIM_NUMBA_CUDA_REWRITE") == "1":
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))      # tests/numba_cuda
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.dirname(os.path.dirname(here)))              # the repository
    import child
    child.install()
