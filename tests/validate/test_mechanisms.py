"""Issue 24's mechanism microbenchmarks (validate/mechanisms/): every kernel's default case, and
every measured size shrunk to a few blocks (its per-thread work and shapes unchanged), runs in
gpusim and equals its numpy reference; `validate measure --suite mechanisms` selects exactly the
measured sizes with the extra Nsight counters; `validate compare` rebuilds the records; the
SASS is what the kernels claim (hashed addresses are not warp-aggregated, a uniform int add
is). No GPU needed."""

import pytest

import gpusim
import programs
from validate import ncu, predict, suites
from validate.heldout import HELDOUT
from validate.mechanisms import MECHANISMS, derive
from validate.microbench import MICROBENCHMARKS

MEASURED = [(n, s) for n, spec in MECHANISMS.items() for s in spec.sizes if s != "default"]


def shrunk(name: str, params: dict) -> dict:
    """A measured size on a few blocks: grid-filling launches get 3 blocks, matrices 128^2, row
    sets 256 rows, resident footprints 64 KiB; iterations, strides, bins and block shapes stay."""
    p = dict(params)
    if "blocks" in MECHANISMS[name].build.__code__.co_varnames:
        p["blocks"] = 3
    for key, small in (("n", 128), ("rows", 256)):
        if key in p:
            p[key] = small
    if p.get("footprint_bytes", 0) > 1 << 16:
        p["footprint_bytes"] = 1 << 16
    p["iters"] = min(p["iters"], 4) if "iters" in p else None
    return {k: v for k, v in p.items() if v is not None}


def test_names_are_apart_from_programs_microbenchmarks_and_heldout():
    assert not set(MECHANISMS) & (set(programs.PROGRAMS) | set(MICROBENCHMARKS) | set(HELDOUT))
    assert all(spec.name == name for name, spec in MECHANISMS.items())
    assert len(MEASURED) >= 100


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_default_case_runs_in_gpusim_timing_and_matches_numpy(name):
    case = MECHANISMS[name].case("default")
    with pytest.raises(AssertionError):          # the outputs start wrong: the check means something
        case.check()
    r = gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h200", shared_bytes=case.shared_bytes,
                      timing=True)
    case.check()
    assert r.metrics["gpu__time_duration.sum"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name,size", MEASURED, ids=[f"{n}/{s}" for n, s in MEASURED])
def test_every_measured_size_shrunk_matches_numpy(name, size):
    case = MECHANISMS[name].case(shrunk(name, MECHANISMS[name].sizes[size]))
    gpusim.launch(case.kernel, case.grid, case.block, case.args, gpu="h200", shared_bytes=case.shared_bytes)
    case.check()


def test_measure_suite_mechanisms_selects_the_measured_sizes_only():
    assert suites.selected(None, None, "mechanisms") == [("mechanism", n, s) for n, s in MEASURED]
    assert suites.spec_of("mechanism", "atomic_bins") is MECHANISMS["atomic_bins"]
    assert suites.selected("^horner/", None, "mechanisms") == [
        ("mechanism", "horner", s) for s in MECHANISMS["horner"].sizes if s != "default"]
    assert {k for k, _, _ in suites.selected(None, None, "all")} == {"program", "microbenchmark", "heldout", "heldout2"}


def test_the_mechanism_counters_are_extra_nsight_names():
    extra = set(ncu.MECHANISM_METRICS)
    assert len(extra) == len(ncu.MECHANISM_METRICS)
    assert not extra & (set(ncu.METRICS) | set(ncu.EXTRA))
    assert all(m.split("__")[0] in ("l1tex", "lts", "sm", "smsp", "dram") and m.endswith((".sum", ".pct"))
               for m in extra)


def test_compare_rebuilds_a_mechanism_record_and_labels_it():
    rec = {"name": "stencil/3x3_n1024_16x16", "mechanism": "stencil", "size": "3x3_n1024_16x16",
           "metrics": {"gpu__time_duration.sum": 10000.0}}
    assert predict.build_case(rec).kernel is MECHANISMS["stencil"].case("default").kernel


def test_derive_turns_a_record_into_its_operations_per_ns():
    rec = {"mechanism": "atomic_bins", "params": MECHANISMS["atomic_bins"].sizes["i32_b256"], "grid": [1056],
           "block": [256], "metrics": {"gpu__time_duration.sum": 100_000.0, "lts__t_sectors_op_red.sum": 2e6}}
    d = derive(rec)
    assert d["ops"] == 1056 * 256 * 4
    assert d["ops_per_ns"] == pytest.approx(1056 * 256 * 4 / 1e5)
    assert d["lts_red_sectors_per_op"] == pytest.approx(2e6 / (1056 * 256 * 4))


def _sass_ops(case) -> list[str]:
    from gpusim.frontend.compile import compile_kernel
    from gpusim.frontend.sass import tools
    ck = compile_kernel(case.kernel, case.args)
    text = tools.disassemble(tools.ptxas_info(ck.sass_ptx, ck.entry, (9, 0)).cubin)
    return [w for ln in text.splitlines() if "/*" in ln and ";" in ln
            for w in ln.split("*/", 1)[-1].split(";")[0].split()[:2]]


@pytest.mark.slow
def test_hashed_atomics_are_one_redg_per_lane_and_a_uniform_int_add_is_aggregated():
    from gpusim.frontend.sass import have_nvdisasm, have_ptxas
    if not (have_ptxas() and have_nvdisasm()):
        pytest.skip("ptxas/nvdisasm missing")
    small = {"blocks": 2, "threads": 64}
    hashed = _sass_ops(MECHANISMS["atomic_bins"].case({"nbins": 256, "iters": 4, **small}))
    assert any(w.startswith("REDG.E.ADD") for w in hashed) and not any(w.startswith("VOTE") for w in hashed)
    uniform = _sass_ops(MECHANISMS["atomic_uniform"].case({"nslots": 1, "iters": 4, **small}))
    assert any(w.startswith("VOTEU.ANY") for w in uniform)
    fl = _sass_ops(MECHANISMS["atomic_uniform"].case({"nslots": 1, "iters": 4, "dtype": "float32", **small}))
    assert any(w.startswith("REDG.E.ADD.F32") for w in fl) and not any(w.startswith("VOTE") for w in fl)
    shared_f32 = _sass_ops(MECHANISMS["shared_bins"].case({"op": "f32", "nbins": 256, "iters": 4, **small}))
    assert any(w.startswith("ATOMS.CAST.SPIN") for w in shared_f32)


def test_counters_ncu_does_not_list_are_dropped_only_from_a_whole_listing():
    listing = "Metric Name   Metric Description\n" + "\n".join(
        f"{m.split('.')[0]}   some description" for m in ncu.CORE + ncu.MECHANISM_METRICS[1:])
    listed = ncu.listed_metrics(listing)
    assert ncu.not_listed(ncu.MECHANISM_METRICS, listed) == [ncu.MECHANISM_METRICS[0]]
    assert ncu.not_listed(ncu.MECHANISM_METRICS, {"dram__bytes", "lts__t_sectors"}) == []
