"""The fast core's plain loads, stores and cp.async in one compiled call each
(gpusim/functional/fastpath/lsu_fused.py, async_copy.py): the same bytes, counters and faults as
the reference interpreter, through the compiled call (not a fallback)."""
import numpy as np
import pytest

from gpusim.errors import MemoryAccessError
from gpusim.functional import fastpath
from gpusim.functional.fastpath import async_copy, lsu_fused
from ptx_harness import metrics, run_ptx

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"

# 64 threads: each loads a 16-byte vector of src (global), stores it into shared at a stride of 16
# words (2-way bank conflicts), under a guard (every third thread stores nothing), reads back two
# words (2 and 3) of its neighbour's row (shared, a v2 load), and stores a vector of which one
# element is a uniform immediate-held register to dst (global)
VEC = HEAD + """.visible .entry vec_k(.param .u64 psrc, .param .u64 pdst)
{
.shared .align 16 .b8 buf[8192];
.reg .pred %p;
.reg .b32 %tx, %sb, %sa, %sn, %m, %x<4>, %y<2>, %u;
.reg .b64 %g, %o, %d;
ld.param.u64 %g, [psrc]; ld.param.u64 %d, [pdst];
mov.u32 %tx, %tid.x; mov.u32 %sb, buf; mov.u32 %u, 77;
mul.wide.u32 %o, %tx, 16; add.s64 %g, %g, %o; add.s64 %d, %d, %o;
ld.global.v4.u32 {%x0, %x1, %x2, %x3}, [%g];
mad.lo.u32 %sa, %tx, 64, %sb;
rem.u32 %m, %tx, 3; setp.ne.u32 %p, %m, 0;
@%p st.shared.v4.u32 [%sa], {%x0, %x1, %x2, %x3};
bar.sync 0;
xor.b32 %m, %tx, 1; mad.lo.u32 %sn, %m, 64, %sb;
ld.shared.v2.u32 {%y0, %y1}, [%sn+8];
st.global.v4.u32 [%d], {%y0, %y1, %u, %tx};
ret;
}
"""


def _spy(monkeypatch, module, name) -> list:
    calls = []
    f = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a: calls.append(1) or f(*a))
    return calls


def _vec(core):
    src = np.arange(64 * 4, dtype=np.uint32) * 3 + 1
    (_, out), x = run_ptx(VEC, "vec_k", (1, 1, 1), (64, 1, 1), [src, np.zeros(64 * 4, np.uint32)], core=core)
    return src, out, metrics(x)


