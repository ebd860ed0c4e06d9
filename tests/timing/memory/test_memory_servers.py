"""BandwidthServer: one property per test (exact numbers: all sizes are binary fractions)."""
from gpusim.timing.memory import BandwidthServer


def test_idle_server_adds_exactly_its_latency():
    s = BandwidthServer(64.0, 220.0)
    assert s.serve(1000.0, 32) == 1220.0


def test_back_to_back_requests_queue_at_bytes_per_cycle():
    s = BandwidthServer(64.0, 10.0)
    done = [s.serve(0.0, 64) for _ in range(1000)]
    assert done[0] == 10.0                      # the first is not delayed
    assert done[-1] == 999.0 + 10.0             # the 1000th starts after 999 transfers of one cycle


def test_saturated_throughput_is_exactly_the_bandwidth():
    s = BandwidthServer(21.0, 0.0)
    n = 20000
    done = [s.serve(i * 0.5, 64) for i in range(n)]  # offered 128 B/cycle, 6x the capacity
    assert abs(n * 64 / (done[-1] - done[0]) - 21.0) / 21.0 < 0.001


def test_an_earlier_arrival_booked_later_does_not_wait_for_it():
    # quantum reordering: SM 0 books at cycle 3000, then SM 1 books at cycle 0 on an idle unit
    s = BandwidthServer(64.0, 5.0)
    s.serve(3000.0, 128)
    assert s.serve(0.0, 128) == 5.0


def test_busy_cycles_count_bytes_over_bandwidth():
    s = BandwidthServer(32.0, 0.0)
    for i in range(100):
        s.serve(i * 10.0, 96)
    assert s.busy_cycles == 300.0
    assert s.utilisation(1000.0) == 0.3


def test_scaled_half_doubles_the_drain_time():
    full = BandwidthServer(64.0, 0.0)
    half = full.scaled(0.5)
    assert half.bytes_per_cycle == 32.0
    assert [half.serve(0.0, 64) for _ in range(100)][-1] == 2 * [full.serve(0.0, 64) for _ in range(100)][-1]


def test_old_windows_are_forgotten():
    s = BandwidthServer(64.0, 0.0, horizon_windows=64)
    for i in range(100000):
        s.serve(float(i), 32)
    assert len(s._used) <= 3 * 64


def test_a_peek_answers_what_the_next_request_would_get_and_books_nothing():
    s = BandwidthServer(64.0, 10.0)
    for _ in range(100):
        s.serve(0.0, 64)                        # 100 cycles of transfers booked from t = 0
    assert s.peek(0.0, 64) == 100.0 + 10.0
    assert s.peek(0.0, 64) == 100.0 + 10.0      # the peek itself took no room
    assert s.serve(0.0, 64) == 100.0 + 10.0
