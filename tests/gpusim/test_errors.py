"""Bad input gets a clear error naming kernel, source line, block/thread and value."""
import numpy as np
import pytest
from numba import cuda, float32

import gpusim
from gpusim.errors import BarrierError, KernelError, LaunchError, MemoryAccessError


def write_unchecked(a):
    i = cuda.grid(1)
    a[i] = 1.0                                  # no bounds check


def test_out_of_bounds_store_names_kernel_line_block_thread_and_address():
    a = np.zeros(100, np.float32)
    with pytest.raises(MemoryAccessError) as e:
        gpusim.launch(write_unchecked, 4, 32, (a,))
    msg = str(e.value)
    assert "write_unchecked" in msg
    assert "a[i] = 1.0" in msg
    assert "block (3, 0, 0)" in msg and "thread (4, 0, 0)" in msg   # i = 100 is the first bad one
    assert "0 bytes after the end" in msg


def test_out_of_bounds_store_leaves_array_untouched():
    a = np.zeros(100, np.float32)
    with pytest.raises(MemoryAccessError):
        gpusim.launch(write_unchecked, 4, 32, (a,))
    assert (a == 0).all()


def shared_oob(out, k):
    s = cuda.shared.array(32, float32)
    s[cuda.threadIdx.x + k] = 1.0
    cuda.syncthreads()
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]


def test_shared_out_of_bounds_is_reported():
    out = np.zeros(32, np.float32)
    with pytest.raises(MemoryAccessError, match=r"shared memory.*128 bytes of shared memory"):
        gpusim.launch(shared_oob, 1, 32, (out, 1))


def divergent_sync(out):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()
    out[t] = t


def test_divergent_syncthreads_is_a_barrier_error_not_a_hang():
    out = np.zeros(32, np.int64)
    with pytest.raises(BarrierError, match=r"divergent_sync.*cuda.syncthreads\(\)"):
        gpusim.launch(divergent_sync, 1, 32, (out,))


def early_exit_then_sync(out, n):
    t = cuda.threadIdx.x
    if t >= n:
        return
    cuda.syncthreads()
    out[t] = t


def test_barrier_after_early_exit_counts_only_live_threads():
    out = np.full(64, -1, np.int64)
    gpusim.launch(early_exit_then_sync, 1, 64, (out, 40))
    assert (out[:40] == np.arange(40)).all() and (out[40:] == -1).all()


def spin_forever(out):
    while out[0] == 0:
        pass


def test_infinite_loop_is_reported():
    out = np.zeros(1, np.int64)
    with pytest.raises(KernelError, match="can never finish.*came back to the top of their loop exactly as they"):
        gpusim.launch(spin_forever, 1, 32, (out,))


def noop(a):
    pass


@pytest.mark.parametrize("grid,block,pattern", [
    (1, (512, 4), r"2048 threads.*limit of 1024"),
    (1, (1, 1, 65), r"block dimension z is 65"),
    (1, (1025, 1), r"block dimension x is 1025"),
    (0, 32, r"grid dimension x is 0"),
    ((1, 0), 32, r"grid dimension y is 0"),
    (1, (2, 2, 2, 2), r"1 to 3 dimensions"),
])
def test_bad_launch_shapes(grid, block, pattern):
    with pytest.raises(LaunchError, match=pattern):
        gpusim.launch(noop, grid, block, (np.zeros(1),))


def test_dynamic_shared_memory_over_the_gpu_limit():
    with pytest.raises(LaunchError, match=r"232448 bytes"):
        gpusim.launch(noop, 1, 32, (np.zeros(1),), shared_bytes=300_000)


def test_dynamic_shared_memory_limit_depends_on_the_gpu():
    gpusim.launch(noop, 1, 32, (np.zeros(1),), gpu="h100", shared_bytes=150_000)
    with pytest.raises(LaunchError, match=r"a100-datasheet limit of 166912"):
        gpusim.launch(noop, 1, 32, (np.zeros(1),), gpu="a100", shared_bytes=200_000)


def test_unknown_gpu_preset_lists_known_ones():
    with pytest.raises(gpusim.ConfigError, match="h100.*h200"):
        gpusim.launch(noop, 1, 32, (np.zeros(1),), gpu="b300")


def test_unsupported_opcode_names_opcode_and_lines():
    from isa.errors import UnsupportedInstruction
    from isa.optable import lookup
    from isa.program import Instruction, SourceLoc
    ins = Instruction("movmatrix", ("sync", "aligned"), (), loc=SourceLoc("k.py", 12), ptx_line=40)
    with pytest.raises(UnsupportedInstruction, match=r"'movmatrix.sync.aligned'.*PTX line 40.*k.py:12"):
        lookup(ins, kernel="k")
