"""wgmma.mma_async with its fence/commit/wait executed over warpgroups (gpusim.functional.wgmma_ops,
isa.semantics.wgmma), against the H200 registers recorded by validate/semantics/tensor_probe.py
(data/measurements/tensor_wgmma_h200.npz: every numerics form through its recorded descriptor layout)."""

import numpy as np
import pytest

from gpusim.errors import BarrierError, KernelError
from gpusim.functional.wgmma_operands import element_indices, read, taken
from isa.errors import UnsupportedInstruction
from mma_kernels import wgmma_kernel
from ptx_harness import metrics, run_ptx
from wgmma_cases import imms, layout_stage, recorded, run_cases
from validate.semantics.tensor_forms import WGMMA_FORMS
from validate.datadir import DATA_DIR

DATA = np.load(DATA_DIR / "tensor_wgmma_h200.npz")
FORMS = [f for f in WGMMA_FORMS if f"{f.name}:A" in DATA]
BIG = {f.name for f in FORMS if f.n >= 64}


def run_form(f, cases, core="reference"):
    return recorded(DATA, f, cases, core)


@pytest.mark.parametrize("form", [f for f in FORMS if f.name not in BIG], ids=lambda f: f.name)
def test_first_and_scale_d0_cases_are_bit_exact(form):
    n = len(DATA[f"{form.name}:A"])
    got, _ = run_form(form, [0, n - 1])
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"][[0, n - 1]])


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_every_recorded_case_is_bit_exact(form):
    """On the fast core: its wgmma op is the reference core's (it only runs the kernel's shared-
    memory fill loop faster), so the result is the same, in a fraction of the time."""
    n = len(DATA[f"{form.name}:A"])
    got, _ = run_form(form, slice(0, n), core="fast")
    assert np.array_equal(got, DATA[f"{form.name}:D_regs"])


def _form(name):
    return next(f for f in FORMS if f.name == name)


def test_gmma_counter_counts_one_per_warp():
    _, x = run_form(_form("w_f16_f32_n8"), slice(0, 3))
    assert metrics(x)["sm__inst_executed_pipe_tensor_op_gmma.sum"] == 3 * 4


def _case_args(f, n):
    A, B, C, sd = (DATA[f"{f.name}:{k}"][:n] for k in ("A", "B", "C", "scale_d"))
    return A, B, C, sd, [tuple(tuple(v) for v in DATA[f"{f.name}:layout"])] * n


def test_both_inputs_negated_by_imm_scale_give_the_recorded_result():
    f = _form("w_f16_f32_n8")
    got, _ = run_cases(f, *_case_args(f, 2), imm=", -1, -1, 0, 0")
    assert np.array_equal(got, DATA[f"{f.name}:D_regs"][:2])


def test_one_input_negated_by_imm_scale_changes_the_result():
    f = _form("w_f16_f32_n8")
    got, _ = run_cases(f, *_case_args(f, 1), imm=", -1, 1, 0, 0")
    assert not np.array_equal(got, DATA[f"{f.name}:D_regs"][:1])


def test_block_of_three_warps_is_refused_with_the_line():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 16384)
    z = np.zeros((1, 16384), np.uint8)
    d = np.zeros((1, 3), np.uint64)
    with pytest.raises(BarrierError, match="warpgroup.*3 warps"):
        run_ptx(text, "wg_k", (1, 1, 1), (96, 1, 1), [z, d, np.zeros((96, 4), np.uint32),
                                                        np.zeros((96, 4), np.uint32), np.zeros((96, 4), np.uint32)])


LAYOUT_FORMS = sorted({k.split(":")[1] for k in DATA.files if k.startswith("layout:")})


@pytest.mark.slow
@pytest.mark.parametrize("name", LAYOUT_FORMS)
def test_every_layout_stage_candidate_reads_what_the_gpu_read(name):
    """The probe's layout stage fed each form's exact case through 8 (swizzle, LBO meaning)
    descriptor candidates; gpusim decodes every one, right or wrong, as the H200 did, and
    refuses (an out-of-bounds shared access) those that faulted on the GPU (on the fast core, as
    above)."""
    assert np.array_equal(layout_stage(DATA, _form(name), core="fast"), DATA[f"layout:{name}:D_regs"])


def test_warpgroup_with_an_exited_warp_is_refused():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 16384)
    text = text.replace("mov.u32 %tx, %tid.x;\n", "mov.u32 %tx, %tid.x;\nsetp.ge.u32 %q, %tx, 96;\n@%q ret;\n")
    z = np.zeros((1, 128, 4), np.uint32)
    with pytest.raises(BarrierError, match="warp 3 of its warpgroup has exited"):
        run_ptx(text, "wg_k", (1, 1, 1), (128, 1, 1), [np.zeros((1, 16384), np.uint8), np.zeros((1, 3), np.uint64),
                                                         z, z, z.copy()])


def test_fast_core_runs_wgmma_through_the_reference_op():
    f = _form("w_bf16_f32_n8")
    got, _ = run_cases(f, *_case_args(f, 1), core="fast")
    assert np.array_equal(got, DATA[f"{f.name}:D_regs"][:1])


