"""Every spec field an architect varies (issue 10, item 4) changes the model the way
hardware theory says, or is refused before any work starts. Runs replay one recorded
functional run per program (gpusim.sweep.replay), so each variant costs only its timing."""
import pytest

import programs
from gpusim.errors import ConfigError
from gpusim.specs import resolve
from gpusim.sweep import configs
from gpusim.sweep.replay import timed_launch
from gpusim.sweep.streams import StreamCache

CACHE = StreamCache(disk=False)
TIME = "gpu__time_duration.sum"


def m(name, size, *sets):
    key = (name, repr(size), sets)
    if key not in _SEEN:                        # a baseline several tests compare against runs once
        _SEEN[key] = _run(name, size, *sets)
    return _SEEN[key]


_SEEN: dict = {}


def _run(name, size, *sets):
    c = programs.get(name).case(size)
    r, _ = timed_launch(c.kernel, c.grid, c.block, c.args, resolve("h100", list(sets)), c.shared_bytes, cache=CACHE)
    return r.metrics


# 192 blocks of 256 threads on 16 SMs: two waves at 8 blocks per SM, more when occupancy falls
T = ("transpose_shared", "default")
MM = ("matmul_tiled", "default")                  # 24 blocks, issue and latency bound
VA = ("vector_add", {"n": 1 << 18})               # streams 3 MiB through HBM
TN = ("transpose_naive", "default")               # 1.5 MiB of scattered sectors


def test_fewer_sms_take_longer():
    assert m(*T, "sm_count=16")[TIME] > 1.5 * m(*T)[TIME]


@pytest.mark.parametrize("limit", ["sm.max_blocks_per_sm=1", "sm.max_warps_per_sm=8", "sm.registers_per_sm=8192",
                                   "sm.shared_memory_per_sm_bytes=8KiB", "sm.max_threads_per_sm=256"])
def test_occupancy_limits_lower_blocks_per_sm_and_add_waves(limit):
    base, low = m(*T, "sm_count=16"), m(*T, "sm_count=16", limit)
    assert base["launch__occupancy_limit_blocks"] == 8 and low["launch__occupancy_limit_blocks"] == 1
    assert low[TIME] > 2 * base[TIME]


def test_fewer_sub_partitions_issue_slower():
    assert m(*MM, "sm.sub_partitions=2")[TIME] > 1.05 * m(*MM)[TIME]


def test_slower_sm_clock_takes_longer():
    assert m(*MM, "clocks.sm_clock_mhz=990")[TIME] > 1.3 * m(*MM)[TIME]


def test_longer_pipe_latency_takes_longer():
    assert m(*MM, "sm.pipes.fmaheavy.latency_cycles=16")[TIME] > m(*MM)[TIME]


def test_warp_scheduler_policy_is_honoured():
    assert m(*MM, "sm.warp_scheduler=lrr")[TIME] != m(*MM)[TIME]


def test_smaller_l1_misses_more_and_takes_longer():
    small = m("stencil_1d", "default", "sm.l1_shared_total_bytes=4KiB", "sm.shared_memory_per_sm_bytes=4KiB")
    base = m("stencil_1d", "default")
    assert small["lts__t_sectors_op_read.sum"] > 1.1 * base["lts__t_sectors_op_read.sum"]
    assert small[TIME] > base[TIME]


def test_slower_l1_hits_take_longer():
    assert m("stencil_1d", "default", "l1.hit_latency_cycles=120")[TIME] > m("stencil_1d", "default")[TIME]


def test_smaller_l2_reads_more_from_dram():
    assert m(*TN, "l2.size_bytes=1MiB")["dram__bytes_read.sum"] > 2 * m(*TN)["dram__bytes_read.sum"]


def test_lower_l2_associativity_reads_more_from_dram():
    # 1.5 MiB of sectors fit a 2 MiB L2 whose sets hold 16 lines, not a direct-mapped one (at 1 MiB neither
    # holds them, and the margin is the warps' interleaving: 5% with ptxas' stall counts, 17% without)
    direct = m(*TN, "l2.size_bytes=2MiB", "l2.associativity=1")["dram__bytes_read.sum"]
    assert direct > 2 * m(*TN, "l2.size_bytes=2MiB")["dram__bytes_read.sum"]


def test_longer_l2_lines_change_the_prediction():
    # sectored lines: the same bytes in fewer, longer lines (fewer tags) change what stays
    assert m(*TN, "l2.line_bytes=256")[TIME] != m(*TN)[TIME]


def test_slower_l2_hits_take_longer():
    assert m(*TN, "l2.hit_latency_cycles=600")[TIME] > 1.1 * m(*TN)[TIME]


def test_fewer_l2_slices_bound_l2_bandwidth():
    few = m(*VA, "l2.slices=16")
    assert few[TIME] > 1.3 * m(*VA)[TIME] and few["timing__bound"] == "l2_bandwidth"


def test_a_write_port_of_the_slices_own_speeds_an_l2_bound_stream_with_stores():
    few = m(*VA, "l2.slices=8")
    assert m(*VA, "l2.slices=8", "l2.write_port=true")[TIME] < 0.9 * few[TIME]


def test_less_hbm_bandwidth_takes_longer():
    assert m(*VA, "hbm.bandwidth_GBps=1500")[TIME] > 1.2 * m(*VA)[TIME]


def test_fewer_hbm_channels_take_longer():
    assert m(*VA, "hbm.channels=8")[TIME] > m(*VA)[TIME]


def test_longer_hbm_latency_takes_longer():
    assert m(*VA, "hbm.latency_ns=600")[TIME] > 1.1 * m(*VA)[TIME]


def test_narrower_crossbar_takes_longer():
    assert m(*VA, "noc.bandwidth_bytes_per_cycle=500")[TIME] > 1.2 * m(*VA)[TIME]


@pytest.mark.parametrize("field,value", [("l2.sector_bytes", 64), ("l1.sector_bytes", 16),
                                         ("clocks.memory_clock_mhz", 3000)])
def test_fields_the_model_does_not_honour_are_refused_before_work(field, value):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        configs("h100", {field: [value]})


def test_unknown_field_is_refused_with_a_suggestion():
    with pytest.raises(ConfigError, match="did you mean"):
        configs("h100", {"hbm.bandwith_GBps": [1000]})


def test_nvlink_fields_slow_a_kernel_reading_a_peer_gpus_array():
    import gpusim
    c = programs.get("vector_add").case({"n": 1 << 16})
    peer = gpusim.sweep.Launch("vector_add_peer", c.kernel, c.grid, c.block, c.args, peer_args={0: 1})
    df = gpusim.sweep(peer, sets={"system.gpu_count": 2}, vary=[{}, {"nvlink.link_bandwidth_GBps": 5},
                                                               {"nvlink.links": 2}, {"nvlink.latency_ns": 3000}])
    base, *slower = df[TIME].tolist()
    assert all(t > 1.3 * base for t in slower), df[TIME].tolist()
    assert df["timing__bound"].tolist()[2] == "nvlink_bandwidth"
