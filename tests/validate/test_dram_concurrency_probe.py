"""validate/dram_concurrency_probe.py: its placements put every copy where its docstring says, and
its kernels move the bytes they say in gpusim; and what the H100 it ran on measured
(data/measurements/dram_concurrency_h100_run3.json): where the copies land does not change their
time, the bytes all blocks have in flight do."""
import json

import numpy as np
import pytest

import gpusim
from gpusim.timing import TimingOptions
from validate import dram_concurrency_probe as probe
from validate.datadir import DATA_DIR


@pytest.mark.parametrize("placement", probe.PLACEMENTS)
def test_every_copy_is_its_own_bytes_inside_the_buffer(placement):
    off = probe.offsets(placement, probe.MAX_BLOCKS, 8192).ravel()
    assert off.max() + 8192 <= probe.BUFFER_BYTES
    assert len(np.unique(off // 8192)) == len(off) and np.all(off % 256 == 0)


def test_band64k_copies_share_their_offset_modulo_64k_and_band_skew_copies_do_not():
    same = probe.offsets("band64k", 132, 8192)[:, 3] % 65536
    skew = probe.offsets("band_skew", 132, 8192)[:, 3] % 65536
    assert len(set(same.tolist())) == 1 and len(set(skew.tolist())) == 132


@pytest.mark.parametrize("name, copies", [("copies1", 1), ("copies8", 8), ("loads", 0)])
def test_a_round_reads_its_8_kb(name, copies):
    reps = 2
    off = np.ascontiguousarray(probe.offsets("interleaved", 1, 8192, reps))
    m = gpusim.launch(gpusim.CudaSource(probe.SOURCE, name), 1, 32,
                      (np.ones(1 << 20, np.uint8), off, np.uint32(8192), np.int32(reps), np.zeros(reps, np.uint64)),
                      gpu="h100", timing=TimingOptions(mode="full"), outputs=False).metrics
    assert m["dram__bytes_read.sum"] >= reps * 8192
    if copies:
        assert m["smsp__sass_inst_executed_op_tma_ld.sum"] == reps * copies


def _measured():
    rows = json.loads((DATA_DIR / "dram_concurrency_h100_run3.json").read_text())["rows"]
    return {(r["placement"], r["blocks"], r["bytes"], r["parts"], r["path"]): r["mean_cycles"] for r in rows}


def test_on_the_h100_placement_does_not_change_a_copys_time_at_132_blocks():
    m = _measured()
    times = [m[(p, 132, 8192, 1, "tma")] for p in probe.PLACEMENTS]
    assert max(times) < 1.03 * min(times)


def test_on_the_h100_a_copy_waits_about_for_every_byte_in_flight_at_the_dram_peak():
    m = _measured()
    one = m[("band64k", 1, 8192, 1, "tma")]
    for blocks in (66, 132, 264):
        added = m[("band64k", blocks, 8192, 1, "tma")] - one
        in_flight_cycles = blocks * 8192 / 1750.0          # 3.5 TB/s at 1.98 GHz
        assert 0.6 * in_flight_cycles < added < 1.4 * in_flight_cycles, (blocks, added, in_flight_cycles)
