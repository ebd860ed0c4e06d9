"""programs/hopper_kernels/tma_box: every TMA box case equals its numpy reference, the tensor
maps gpusim encodes are the fields the GPU script gives the driver, and (once recorded) the
bytes equal the GPU's and gpusim refuses exactly the probes the GPU faults on. One property per
test."""
import json
from pathlib import Path

import numpy as np
import pytest

import gpusim
from programs.hopper_kernels import _tma_cases as C
from gpusim.errors import KernelError
from programs.hopper_kernels.tma_box import PROGRAM, launch_case
from validate.datadir import DATA_DIR

DATA = sorted(p for p in DATA_DIR.glob("tma_h*.npz")
              if not p.stem.endswith("_rules"))


def run(case: str):
    c = PROGRAM.case(case)
    gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes)
    return c


def run_probe(name: str):
    c = launch_case(C.PROBES[name], name)
    gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes)
    return c


def verdicts(path: Path) -> dict[str, str]:
    """The GPU's verdict per launch ("ok", "fault: ...", "timeout: ...", "error: ...")."""
    return json.loads(path.with_suffix(".json").read_text())["launches"]


STORES_BEFORE = [n for n, c in C.BOX_CASES.items() if min(c["d"]) < 0]     # the GPU faults on these


@pytest.mark.parametrize("case", [n for n in C.BOX_CASES if n not in STORES_BEFORE])
def test_box_case_equals_the_numpy_reference(case):
    run(case).check()


@pytest.mark.parametrize("case", STORES_BEFORE)
def test_box_case_storing_before_the_tensor_is_refused_at_its_store(case):
    with pytest.raises(KernelError, match=r"illegal instruction \(tensor store before the tensor\) in kernel "
                                          r"tma_box<\d>, at .*tma_box\.cu:\d+ .*: cp\.async\.bulk\.tensor\.\dd\.global"):
        run(case)


@pytest.mark.parametrize("case", list(C.BOX_CASES))
def test_gpu_script_encodes_the_map_gpusim_encodes(case):
    spec = C.BOX_CASES[case]
    t = C.box_tensor(spec)
    kw = C.box_map_keywords(spec)
    assert C.fields(t, 0x7000_0000_0100, **kw) == gpusim.TensorMap(t, **kw).fields(0x7000_0000_0100)


@pytest.mark.parametrize("name", [n for n in C.PROBES if "fault" in C.PROBES[n]])
def test_probe_starting_off_16_bytes_is_refused_at_its_copy(name):
    fault = C.PROBES[name]["fault"]
    op = "cp.async.bulk.tensor.2d.shared::cluster.global" if fault == "load" else "cp.async.bulk.tensor.2d.global"
    with pytest.raises(KernelError, match=rf"illegal instruction \(misaligned tensor copy\) in kernel tma_box<2>, "
                                          rf"at .*tma_box\.cu:\d+ .*: {op}"):
        run_probe(name)


@pytest.mark.parametrize("name", [n for n in C.PROBES if "fault" not in C.PROBES[n]])
def test_swizzled_probe_off_a_1024_byte_boundary_swizzles_by_the_address(name):
    run_probe(name).check()


@pytest.mark.skipif(not DATA, reason="GPU outputs not recorded yet (validate/semantics/tma_record.py)")
@pytest.mark.parametrize("name", list(C.PROBES))
def test_gpusim_refuses_exactly_the_probes_the_gpu_faults_on(name):
    for path in DATA:
        gpu = verdicts(path)[f"probe:{name}"]
        assert gpu == "ok" or gpu.startswith("fault: "), (name, path.name, gpu)
        if gpu.startswith("fault: "):
            with pytest.raises(KernelError, match="illegal instruction"):
                run_probe(name)
        else:
            c = run_probe(name)
            rec = np.load(path)
            assert c.args[2].tobytes() == rec[f"probe:{name}:dump"].tobytes(), path.name
            assert c.args[1].array.tobytes() == rec[f"probe:{name}:out"].tobytes(), path.name


@pytest.mark.skipif(not DATA, reason="GPU outputs not recorded yet (validate/semantics/tma_record.py)")
@pytest.mark.parametrize("case", list(C.BOX_CASES))
def test_box_case_equals_the_gpu_byte_for_byte(case):
    faults = {verdicts(path)[f"box:{case}"].startswith("fault: ") for path in DATA}
    assert len(faults) == 1, case
    if faults.pop():
        with pytest.raises(KernelError, match="illegal instruction"):
            run(case)
        return
    c = run(case)
    for path in DATA:
        assert verdicts(path)[f"box:{case}"] == "ok", (path.name, verdicts(path)[f"box:{case}"])
        rec = np.load(path)
        assert c.args[2].tobytes() == rec[f"box:{case}:dump"].tobytes(), path.name
        assert c.args[1].array.tobytes() == rec[f"box:{case}:out"].tobytes(), path.name


@pytest.mark.skipif(not DATA, reason="GPU outputs not recorded yet (validate/semantics/tma_record.py)")
def test_gpusim_refuses_exactly_the_maps_the_driver_refuses():
    import importlib.util
    from isa.semantics import tensor_map as T
    path = Path(__file__).resolve().parents[2] / "validate" / "semantics" / "tma_record.py"
    spec = importlib.util.spec_from_file_location("tma_record", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = np.zeros((64, 64), np.float16)
    for name, kw in mod.ENCODE_CHECKS.items():
        f = C.fields(m, 0x7000_0000_0000 + kw.get("offset", 0),
                     **{k: v for k, v in kw.items() if k not in ("fields", "offset")})
        for k, v in kw.get("fields", {}).items():
            f = T.TensorMapFields(**{**f.__dict__, k: v})
        for rec in DATA:
            assert (int(np.load(rec)[f"driver:{name}"]) == 0) == (T.problems(f) is None), (name, rec.name)


RULES = sorted(DATA_DIR.glob("tma_h*_rules.npz"))


@pytest.mark.skipif(not RULES, reason="the rule grid not recorded yet (tma_record.py --rules)")
@pytest.mark.parametrize("name", list(C.RULE_PROBES))
def test_gpusim_refuses_exactly_the_rule_probes_the_gpu_faults_on(name):
    for path in RULES:
        gpu = verdicts(path)[f"rule:{name}"]
        assert gpu == "ok" or gpu.startswith("fault: "), (name, path.name, gpu)
        c = launch_case(C.RULE_PROBES[name], name)
        if gpu.startswith("fault: "):
            with pytest.raises(KernelError, match="illegal instruction"):
                gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes)
        else:
            gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", shared_bytes=c.shared_bytes)
            rec = np.load(path)
            assert c.args[2].tobytes() == rec[f"rule:{name}:dump"].tobytes(), path.name
            assert c.args[1].array.tobytes() == rec[f"rule:{name}:out"].tobytes(), path.name