def test_sparse_form_is_refused_with_its_name():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx.replace("mma_async", "mma_async.sp"), f.nacc, f.dtype, False, imms(f), 16384)
    z = np.zeros((1, 128, 4), np.uint32)
    with pytest.raises(UnsupportedInstruction, match="wgmma.*sparse"):
        run_ptx(text, "wg_k", (1, 1, 1), (128, 1, 1), [np.zeros((1, 16384), np.uint8), np.zeros((1, 3), np.uint64),
                                                         z, z, z.copy()])


def test_descriptor_that_differs_across_a_warp_is_refused():
    f = _form("w_f16_f32_n8")
    text = wgmma_kernel(f.ptx, f.nacc, f.dtype, False, imms(f), 16384)
    text = text.replace("add.s64 %db, %db, %sb64;\n", "add.s64 %db, %db, %sb64;\ncvt.u64.u32 %o, %tx;\nadd.s64 %db, %db, %o;\n")
    z = np.zeros((1, 128, 4), np.uint32)
    with pytest.raises(KernelError, match="non-uniform operand.*lane 1"):
        run_ptx(text, "wg_k", (1, 1, 1), (128, 1, 1), [np.zeros((1, 16384), np.uint8), np.zeros((1, 3), np.uint64),
                                                         z, z, z.copy()])


def test_operand_plans_are_kept_for_the_next_launch_of_the_kernel(monkeypatch):
    """A wgmma step's operand plan (its warps' descriptors checked, their addresses) is kept on the
    decoded kernel: a second launch of the same Triton matmul runs its wgmmas without working one
    out again, and gives the same output."""
    pytest.importorskip("triton")
    import gpusim                                              # here: the launch API
    from gpusim.functional.wgmma_ops import WgmmaOp             # here: the spies' target
    from programs.triton_kernels import matmul                  # here: a Triton program (an optional extra)
    calls = {"plan": 0, "run": 0}
    plan, run = WgmmaOp._plan, WgmmaOp.run

    def counted(name, fn):
        def wrapper(self, *a):
            calls[name] += 1
            return fn(self, *a)
        return wrapper
    monkeypatch.setattr(WgmmaOp, "_plan", counted("plan", plan))
    monkeypatch.setattr(WgmmaOp, "run", counted("run", run))
    outs = []
    for _ in range(2):
        c = matmul.PROGRAM.case("default", seed=3)
        gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
        outs.append(c.args[2].tobytes())
    first = dict(calls)
    c = matmul.PROGRAM.case("default", seed=3)
    gpusim.launch(c.kernel, c.grid, c.block, c.args, gpu="h100", workers=1, **c.options)
    assert calls["run"] > first["run"] and calls["plan"] == first["plan"]
    assert outs[0] == outs[1] == c.args[2].tobytes()


