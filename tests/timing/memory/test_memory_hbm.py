"""HBM pseudo-channels: banks, row buffers, bus turnaround, write drain, refresh
(test spec: _memory_spec: 80 channels of 21.2 B/cycle, 16 banks, 1 KiB rows, tRCD = tRP = 14 ns,
tRAS 34, tWR 16, tCCD_L 2, tWTR 8, tRTW 4 ns, no refresh unless turned on). One property per test."""
import pytest

from _memory_spec import HBM_BYTES_PER_CYCLE, HBM_CYCLES, SPEC, T_RCD_CYCLES, T_RP_CYCLES, replace
from gpusim.errors import ConfigError
from gpusim.timing.memory import HBM

NS = 1.98                                   # SM cycles per ns
ROW_BURSTS = 1024 // 64                     # 64-B bursts in a 1 KiB row
CHANNEL_BYTES_PER_CYCLE = HBM_BYTES_PER_CYCLE / 80


def _bursts_in_one_bank(h, rows, channel=0, bank=0):
    """First burst of each of `rows` different rows of one bank of one channel."""
    out, b = [], 0
    while len(out) < rows:
        c, bk, row = h.locate(b)
        if (c, bk) == (channel, bank) and (not out or h.locate(out[-1])[2] != row):
            out.append(b)
        b += ROW_BURSTS
    return out


CHUNK_BURSTS = 256 // 64                    # 64-B bursts in a 256-B channel chunk


def test_a_256_byte_chunk_stays_in_one_channel_and_row():
    h = HBM(SPEC)
    assert len({h.locate(b) for b in range(CHUNK_BURSTS)}) == 1
    assert h.locate(CHUNK_BURSTS)[0] != h.locate(0)[0]


def test_consecutive_chunks_spread_over_every_channel():
    h = HBM(SPEC)
    assert {h.locate(k * CHUNK_BURSTS)[0] for k in range(80)} == set(range(80))


def test_a_row_gathers_four_chunks_of_its_channel():
    # 1 KiB rows of 256-B chunks: a channel's next 4 chunks (one every 80 chunks of addresses) share a row
    h = HBM(SPEC)
    c = h.locate(0)[0]
    same = [b for b in range(0, 80 * CHUNK_BURSTS * 8, CHUNK_BURSTS) if h.locate(b)[0] == c]
    assert len({h.locate(b) for b in same[:4]}) == 1
    assert h.locate(same[4]) != h.locate(same[0])


def test_an_idle_read_of_a_closed_bank_takes_the_hbm_latency():
    assert HBM(SPEC).read_burst(100.0, 0) == 100.0 + HBM_CYCLES


def test_a_row_hit_is_trcd_sooner_and_a_row_conflict_trp_later_than_a_closed_bank():
    h = HBM(SPEC)
    first, other = _bursts_in_one_bank(h, 2)
    h.read_burst(0.0, first)
    assert h.read_burst(5000.0, first + 1) == pytest.approx(5000.0 + HBM_CYCLES - T_RCD_CYCLES)   # same row
    assert h.read_burst(10000.0, other) == pytest.approx(10000.0 + HBM_CYCLES + T_RP_CYCLES)     # another row
    assert (h.row_hits, h.row_misses) == (1, 2)


def test_conflicting_rows_of_one_bank_cycle_no_faster_than_tras_plus_trp():
    h = HBM(SPEC)
    rows = _bursts_in_one_bank(h, 200)
    done = [h.read_burst(0.0, b) for b in rows]                   # all offered at once
    per_row = (done[-1] - done[0]) / (len(rows) - 1)
    assert per_row == pytest.approx((34 + 14) * NS, rel=0.01)     # tRAS + tRP per activation


def test_write_recovery_makes_written_rows_cycle_slower():
    h = HBM(replace(hbm={"write_queue_bursts": 1}))               # every write issued at once
    rows = _bursts_in_one_bank(h, 200)
    for b in rows:
        h.write_burst(0.0, b)
    bank = h._chans[0].banks[0]
    assert bank.bytes_served / len(rows) == pytest.approx((34 + 14 + 16) * NS, rel=0.01)   # + tWR


def test_writes_wait_in_the_write_queue_until_it_is_full():
    h = HBM(SPEC)
    same_channel = [b for b in range(0, 80 * ROW_BURSTS * 64, ROW_BURSTS) if h.locate(b)[0] == h.locate(0)[0]]
    for b in same_channel[:31]:
        h.write_burst(0.0, b)
    ch = h._chans[h.locate(0)[0]]
    assert ch.bus.bytes_served == 0 and len(ch.wq) == 31
    h.write_burst(0.0, same_channel[31])                          # the 32nd drains all of them
    assert ch.wq == [] and ch.bus.bytes_served >= 32 * 64
    assert h.counters()["dram__bytes_write.sum"] == 32 * 64


