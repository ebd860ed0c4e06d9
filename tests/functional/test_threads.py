"""Launches of one kernel from several threads at once each compute their own result: the batches
share the kernel's decoded ops (a compiled segment's table and scratch memory, which its machine code
reads without the GIL), so each segment run holds its op's lock from filling the table to reading the
results (`fastpath.segment_op.SegmentOp.run`); each batch has its own state (`state.StatePool`)."""
import threading

import numpy as np
import pytest

try:
    import triton  # noqa: F401
except ImportError:
    pytest.skip("triton not installed (optional extra: pip install -e '.[triton]')", allow_module_level=True)

import gpusim
from programs.triton_kernels import flash_attention


def _outputs(seed: int) -> list[np.ndarray]:
    c = flash_attention.PROGRAM.case("default", seed=seed)
    gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
    return [a.copy() for a in c.args if isinstance(a, np.ndarray)]


def test_threads_launching_one_kernel_at_once_each_get_their_own_result():
    alone = {seed: _outputs(seed) for seed in range(4)}
    wrong, errors = [], []

    def launches(seed):
        try:
            for i in range(15):
                if not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(_outputs(seed), alone[seed])):
                    wrong.append((seed, i))
        except Exception as e:                   # noqa: BLE001  (reported below, with the thread's seed)
            errors.append((seed, repr(e)[:200]))

    threads = [threading.Thread(target=launches, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong, (errors, wrong)
