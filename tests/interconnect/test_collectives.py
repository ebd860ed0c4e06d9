"""Collectives: nccl-tests conventions, NCCL's choices, the model's scaling, numpy semantics."""
import json
import time

import numpy as np
import pytest

from gpusim.collectives import busbw_factor, functional, simulate
from gpusim.collectives.run import parse_sizes
from gpusim.errors import ConfigError
from gpusim.specs import presets
from gpusim.specs.overrides import apply
from validate.datadir import DATA_DIR

H200 = presets.get("h200")
GiB, MiB = 1 << 30, 1 << 20
DATA = DATA_DIR / "h200x4_multi.json"


def test_ring_all_reduce_busbw_factor_is_2_n_minus_1_over_n():
    assert [busbw_factor("all_reduce", n) for n in (2, 4, 8)] == [1.0, 1.5, 1.75]


def test_ring_all_reduce_sends_2_n_minus_1_over_n_of_the_data_per_gpu():
    r = simulate("all_reduce", GiB, H200, 8)
    assert all(b == pytest.approx(2 * 7 / 8 * GiB, rel=1e-9) for b in r.link_bytes_sent)


def test_large_all_reduce_busbw_approaches_the_protocols_link_rate():
    r = simulate("all_reduce", GiB, H200, 8)
    assert r.protocol == "simple"
    assert r.busbw_GBps == pytest.approx(H200.nvlink.bandwidth_GBps * H200.nccl.simple_efficiency, rel=0.05)


def test_busbw_grows_slowly_with_gpu_count_on_a_switch():
    # the step that also writes the local output is a smaller share with more GPUs
    # (measured on H200: 326 GB/s busbw on 2 GPUs, 353 on 4: x1.083; predicted x1.13)
    bw = [simulate("all_reduce", GiB, H200, n).busbw_GBps for n in (2, 4, 8)]
    assert bw[0] < bw[1] < bw[2] and bw[1] / bw[0] == pytest.approx(353 / 326, rel=0.05) and bw[2] / bw[1] < 1.05


def test_small_messages_use_ll_and_large_ones_simple():
    assert simulate("all_reduce", 64 << 10, H200, 4).protocol == "ll"
    assert simulate("all_reduce", GiB, H200, 4).protocol == "simple"


def test_few_channels_for_small_messages_as_nccl():
    # NCCL 2.28.9's log on 4 H200s: 64 KiB all_reduce on 4 channels, 512 KiB on 24
    assert simulate("all_reduce", 64 << 10, H200, 4).channels == 4
    assert simulate("all_reduce", 512 << 10, H200, 4).channels == 24


def test_protocol_choice_agrees_with_nccls_log():
    from validate.compare_multi import nccl_choices
    from gpusim.collectives.tuning import plan
    choices = nccl_choices(json.loads(DATA.read_text()))
    agree = [plan(H200, op, n, size, H200.nvlink.bandwidth_GBps).protocol == proto
             for (op, n, size), (_, proto, _) in choices.items()]
    assert len(agree) == 150 and sum(agree) >= 148


@pytest.mark.parametrize("data", ["h200x4_multi.json", "h200x2_multi.json"])
def test_ring_channel_counts_are_nccls_for_every_logged_call(data):
    # NCCL's log gives channel{Lo..Hi} per call: enqueue.cc's cells leave channels empty on small calls
    from validate.compare_multi import nccl_choices
    choices = nccl_choices(json.loads((DATA.parent / data).read_text()))
    rings = {k: v for k, v in choices.items() if k[0] in ("all_reduce", "all_gather", "reduce_scatter")}
    got = {k: simulate(k[0], k[2], H200, k[1]).channels for k in rings}
    wrong = {k: (got[k], rings[k][2]) for k in rings if got[k] != rings[k][2]}
    assert len(rings) >= 45 and not wrong