def test_a_read_modify_writes_write_waits_for_its_read_and_finds_the_row_taken_by_traffic_in_between():
    h = HBM(replace(hbm={"write_queue_bursts": 1}))               # a queued write is issued at once
    mine, other = _bursts_in_one_bank(h, 2)
    h.rmw_burst(0.0, mine, 1, 1)                                  # read one sector, merge, write it back
    assert h._chans[0].wq == [] and len(h._chans[0].merged) == 1  # the write waits for the read's data
    h.read_burst(10.0, other)                                     # another row of the bank, before the data is back
    h.drain(2 * HBM_CYCLES)
    assert (h.row_hits, h.row_misses) == (0, 3)                   # the write reopens its row


def test_a_read_modify_writes_write_finds_its_row_open_when_nothing_else_used_the_bank():
    h = HBM(replace(hbm={"write_queue_bursts": 1}))
    mine = _bursts_in_one_bank(h, 1)[0]
    h.rmw_burst(0.0, mine, 1, 1)
    h.drain(2 * HBM_CYCLES)
    assert (h.row_hits, h.row_misses) == (1, 1)
    assert (h.bytes_read, h.bytes_written) == (32, 32)


def _channel_stream(spec, pattern, n=4000):
    """Bursts of one channel's open rows offered at twice its bus rate; bus bytes per cycle achieved."""
    h = HBM(spec)
    ch0, b = [], 0
    while len(ch0) < n:
        if h.locate(b)[0] == 0:
            ch0.append(b)
        b += 1
    dt = 64 / (2 * CHANNEL_BYTES_PER_CYCLE)
    last = 0.0
    for i, b in enumerate(ch0):
        if pattern(i):
            h.write_burst(i * dt, b)
        else:
            last = max(last, h.read_burst(i * dt, b))
    h.drain(n * dt)
    bus = h._chans[0].bus
    end = (max(bus._used) + 1) * bus.window_cycles
    return n * 64 / end


def test_alternating_reads_and_writes_reach_less_bandwidth_than_reads_alone_by_the_turnarounds():
    reads = _channel_stream(SPEC, lambda i: False)
    mixed = _channel_stream(SPEC, lambda i: i % 2 == 1)
    # a write drain of 32 bursts (plus the 32 reads around it) turns the bus around twice: tRTW + tWTR
    batch = 64 * 64 / CHANNEL_BYTES_PER_CYCLE
    expected = reads * batch / (batch + (8 + 4) * NS)
    assert reads == pytest.approx(CHANNEL_BYTES_PER_CYCLE, rel=0.03)
    assert mixed == pytest.approx(expected, rel=0.03)


def test_a_smaller_write_queue_turns_the_bus_around_more_often():
    big = _channel_stream(SPEC, lambda i: i % 2 == 1)
    small = _channel_stream(replace(hbm={"write_queue_bursts": 4}), lambda i: i % 2 == 1)
    assert small < 0.9 * big


def test_refresh_closes_every_row_of_its_channel():
    spec = replace(hbm={"t_rfc_ns": 350.0})
    h = HBM(spec)
    h.read_burst(0.0, 0)
    after = h._chans[h.locate(0)[0]].next_refresh + 350.0 * NS + 1.0     # once the refresh is over
    closed = HBM_CYCLES - h.refresh_wait_cycles
    assert h.read_burst(after, 1) == pytest.approx(after + closed)       # a closed bank, not a row hit


@pytest.mark.parametrize("ask", ["read_burst", "peek_read"])     # a read, or a peek at one (booking nothing)
def test_a_read_arriving_while_its_channel_refreshes_waits_for_the_refresh_to_end(ask):
    spec = replace(hbm={"t_rfc_ns": 350.0})
    h = HBM(spec)
    due = h._chans[h.locate(0)[0]].next_refresh
    closed = HBM_CYCLES - h.refresh_wait_cycles
    assert getattr(h, ask)(due + 100.0, 0) == pytest.approx(due + 350.0 * NS + closed)


def test_reads_at_random_times_average_the_measured_latency_refresh_waits_included():
    spec = replace(hbm={"t_rfc_ns": 350.0})
    h = HBM(spec)
    used, lat, b, t = set(), [], 0, 0.0
    while len(lat) < 1000:                     # each read to a bank not used before: closed, no row hit
        c, bank, _ = h.locate(b)
        if (c, bank) not in used:
            used.add((c, bank))
            t += 1234.567
            lat.append(h.read_burst(t, b) - t)
        b += 1
    assert sum(lat) / len(lat) == pytest.approx(HBM_CYCLES, rel=0.02)
    assert max(lat) > HBM_CYCLES + 0.5 * 350.0 * NS                       # some waited for a refresh


def test_streaming_reads_lose_the_refresh_share_of_the_bandwidth():
    spec = replace(hbm={"t_rfc_ns": 390.0})                        # 10 % of tREFI
    got = _channel_stream(spec, lambda i: False, n=10000)
    assert got == pytest.approx(0.9 * CHANNEL_BYTES_PER_CYCLE, rel=0.02)


