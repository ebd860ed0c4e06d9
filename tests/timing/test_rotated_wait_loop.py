"""A wait on an mbarrier is timed wherever ptxas puts it (gpusim/frontend/sass/payloads.py
`_best_kind`). With the bulk copies in a loop of a runtime count, ptxas 13.5 unrolls the loop four
times with remainder paths and rotates the wait loop `WAIT: mbarrier.try_wait; @!p bra WAIT`:
its first check goes to the end of one remainder path, its retry out of line in the wait's own
block. The wait's payload belongs on the SYNCS issued whenever the wait is (the retry's); on the
first check, a launch whose copies take another path never waited for its copies (437 cycles a
copy from DRAM, where the same copies unrolled at compile time take 1,050). The property is tested
with whichever ptxas gpusim installs (13.0 now)."""
import warnings

import numpy as np

import gpusim
from gpusim.frontend.sass import mapping
from gpusim.timing import TimingOptions
from validate import dram_concurrency_probe as probe

SOURCE = probe.BULK_HELPERS + r"""
// `reps` copies of `bytes` (as `parts` bulk copies, or PARTS when PARTS > 0) from src + r * 64 KB,
// each waited on before the next
template <int PARTS>
__device__ void loop(const char *src, u32 bytes, u32 parts, int reps) {
    __shared__ __align__(128) char buf[8192];
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x != 0) return;
    bar_init(&bar);
    u32 phase = 0, n = PARTS > 0 ? PARTS : parts, part = bytes / n;
    for (int r = 0; r < reps; r++) {
        const char *g = src + (size_t)r * 65536;
        bar_expect(&bar, bytes);
        for (u32 p = 0; p < n; p++) bulk_copy(buf + p * part, g + p * part, part, &bar);
        bar_wait(&bar, phase);
        phase ^= 1;
    }
}
extern "C" __global__ void runtime_parts(const char *s, u32 bytes, u32 parts, int reps) { loop<0>(s, bytes, parts, reps); }
extern "C" __global__ void one_part(const char *s, u32 bytes, u32 parts, int reps) { loop<1>(s, bytes, parts, reps); }
"""


def cycles_per_copy(name: str) -> float:
    """Cycles a copy of 8 KB from DRAM: the launch with 8 copies less with 4, over 4."""
    src = np.ones(1 << 20, np.uint8)
    kernel = gpusim.CudaSource(SOURCE, name)
    cyc = [gpusim.launch(kernel, 1, 32, (src, np.uint32(8192), np.uint32(1), np.int32(reps)), gpu="h100",
                         timing=TimingOptions(mode="full"), outputs=False).metrics["sm__cycles_elapsed.max"]
           for reps in (4, 8)]
    return (cyc[1] - cyc[0]) / 4


def test_a_wait_in_a_rotated_loop_waits_for_its_copy():
    loop, unrolled = cycles_per_copy("runtime_parts"), cycles_per_copy("one_part")
    assert unrolled > 700                      # a DRAM read's latency and more
    assert abs(loop - unrolled) < 0.05 * unrolled, (loop, unrolled)


def test_an_operation_no_sass_carries_is_reported(monkeypatch):
    """Had the payload stayed on the first check (the mapping before the fix, with ptxas 13.5's
    layout of this loop), the wait would have been dropped: a launch that drops an mbarrier
    operation warns (as does one dropping more than 1% of its accesses), beside
    `gpusim__sass_unplaced_accesses.sum`. The drop is made here by taking the waits' payloads off."""
    real = mapping.place_payloads

    def dropping_waits(m, ins, dk, ptx):
        real(m, ins, dk, ptx)
        waits = [p for p in m.payload_target if "try_wait" in dk.infos[p].mnemonic]
        for p in waits:
            del m.payload_target[p], m.payload_home[p]
        m.unmatched = tuple(m.unmatched) + tuple(waits)

    monkeypatch.setattr(mapping, "place_payloads", dropping_waits)
    src = np.ones(1 << 20, np.uint8)
    kernel = gpusim.CudaSource(SOURCE + "\n// mapped as before the fix\n", "runtime_parts")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = gpusim.launch(kernel, 1, 32, (src, np.uint32(8192), np.uint32(1), np.int32(4)), gpu="h100",
                          timing=TimingOptions(mode="full"), outputs=False)
    assert r.metrics["gpusim__sass_unplaced_accesses.sum"] >= 1
    said = [str(w.message) for w in caught if "runtime_parts" in str(w.message)]
    assert said and "not timed" in said[0] and "(0 on mbarriers)" not in said[0]