@pytest.mark.parametrize("bits", [8, 16, 32])
def test_the_kept_operand_gather_reads_what_the_reference_read_reads(bits):
    """An operand gathered through the element indices a plan keeps (`element_indices`, `taken`)
    is, element for element, what the reference read of the same descriptor addresses gives
    (`read`: `read_operand` on byte addresses), each warp in its own block's window."""
    from types import SimpleNamespace   # here: a stand-in for the load/store unit's shared memory
    rng = np.random.default_rng(bits)
    smem = rng.integers(0, 256, 4 * 8192, dtype=np.uint8)
    lsu = SimpleNamespace(shared=smem, shared_stride=8192, shared_bytes=8192)
    table = rng.integers(0, 1000, (2, 64, 16)).astype(np.int64) * (bits // 8)
    idx, row0, base = np.array([0, 1, 1]), np.array([0, 16, 32]), np.array([0, 8192, 16384])
    want = read(lsu, table, idx, row0, base, 16, bits)
    got = taken(smem, element_indices(table, idx, row0, base, 16, bits, 8192), bits)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("negate", [False, True])
def test_the_one_call_gather_and_product_is_the_gathers_then_the_product(negate):
    """`mma_taken` (both operands gathered from shared memory and multiplied into the accumulators
    in one compiled call) writes what `taken` for each operand and then `mma_batch.mma_acc` write;
    an index outside shared memory makes it write nothing and say so."""
    from isa.semantics import mma_batch as MB           # here: the two-call path it stands for
    from isa.semantics import wgmma as W                # here: the form and its accumulator places
    from gpusim.functional.wgmma_operands import mma_taken   # here: under test
    f = W.WgmmaForm(n=16, k=16, atype="f16", btype="f16", dtype="f32", a_regs=False)
    rng = np.random.default_rng(5)
    smem = rng.integers(0, 256, 2 * 8192, dtype=np.uint8)
    smem[1::2] &= 0x7B                                  # finite f16s, some subnormal
    warps = np.arange(4)
    a_table = rng.integers(0, 2000, (1, 64, 16)).astype(np.int64) * 2
    b_table = rng.integers(0, 2000, (1, 16, 16)).astype(np.int64) * 2
    a_at = element_indices(a_table, np.zeros(4, np.int64), 16 * warps, np.full(4, 8192), 16, 16, 8192)
    b_at = element_indices(b_table, np.zeros(1, np.int64), np.zeros(1, np.int64), np.full(1, 8192), 16, 16, 8192)
    lanes = 128
    cpos, tpos, plan, narrow = W.acc_places(f, lanes, warps)
    acc0 = rng.standard_normal((f.nacc, lanes)).astype(np.float32).view(np.uint32)
    zero_c = np.array([False, True, False, False])
    want = acc0.copy()
    MB.mma_acc(taken(smem, a_at, 16), taken(smem, b_at, 16), np.zeros(4, np.int64), want.reshape(-1).view(narrow),
               cpos, tpos, zero_c, plan, negate_a=negate, negate_b=False)
    got = acc0.copy()
    assert mma_taken(smem, b_at, 16, a_at, 16, None, np.zeros(4, np.int64), got.reshape(-1).view(narrow), cpos, tpos,
                     zero_c, plan, negate, False)
    assert np.array_equal(got, want) and not np.array_equal(got, acc0)
    far = a_at.copy()
    far[3, 15, 15] = smem.size                          # one element past shared memory
    kept = acc0.copy()
    assert not mma_taken(smem, b_at, 16, far, 16, None, np.zeros(4, np.int64), kept.reshape(-1).view(narrow), cpos,
                         tpos, zero_c, plan, negate, False)
    assert np.array_equal(kept, acc0)


@pytest.mark.parametrize("atype,k", [("f16", 16), ("e4m3", 32), ("tf32", 8)])
def test_a_gathered_from_the_registers_arrays_is_a_from_their_rows(atype, k):
    """A from registers gathered from each register's own array (`a_from_registers`: no copy into
    rows first) is element for element what the gather from their rows gives (`a_from_rows`)."""
    from isa.semantics import wgmma as W                # here: under test
    f = W.WgmmaForm(n=16, k=k, atype=atype, btype=atype, dtype="f32", a_regs=True)
    rng = np.random.default_rng(k)
    rows = rng.integers(0, 1 << 32, (4, 8 * 32), dtype=np.uint32)      # four registers over 8 warps' lanes
    warps = np.array([1, 2, 5, 6])
    want = W.a_from_rows(f, rows, warps)
    got = W.a_from_registers(f, [r.copy() for r in rows], warps)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("atype,k", [("f16", 16), ("e4m3", 32)])
def test_the_one_call_with_a_from_registers_is_the_gather_then_the_product(atype, k):
    """`mma_registers` (A gathered from its four registers' arrays, B taken from shared memory and
    both multiplied into the accumulators in one compiled call) writes what `a_from_registers`,
    `taken` and `mma_batch.mma_acc` write; a B index outside shared memory makes it write nothing."""
    from isa.semantics import mma_batch as MB           # here: the three-step path it stands for
    from isa.semantics import wgmma as W                # here: the form, A's gather, the accumulator places
    from gpusim.functional.wgmma_operands import mma_registers   # here: under test
    f = W.WgmmaForm(n=16, k=k, atype=atype, btype=atype, dtype="f32", a_regs=True)
    rng = np.random.default_rng(k)
    bits = W.ELEM_BITS[atype]
    smem = rng.integers(0, 256, 2 * 8192, dtype=np.uint8)
    smem[1::2] &= 0x7B                                  # finite f16s (and e4m3s), some subnormal
    warps = np.arange(4)
    regs = list(rng.integers(0, 1 << 32, (4, 128), dtype=np.uint32) & np.uint32(0x3B3B3B3B))   # small finite values
    b_table = rng.integers(0, 2000, (1, 16, k)).astype(np.int64) * (bits // 8)
    b_at = element_indices(b_table, np.zeros(1, np.int64), np.zeros(1, np.int64), np.full(1, 8192), 16, bits, 8192)
    cpos, tpos, plan, narrow = W.acc_places(f, 128, warps)
    acc0 = rng.standard_normal((f.nacc, 128)).astype(np.float32).view(np.uint32)
    zero_c = np.array([False, True, False, False])
    want = acc0.copy()
    MB.mma_acc(W.a_from_registers(f, regs, warps), taken(smem, b_at, bits), np.zeros(4, np.int64),
               want.reshape(-1).view(narrow), cpos, tpos, zero_c, plan)
    got = acc0.copy()
    assert mma_registers(smem, b_at, bits, regs, f, warps, np.zeros(4, np.int64), got.reshape(-1).view(narrow), cpos,
                         tpos, zero_c, plan, False, False)
    assert np.array_equal(got, want) and not np.array_equal(got, acc0)
    far = b_at.copy()
    far[0, 15, k - 1] = smem.size // (bits // 8)        # one element past shared memory
    kept = acc0.copy()
    assert not mma_registers(smem, far, bits, regs, f, warps, np.zeros(4, np.int64), kept.reshape(-1).view(narrow),
                             cpos, tpos, zero_c, plan, False, False)
    assert np.array_equal(kept, acc0)