def test_vector_loads_and_stores_give_the_reference_bytes_and_counters_in_one_compiled_call_each(monkeypatch):
    monkeypatch.setattr(fastpath, "memory_runs", lambda ops: ops)      # each op alone (no `MemoryRunOp`)
    stores, loads = _spy(monkeypatch, lsu_fused, "store"), _spy(monkeypatch, lsu_fused, "load")
    src, out, fast = _vec("fast")
    _, ref_out, ref = _vec("reference")
    assert (len(stores), len(loads)) == (2, 2)
    t = np.arange(64)
    nb = t ^ 1
    rows = np.where((t % 3 != 0)[:, None], src.reshape(64, 4), 0)     # a thread's row: its vector, if it stored
    want = np.stack([rows[nb, 2], rows[nb, 3], np.full(64, 77), t], 1)
    assert out.reshape(64, 4).tolist() == want.tolist() == ref_out.reshape(64, 4).tolist()
    assert fast == ref
    assert fast["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] > 0


def test_a_faulting_lane_of_a_fused_store_is_reported_as_the_reference_reports_it():
    text = VEC.replace("st.global.v4.u32 [%d]", "st.global.v4.u32 [%d+1024]")
    msgs = []
    for core in ("fast", "reference"):
        with pytest.raises(MemoryAccessError) as e:
            run_ptx(text, "vec_k", (1, 1, 1), (64, 1, 1), [np.zeros(256, np.uint32), np.zeros(256, np.uint32)],
                    core=core)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


CP = HEAD + """.visible .entry cp_k(.param .u64 psrc, .param .u64 pdst)
{
.shared .align 16 .b8 buf[4096];
.reg .b32 %tx, %sb, %sa, %v;
.reg .b64 %g, %o, %d;
ld.param.u64 %g, [psrc]; ld.param.u64 %d, [pdst];
mov.u32 %tx, %tid.x; mov.u32 %sb, buf;
mul.wide.u32 %o, %tx, 16; add.s64 %g, %g, %o;
mad.lo.u32 %sa, %tx, 16, %sb;
cp.async.cg.shared.global [%sa], [%g], 16;
cp.async.cg.shared.global [%sa+2048], [%g+2048], 16;
cp.async.commit_group;
cp.async.wait_all;
bar.sync 0;
ld.shared.u32 %v, [%sa+2052];
mul.wide.u32 %o, %tx, 4; add.s64 %d, %d, %o; st.global.u32 [%d], %v;
ret;
}
"""


def _cp(core):
    src = np.arange(1024, dtype=np.uint32) + 5
    (_, out), x = run_ptx(CP, "cp_k", (1, 1, 1), (128, 1, 1), [src, np.zeros(128, np.uint32)], core=core)
    return src, out, metrics(x)


def test_cp_async_counts_in_its_compiled_pass_once_the_counter_rows_exist(monkeypatch):
    # the first cp.async of a launch makes the four ldgsts counter rows (added in Python), the second
    # adds to them in the compiled pass; both give the reference's counts (each copy alone: no `CopyRunOp`)
    monkeypatch.setattr(fastpath, "copy_runs", lambda ops: ops)
    plans = []
    plan = async_copy._plan
    monkeypatch.setattr(async_copy, "_plan", lambda *a: plans.append(a[-5]) or plan(*a))
    src, out, fast = _cp("fast")
    _, ref_out, ref = _cp("reference")
    assert plans == [False, True]
    assert out.tolist() == ref_out.tolist() == src[512 + 4 * np.arange(128) + 1].tolist()
    assert fast == ref
    assert fast["smsp__inst_executed_op_ldgsts.sum"] == 8


# a row of memory instructions with nothing between them (after hoisting): two vector loads of src,
# a guarded store of the first into shared memory, a store of an element of the second and a uniform
# register, one of an immediate, a load back of what the first store wrote, a store of it to dst
ROW = HEAD + """.visible .entry row_k(.param .u64 psrc, .param .u64 pdst)
{
.shared .align 16 .b8 buf[4096];
.reg .pred %p;
.reg .b32 %tx, %sb, %sa, %m, %u, %x<4>, %y<4>, %z<2>;
.reg .b64 %g, %o, %d;
ld.param.u64 %g, [psrc]; ld.param.u64 %d, [pdst];
mov.u32 %tx, %tid.x; mov.u32 %sb, buf; mov.u32 %u, 9;
mul.wide.u32 %o, %tx, 32; add.s64 %g, %g, %o;
mul.wide.u32 %o, %tx, 8; add.s64 %d, %d, %o;
mad.lo.u32 %sa, %tx, 16, %sb;
rem.u32 %m, %tx, 3; setp.ne.u32 %p, %m, 0;
ld.global.v4.u32 {%x0, %x1, %x2, %x3}, [%g];
ld.global.v4.u32 {%y0, %y1, %y2, %y3}, [%g+16];
@%p st.shared.v4.u32 [%sa], {%x0, %x1, %x2, %x3};
st.shared.v2.u32 [%sa+2048], {%y1, %u};
st.shared.u32 [%sa+2056], 5;
ld.shared.v2.u32 {%z0, %z1}, [%sa+8];
st.global.v2.u32 [%d], {%z1, %y0};
ret;
}
"""


def _row(core, src_len=64 * 8):
    src = np.arange(src_len, dtype=np.uint32) * 7 + 3
    (_, out), x = run_ptx(ROW, "row_k", (1, 1, 1), (64, 1, 1), [src, np.zeros(128, np.uint32)], core=core)
    return src, out, metrics(x), x


def test_a_row_of_loads_and_stores_is_one_compiled_pass_with_the_reference_bytes_and_counters(monkeypatch):
    from gpusim.functional.fastpath import memory_run  # here: the pass spied on
    passes = _spy(monkeypatch, memory_run, "run_row")
    src, out, fast, x = _row("fast")
    _, ref_out, ref, _ = _row("reference")
    t = np.arange(64)
    rows = src.reshape(64, 8)
    want = np.stack([np.where(t % 3 != 0, rows[:, 3], 0), rows[:, 4]], 1)    # x3 where stored, and y0
    assert len(passes) == 1 and len(x.dk.blocks[-1].ops) < 8
    assert out.reshape(64, 2).tolist() == want.tolist() == ref_out.reshape(64, 2).tolist()
    assert fast == ref


def test_a_fault_inside_a_row_is_reported_as_the_reference_reports_it():
    msgs = []
    for core in ("fast", "reference"):
        with pytest.raises(MemoryAccessError) as e:
            _row(core, src_len=64 * 8 - 4)     # the last thread's first vector load fits, its second does not
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "thread (63, 0, 0)" in msgs[0] and "PTX line 17" in msgs[0]   # the second load


# a row of copies and commits (async_run.CopyRunOp): a copy on four threads of five whose src-size is a
# register (0 on half of them: zeros), a commit, a copy that bypasses the L1 with an immediate src-size, a commit;
# then both groups waited for and read back
COPIES = HEAD + """.visible .entry cps_k(.param .u64 psrc, .param .u64 pdst)
{
.shared .align 16 .b8 buf[4096];
.reg .pred %p;
.reg .b32 %tx, %sb, %sa, %sz, %m, %v, %w;
.reg .b64 %g, %o, %d;
ld.param.u64 %g, [psrc]; ld.param.u64 %d, [pdst];
mov.u32 %tx, %tid.x; mov.u32 %sb, buf;
mul.wide.u32 %o, %tx, 16; add.s64 %g, %g, %o;
mad.lo.u32 %sa, %tx, 16, %sb;
and.b32 %m, %tx, 2; setp.eq.u32 %p, %m, 0; selp.u32 %sz, 16, 0, %p;
rem.u32 %m, %tx, 5; setp.ne.u32 %p, %m, 0;
@%p cp.async.ca.shared.global [%sa], [%g], 16, %sz;
cp.async.commit_group;
cp.async.cg.shared.global [%sa+2048], [%g+2048], 16, 16;
cp.async.commit_group;
cp.async.wait_all;
bar.sync 0;
ld.shared.u32 %v, [%sa+4]; ld.shared.u32 %w, [%sa+2056];
add.u32 %v, %v, %w;
mul.wide.u32 %o, %tx, 4; add.s64 %d, %d, %o; st.global.u32 [%d], %v;
ret;
}
"""


def _copies(core, src_len=1024):
    src = np.arange(src_len, dtype=np.uint32) * 3 + 1
    (_, out), x = run_ptx(COPIES, "cps_k", (1, 1, 1), (128, 1, 1), [src, np.full(128, 7, np.uint32)], core=core)
    return src, out, metrics(x)


def test_a_row_of_copies_and_commits_is_one_compiled_pass_with_the_reference_bytes_and_counters(monkeypatch):
    from gpusim.functional.fastpath import async_run  # here: the pass spied on
    passes = _spy(monkeypatch, async_run, "run_row")
    src, out, fast = _copies("fast")
    _, ref_out, ref = _copies("reference")
    t = np.arange(128)
    want = np.where((t % 5 != 0) & (t & 2 == 0), src[4 * t + 1], 0) + src[512 + 4 * t + 2]
    assert len(passes) == 1
    assert out.tolist() == want.tolist() == ref_out.tolist()
    assert fast == ref
    assert fast["smsp__inst_executed_op_ldgsts.sum"] == 8


def test_a_copy_that_faults_inside_a_row_is_reported_as_the_reference_reports_it():
    msgs = []
    for core in ("fast", "reference"):
        with pytest.raises(MemoryAccessError) as e:
            _copies(core, src_len=1020)         # the second copy of the last thread reads past the end
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "thread (127, 0, 0)" in msgs[0]


def _ops_of(x, kind) -> list:
    return [op for b in x.dk.blocks for op in b.ops if type(op).__name__ == kind]


@pytest.mark.parametrize("kind,text,entry,threads,src_len,out_len", [
    ("MemoryRunOp", ROW, "row_k", 64, 64 * 8, 128), ("CopyRunOp", COPIES, "cps_k", 128, 1024, 128)])
def test_a_row_run_again_on_the_same_addresses_takes_its_last_placement_and_reads_the_new_data(
        kind, text, entry, threads, src_len, out_len):
    # a kernel's next launch (or a loop's next stage) on new data at the same addresses: each op of the row
    # takes its last run's placement and counts (kept_placement.unchanged), here shown by a count planted there
    # first, and its bytes are the new data's; with the addresses moved it is placed afresh
    src = [np.arange(src_len, dtype=np.uint32) * k + 1 for k in (3, 5)]
    args = lambda i: [src[i], np.zeros(out_len, np.uint32)]
    (_, _), x = run_ptx(text, entry, (1, 1, 1), (threads, 1, 1), args(0), core="fast")
    (op,) = _ops_of(x, kind)
    op.placed[1][0][-1][:, -1] += 1000              # each op's last wavefronts / fill: planted
    (_, out), again = run_ptx(text, entry, (1, 1, 1), (threads, 1, 1), args(1), core="fast", dk=x.dk)
    (_, ref_out), ref = run_ptx(text, entry, (1, 1, 1), (threads, 1, 1), args(1))
    assert out.tolist() == ref_out.tolist()
    planted = {k: v for k, v in metrics(again).items() if metrics(ref).get(k) != v}
    assert planted and all(v >= 1000 for v in planted.values())
    (_, out), moved = run_ptx(text, entry, (1, 1, 1), (threads, 1, 1), args(1), core="fast", dk=x.dk, pad=4096)
    assert out.tolist() == ref_out.tolist() and metrics(moved) == metrics(ref)


def test_a_row_over_more_lanes_than_it_keeps_is_placed_afresh_each_run(monkeypatch):
    # a large launch's batches do not come back: spans of more than KEPT_LANES lanes keep nothing (the kept
    # arrays would be megabytes an op), and run as before (the count planted is never read)
    from gpusim.functional.fastpath import memory_run  # here: the limit lowered below the launch's 64 lanes
    monkeypatch.setattr(memory_run, "KEPT_LANES", 32)
    src = np.arange(64 * 8, dtype=np.uint32) * 3 + 1
    (_, _), x = run_ptx(ROW, "row_k", (1, 1, 1), (64, 1, 1), [src, np.zeros(128, np.uint32)], core="fast")
    (op,) = [op for b in x.dk.blocks for op in b.ops if type(op).__name__ == "MemoryRunOp"]
    assert op.placed[1][0][0].size == 0
    op.placed[1][0][-1][:, -1] += 1000
    (_, out), again = run_ptx(ROW, "row_k", (1, 1, 1), (64, 1, 1), [src, np.zeros(128, np.uint32)], core="fast",
                              dk=x.dk)
    (_, ref_out), ref = run_ptx(ROW, "row_k", (1, 1, 1), (64, 1, 1), [src, np.zeros(128, np.uint32)])
    assert out.tolist() == ref_out.tolist() and metrics(again) == metrics(ref)


STAGES = HEAD + """.visible .entry stg_k(.param .u64 psrc, .param .u64 pdst)
{
.reg .pred %p;
.reg .b32 %tx, %i, %x<2>;
.reg .b64 %g, %o, %d;
ld.param.u64 %g, [psrc]; ld.param.u64 %d, [pdst];
mov.u32 %tx, %tid.x; mov.u32 %i, 0;
mul.wide.u32 %o, %tx, 8; add.s64 %g, %g, %o; add.s64 %d, %d, %o;
$L__loop:
ld.global.u32 %x0, [%g];
ld.global.u32 %x1, [%g+4];
st.global.v2.u32 [%d], {%x1, %x0};
add.s64 %g, %g, 512; add.s64 %d, %d, 512;
add.u32 %i, %i, 1;
setp.lt.u32 %p, %i, 2;
@%p bra $L__loop;
ret;
}
"""


def test_a_loops_row_keeps_a_placement_per_stage_and_takes_each_in_the_next_launch():
    # the loop's two stages read and write other addresses: each keeps its own placement
    # (kept_placement.stage), and the next launch's second stage takes the second (a count planted there)
    src = [np.arange(256, dtype=np.uint32) * k + 1 for k in (3, 5)]
    (_, _), x = run_ptx(STAGES, "stg_k", (1, 1, 1), (64, 1, 1), [src[0], np.zeros(256, np.uint32)], core="fast")
    (op,) = _ops_of(x, "MemoryRunOp")
    assert len(op.placed[1]) == 2
    op.placed[1][1][-1][:, -1] += 1000              # the second stage's wavefronts: planted
    (_, out), again = run_ptx(STAGES, "stg_k", (1, 1, 1), (64, 1, 1), [src[1], np.zeros(256, np.uint32)],
                              core="fast", dk=x.dk)
    (_, ref_out), ref = run_ptx(STAGES, "stg_k", (1, 1, 1), (64, 1, 1), [src[1], np.zeros(256, np.uint32)])
    assert out.tolist() == ref_out.tolist() == src[1].reshape(-1, 2)[:, ::-1].reshape(-1).tolist()
    planted = {k: v - metrics(ref)[k] for k, v in metrics(again).items() if metrics(ref).get(k) != v}
    assert planted and all(d > 0 and d % 1000 == 0 for d in planted.values())     # (1000 an op)