def test_ll_is_slower_than_simple_for_a_gigabyte():
    ll = simulate("all_reduce", GiB, H200, 4, protocol="LL").time_us
    simple = simulate("all_reduce", GiB, H200, 4, protocol="Simple").time_us
    assert ll / simple == pytest.approx(H200.nccl.simple_efficiency / H200.nccl.ll_efficiency, rel=0.08)


def test_faster_links_make_large_collectives_faster_in_proportion():
    # 1.2x the link rate stays below the 24 channels' copy rate (24 x channel_bandwidth_GBps); in place, the
    # root sends without also copying into its own output
    fast = apply(H200, {"nvlink.link_bandwidth_GBps": 1.2 * H200.nvlink.link_bandwidth_GBps})
    t1 = simulate("broadcast", GiB, H200, 8, in_place=True).time_us
    t2 = simulate("broadcast", GiB, fast, 8, in_place=True).time_us
    assert t1 / t2 == pytest.approx(1.2, rel=0.03)


def test_channels_copy_rate_caps_a_much_faster_link():
    fast = apply(H200, {"nvlink.link_bandwidth_GBps": 4 * H200.nvlink.link_bandwidth_GBps})
    r = simulate("broadcast", GiB, fast, 8, in_place=True)
    assert r.busbw_GBps == pytest.approx(24 * H200.nccl.channel_bandwidth_GBps, rel=0.07)   # + pipeline fill


def test_tree_is_only_for_all_reduce():
    with pytest.raises(ConfigError, match="Tree for all_reduce only"):
        simulate("all_gather", MiB, H200, 4, algorithm="tree")


def test_a_gigabyte_all_reduce_on_8_gpus_simulates_quickly():
    t = time.perf_counter()
    simulate("all_reduce", GiB, H200, 8)
    assert time.perf_counter() - t < 5.0


def test_simulation_is_deterministic():
    a = simulate("all_to_all", 256 * MiB, H200, 8)
    b = simulate("all_to_all", 256 * MiB, H200, 8)
    assert a == b


def test_sizes_parse_like_nccl_tests():
    assert parse_sizes("64K:1M") == [65536, 131072, 262144, 524288, 1048576]
    assert parse_sizes("1024,4096") == [1024, 4096]
    with pytest.raises(ConfigError):
        parse_sizes("1M:64K")


def test_bad_collective_inputs_are_refused():
    with pytest.raises(ConfigError, match="unknown collective"):
        simulate("all_sum", MiB, H200, 4)
    with pytest.raises(ConfigError, match="at least 2 GPUs"):
        simulate("all_reduce", MiB, H200, 1)
    with pytest.raises(ConfigError, match="do not split"):
        simulate("all_gather", 1000, H200, 3)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all",
                                "send_recv"])
def test_functional_results_equal_numpy(op):
    rng = np.random.default_rng(0)
    xs = [rng.integers(-100, 100, 12).astype(np.int64) for _ in range(4)]
    out = functional.run(op, xs)
    total = sum(xs)
    want = {"all_reduce": [total] * 4, "all_gather": [np.concatenate(xs)] * 4,
            "reduce_scatter": [total[3 * r:3 * r + 3] for r in range(4)], "broadcast": [xs[0]] * 4,
            "reduce": [total, xs[1], xs[2], xs[3]],
            "all_to_all": [np.concatenate([xs[p][3 * r:3 * r + 3] for p in range(4)]) for r in range(4)],
            "send_recv": [xs[3], xs[0], xs[1], xs[2]]}[op]
    assert all(np.array_equal(o, w) for o, w in zip(out, want))


def test_p2p_channels_per_peer_follow_nccls_schedule():
    # NCCL 2.28: 32 p2p channels; 8 per peer on 4 ranks, doubled once a part would pass 16 MiB
    from gpusim.collectives.tuning import p2p_plan
    assert [p2p_plan(H200, 4, s).channels for s in (128 * MiB, 256 * MiB, 512 * MiB)] == [8, 16, 32]
    assert [p2p_plan(H200, 2, s).channels for s in (256 * MiB, 512 * MiB)] == [16, 32]


