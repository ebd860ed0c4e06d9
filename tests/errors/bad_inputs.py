"""Small kernels for the bad-input tests, each misbehaving in one way (or a plain one to
misuse), and `one_line`, the check that the CLI printed one error line."""
from numba import cuda, float32, int32


def copy(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i]


def noop(a):
    pass


def static_shared_52k(out):
    s = cuda.shared.array(13312, float32)          # 13312 x 4 B = 53,248 B (52 KiB) > 48 KiB
    s[cuda.threadIdx.x] = 1.0
    cuda.syncthreads()
    out[cuda.threadIdx.x] = s[cuda.threadIdx.x]


def spin_one_thread(out):
    if cuda.grid(1) == 0:
        while out[0] == 0:
            pass


def spin_lock_in_a_warp(lock, out):
    t = cuda.threadIdx.x
    done = False
    while not done:
        if cuda.atomic.cas(lock, 0, 0, 1) == 0:
            out[t] += 1
            cuda.threadfence()
            lock[0] = 0
            done = True


def spin_everyone(out):
    i = cuda.grid(1)
    x = 0
    while out[0] == 0:
        x += i
    out[i] = x


def grid_sync(a):
    g = cuda.cg.this_grid()
    a[cuda.grid(1)] = 1
    g.sync()


@cuda.jit(device=True)
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def recursive(a):
    a[0] = fact(5)


def stream_in_kernel(a):
    s = cuda.stream()                             # noqa: F841
    a[0] = 1


def local_stride(a, n):
    x = cuda.local.array(4, int32)
    for i in range(n):
        x[i % 4] += i
    a[0] = x[0]


def one_line(err: str) -> str:
    """The single `error: ...` line of `err` (asserts there is exactly one and no traceback)."""
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]