def test_sampled_simulation_keeps_the_fraction_of_the_channels_at_full_speed():
    h = HBM(SPEC, sm_fraction=0.25)
    assert h.channels == 20
    assert h._chans[0].bus.bytes_per_cycle == pytest.approx(CHANNEL_BYTES_PER_CYCLE)


def test_refresh_longer_than_its_interval_is_refused():
    with pytest.raises(ConfigError, match="t_rfc_ns"):
        replace(hbm={"t_rfc_ns": 4000.0})


def _rows_in_different_banks(h, count, channel=0):
    """First burst of `count` rows of one channel, each in a bank not used before."""
    out, banks, b = [], set(), 0
    while len(out) < count:
        c, bk, _ = h.locate(b)
        if c == channel and bk not in banks:
            banks.add(bk)
            out.append(b)
        b += ROW_BURSTS
    return out


def test_activations_of_one_channel_take_a_quarter_of_tfaw_each():
    h = HBM(replace(hbm={"t_faw_ns": 40.0}))
    rows = _rows_in_different_banks(h, 16)                        # no bank is reused: only tFAW limits
    done = [h.read_burst(0.0, b) for b in rows]
    assert (done[-1] - done[0]) / (len(rows) - 1) == pytest.approx(40.0 / 4 * NS, rel=0.01)


def _read_after_eight_write_activations(share):
    h = HBM(replace(hbm={"t_faw_ns": 40.0, "write_activation_share": share, "write_queue_bursts": 8}))
    rows = _rows_in_different_banks(h, 9)
    for b in rows[:8]:
        h.write_burst(0.0, b)                                     # the eighth drains the queue: 8 activations
    return h.read_burst(0.0, rows[8])                             # its activation waits behind theirs


def test_a_write_s_activation_takes_its_share_of_the_tfaw_window():
    # 8 writes' activations at 1.5 x 10 ns each instead of 10 ns: the read behind them 40 ns later
    later = _read_after_eight_write_activations(1.5) - _read_after_eight_write_activations(1.0)
    assert later == pytest.approx(8 * 0.5 * 40.0 / 4 * NS, rel=0.02)


# -- peek_read: the fetch another SM makes for a line the sample finds in flight (l2_slices.allocate) --

def test_a_peek_at_an_idle_closed_bank_returns_what_a_read_would():
    assert HBM(SPEC).peek_read(100.0, 0) == HBM(SPEC).read_burst(100.0, 0)


def test_a_peek_books_nothing():
    h = HBM(SPEC)
    for t in range(0, 4000, 7):
        h.peek_read(float(t), 0)
    assert (h.bursts_read, h.row_hits, h.row_misses) == (0, 0, 0)
    assert h.read_burst(100.0, 0) == HBM(SPEC).read_burst(100.0, 0)


def test_a_peek_finds_the_row_a_read_opened():
    h = HBM(SPEC)
    h.read_burst(0.0, 0)
    assert h.peek_read(1000.0, 1) == pytest.approx(1000.0 + HBM_CYCLES - T_RCD_CYCLES)      # a row hit


def test_a_peek_waits_behind_the_reads_queued_on_its_channel():
    h = HBM(SPEC)
    c = h.locate(0)[0]
    same = [b for b in range(0, 80 * CHUNK_BURSTS * 400, CHUNK_BURSTS) if h.locate(b)[0] == c][1:200]
    for b in same:                                   # 200 bursts of other rows of the channel, all at t = 0
        h.read_burst(0.0, b)
    assert h.peek_read(0.0, 0) > 200 * 64 / CHANNEL_BYTES_PER_CYCLE


def _lone_sector_writes(spec, n=2000):
    """n write-backs of one dirty 32-B sector each, consecutive bursts of channel 0 (open rows),
    all at once: (the channel's bus-busy cycles, bytes counted)."""
    h = HBM(replace(hbm={"write_queue_bursts": 1, **spec}))   # each write issued at once
    ch0, b = [], 0
    while len(ch0) < n:
        if h.locate(b)[0] == 0:
            ch0.append(b)
        b += 1
    for b in ch0:
        h.write_burst(0.0, b, 1)
    return h.busy_cycles, h.bytes_written


def test_a_lone_sectors_write_takes_a_whole_burst_of_the_bus_where_the_smallest_access_is_a_burst():
    # [MEAS-DRAM64]: 4-B stores 128 B apart (one dirty sector a 64-B burst) take the H100 / H200 twice
    # the DRAM time a byte of stores 32 B apart (both sectors of each burst) does
    sector_cycles, sector_bytes = _lone_sector_writes({"min_access_bytes": 32})
    burst_cycles, burst_bytes = _lone_sector_writes({"min_access_bytes": 64})
    assert sector_bytes == burst_bytes == 2000 * 32            # counted as written either way
    assert burst_cycles == pytest.approx(2 * sector_cycles, rel=0.02)


def test_a_smallest_access_larger_than_a_burst_is_refused():
    with pytest.raises(ConfigError, match="min_access_bytes"):
        replace(hbm={"min_access_bytes": 128})