def test_p2p_runs_ll_up_to_512_kib_per_peer():
    assert [simulate("send_recv", s, H200, 4).protocol for s in (512 << 10, 1 * MiB)] == ["ll", "simple"]


def test_send_recv_on_4_gpus_doubles_its_rate_when_its_channels_double():
    # measured on 4 H200s: 160 GB/s busbw at 128 MiB (8 channels), 299 at 256 MiB (16)
    a, b = (simulate("send_recv", s, H200, 4).busbw_GBps for s in (128 * MiB, 256 * MiB))
    assert 1.6 < b / a < 2.1


def _fixed_ns(spec, n, protocol):
    nc = spec.nccl
    return nc.launch_latency_ns + (n - 1) * nc.launch_skew_per_gpu_ns + nc.base_latency_ns(protocol)


def test_a_ring_or_chain_slice_is_one_stage_of_copy_and_wire():
    # NVLink P2P: the channels' stores are the link traffic, so one 64 KiB slice costs the slower of its
    # copy (2 channels at 64 KiB) and its wire time, not their sum (in place: the root copies nothing else)
    r = simulate("broadcast", 64 << 10, H200, 2, protocol="Simple", in_place=True)
    copy_ns = (64 << 10) / (r.channels * H200.nccl.channel_bandwidth_GBps)
    wire_ns = (64 << 10) / (H200.nvlink.bandwidth_GBps * H200.nccl.simple_efficiency)
    latency = H200.nvlink.latency_ns + H200.system.switch_latency_ns
    busy = max(copy_ns, wire_ns)
    rest = r.time_us * 1e3 - _fixed_ns(H200, 2, "simple") - H200.nccl.simple_step_latency_ns
    # the slice then crosses the switch's ingress port (cut-through: Fabric.carry) and lands
    assert r.channels == 2 and rest == pytest.approx(busy + max(busy, latency), rel=1e-6)


def test_an_out_of_place_broadcast_root_stores_each_byte_twice():
    # NCCL broadcast.h: out of place the root runs copySend (one load, two stores: the next rank's buffer and its
    # own output), in place send (one load, one store), so its copy takes 3/2 as long. At 1 GiB on 2 GPUs the
    # root's 24 channels then bind (1.5 x 1 GiB / (24 x 22.2 GB/s) = 3.02 ms) where in place the wire does
    # (1 GiB / (NVLink payload rate x simple_efficiency) = 2.93 ms)
    from gpusim.collectives.tuning import ROOT_COPY_SEND_COST
    out, inp = (simulate("broadcast", GiB, H200, 2, in_place=p).time_us for p in (False, True))
    copy_us = ROOT_COPY_SEND_COST * GiB / (24 * H200.nccl.channel_bandwidth_GBps) / 1e3
    wire_us = GiB / (H200.nvlink.bandwidth_GBps * H200.nccl.simple_efficiency) / 1e3
    assert ROOT_COPY_SEND_COST == 1.5 and out - inp == pytest.approx(copy_us - wire_us, rel=0.02)


def test_simple_ring_steps_pay_two_slice_syncs_and_chains_none():
    # NCCL collectives.h: ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS = 2 slices per chunk, each closed by a
    # fence and a flag. A 4-GPU all_reduce at 8 MiB (87 KiB of a channel per step, one chunk) has 6 ring steps:
    # 12 slice syncs on its path; a broadcast (a chain) pays none of them
    slow = apply(H200, {"nccl.simple_slice_sync_ns": H200.nccl.simple_slice_sync_ns + 1000.0})
    grow = {op: simulate(op, 8 * MiB, slow, 4, protocol="Simple").time_us
            - simulate(op, 8 * MiB, H200, 4, protocol="Simple").time_us for op in ("all_reduce", "broadcast")}
    assert grow["all_reduce"] == pytest.approx(12.0, abs=0.05) and grow["broadcast"] == 0.0


