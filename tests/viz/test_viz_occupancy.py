"""Occupancy and waves: the limiter and the wave count of known launches."""
import numpy as np

import programs
from gpusim import specs
from gpusim.timing.occupancy import occupancy as calc
from gpusim.viz import Subject, occupancy


def test_100_kib_of_dynamic_shared_memory_limits_an_h100_sm_to_2_blocks():
    c = programs.get("dynamic_shared").case("default")
    v = occupancy.occupancy_view(Subject(c.kernel, c.grid, c.block, c.args, "h100", 100 * 1024))
    assert v.occupancy.limiter == "shared" and v.occupancy.blocks_per_sm == 2     # 228 KiB // (100 + 1 KiB)
    assert v.limits["warps"] == 64 // (128 // 32)


def test_vector_add_blocks_of_256_threads_are_limited_by_warps_to_8_per_sm():
    v = occupancy.occupancy_view("vector_add", gpu="h200")
    assert v.occupancy.limiter == "warps" and v.occupancy.blocks_per_sm == 8
    assert v.registers_source == "ptxas"


def test_5000_blocks_at_6_per_sm_on_132_sms_are_6_full_waves_and_a_tail_of_248():
    v = occupancy.from_numbers(specs.get("h100"), 256, 40, 20_000, 5000)
    assert v.occupancy.limiter == "registers" and v.blocks_per_wave == 6 * 132
    assert (v.full_waves, v.tail_blocks, v.waves) == (6, 248, 7)
    assert v.wave_efficiency == 5000 / (7 * 792)


def test_register_sweep_passes_through_the_launchs_own_point():
    v = occupancy.from_numbers(specs.get("h100"), 256, 40, 20_000, 5000)
    k = list(v.register_sweep).index(40)
    assert v.register_sweep_warps[k] == v.occupancy.warps_per_sm == 48


def test_occupancy_writes_a_png(tmp_path):
    out = tmp_path / "occupancy.png"
    occupancy.plot(occupancy.from_numbers(specs.get("h100"), 256, 40, 20_000, 5000), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def drawn(xs, ys, x: float) -> float:
    """The value a `where="post"` step line through (xs, ys) shows at x."""
    k = int(np.searchsorted(xs, x, side="right")) - 1
    return ys[k]


def test_register_curve_is_the_models_calculator_at_every_register_count():
    spec = specs.get("h100")
    v = occupancy.from_numbers(spec, 256, 32, 0, 1000)
    for r in range(1, spec.sm.max_registers_per_thread + 1):       # the cliffs at 33, 41, 49, 65, 81, 129
        assert drawn(v.register_sweep, v.register_sweep_warps, r) == calc(spec, 256, r, 0).warps_per_sm, r
    assert drawn(v.register_sweep, v.register_sweep_warps, 33) == 48


def test_shared_curve_is_the_models_calculator_at_every_allocation_unit():
    spec = specs.get("h100")
    v = occupancy.from_numbers(spec, 128, 32, 1000, 1000)
    unit = spec.sm.shared_allocation_unit_bytes
    for b in sorted({*range(0, spec.limits.max_shared_bytes_per_block_optin + 1, unit),
                     *range(1, spec.limits.max_shared_bytes_per_block_optin + 1, unit)}):   # each side of a cliff
        assert drawn(v.shared_sweep, v.shared_sweep_warps, b) == calc(spec, 128, 32, b).warps_per_sm, b