def test_a_simple_ring_channel_pays_two_syncs_per_2_mib_chunk_loop():
    # enqueue.cc calcCollChunking: a Ring/Simple chunk is 4 steps of 512 KiB; all_gather.h runs a channel's part
    # chunk by chunk, 2 slices each. 1 GiB on 2 GPUs: 512 MiB / 24 channels = 21.3 MiB a channel, 11 loops
    slow = apply(H200, {"nccl.simple_slice_sync_ns": H200.nccl.simple_slice_sync_ns + 1000.0})
    grow = simulate("all_gather", GiB, slow, 2).time_us - simulate("all_gather", GiB, H200, 2).time_us
    assert grow == pytest.approx(22.0, abs=0.05)


def test_a_simple_slice_is_at_least_a_32nd_of_its_two_steps():
    # prims_simple.h genericOp: slice = max(chunk / 2, 2 x 512 KiB / 32): a channel's chunk of at most
    # 32 KiB is one slice (the second one is empty: no data, no fence)
    from gpusim.collectives.tuning import simple_ring_syncs
    assert [simple_ring_syncs(H200, "all_reduce", b) for b in (32 << 10, 40 << 10, 2 * MiB, 3 * MiB)] == [1, 2, 2, 4]


def test_ll_ring_steps_stream_instead_of_waiting_for_the_whole_step():
    # every LL line carries its flag, so a rank goes on with the next step as soon as the slices it needs have
    # landed; LL128 (here given LL's numbers) waits for the whole previous step to land: over the 6 steps of a
    # 4-GPU all_reduce it loses one route latency (NVLink + switch) at each of the 5 step boundaries
    n, size, nc = 4, 4 * MiB, H200.nccl
    as_ll = apply(H200, {"nccl.ll128_efficiency": nc.ll_efficiency, "nccl.ll128_base_latency_ns": nc.ll_base_latency_ns,
                         "nccl.ll128_step_latency_ns": nc.ll_step_latency_ns})
    ll = simulate("all_reduce", size, as_ll, n, protocol="LL")
    ll128 = simulate("all_reduce", size, as_ll, n, protocol="LL128")
    latency_us = (H200.nvlink.latency_ns + H200.system.switch_latency_ns) / 1e3
    assert ll.channels == ll128.channels and ll128.time_us - ll.time_us == pytest.approx(5 * latency_us, rel=0.1)


def test_p2p_rounds_start_on_bit_reversed_channels():
    # NCCL 2.28 channel.h: round d's base is d bit-reversed over log2(32) bits; its parts take the next channels
    from gpusim.collectives.tuning import p2p_round_channels
    assert [p2p_round_channels(H200, d, 8)[0] for d in range(4)] == [0, 16, 8, 24]
    assert p2p_round_channels(H200, 3, 16)[-1] == 7          # wraps around the 32 p2p channels


def test_p2p_works_sharing_a_channel_split_its_warps():
    # sendrecv.h: 20 warps shared by 2 works give each 10: 5 send warps (4 workers + the fence warp), 4 receive
    from gpusim.collectives.tuning import p2p_warps
    assert p2p_warps(1) == (9, 9, 20) and p2p_warps(2) == (4, 4, 10)


def test_all_to_all_whose_rounds_share_channels_sends_at_its_warps_rate():
    # 2 GPUs, 1 GiB: 512 MiB per peer doubles to 32 channels, so the peer round shares every channel with the
    # copy to self; 4 worker warps x nccl.p2p_warp_bandwidth_GBps each
    from gpusim.collectives.tuning import p2p_channel_shares
    nc = H200.nccl
    send_share = p2p_channel_shares(H200, [0, 1], 32)[1][0]
    assert send_share == pytest.approx(4 * nc.p2p_warp_bandwidth_GBps / nc.p2p_channel_bandwidth_GBps)
