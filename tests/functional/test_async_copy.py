"""cp.async with commit/wait groups, mbarrier phases, elect.sync, setmaxnreg and
fence.proxy.async on the functional core (gpusim.functional.async_ops)."""
import numpy as np
import pytest
from numba.core.dispatcher import _DispatcherBase

from gpusim.errors import MemoryAccessError
from gpusim.functional.fastpath import async_copy
from isa.errors import UnsupportedInstruction
from ptx_harness import metrics, run_ptx

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def cp_kernel(copy: str, wait: str, size: int = 16) -> str:
    """Each of 32 threads copies `size` bytes src[tid] -> shared, reads it back before and after `wait`."""
    return HEAD + f""".visible .entry cp_k(.param .u64 psrc, .param .u64 pbefore, .param .u64 pafter)
{{
.shared .align 16 .b8 buf[1024];
.reg .b32 %tx, %sb, %sa, %v, %w;
.reg .b64 %g, %o, %b, %a;
ld.param.u64 %g, [psrc]; ld.param.u64 %b, [pbefore]; ld.param.u64 %a, [pafter];
mov.u32 %tx, %tid.x; mov.u32 %sb, buf;
mul.wide.u32 %o, %tx, {size}; add.s64 %g, %g, %o;
mad.lo.u32 %sa, %tx, {size}, %sb;
{copy}
cp.async.commit_group;
ld.shared.u32 %v, [%sa];
{wait}
ld.shared.u32 %w, [%sa];
mul.wide.u32 %o, %tx, 4; add.s64 %b, %b, %o; add.s64 %a, %a, %o;
st.global.u32 [%b], %v; st.global.u32 [%a], %w;
ret;
}}
"""


def _run(copy, wait, size=16):
    src = np.arange(32 * size // 4, dtype=np.uint32) + 1
    (s, before, after), x = run_ptx(cp_kernel(copy, wait, size), "cp_k", (1, 1, 1), (32, 1, 1),
                                    [src, np.zeros(32, np.uint32), np.zeros(32, np.uint32)])
    return src, before, after, x


def test_copy_lands_at_the_wait_not_before():
    src, before, after, _ = _run("cp.async.cg.shared.global [%sa], [%g], 16;", "cp.async.wait_group 0;")
    assert before.tolist() == [0] * 32 and after.tolist() == src[::4].tolist()


def test_wait_group_1_leaves_the_newest_group_pending():
    _, _, after, _ = _run("cp.async.ca.shared.global [%sa], [%g], 16;", "cp.async.wait_group 1;")
    assert after.tolist() == [0] * 32


def test_src_size_zero_fills_the_rest():
    src, _, after, _ = _run("cp.async.ca.shared.global [%sa], [%g], 8, 0;", "cp.async.wait_all;", size=8)
    assert after.tolist() == [0] * 32


def test_src_size_zero_reads_nothing_so_an_out_of_bounds_source_is_no_fault():
    # Triton's pipelined loops prefetch past the end of a matrix with src-size 0 (masked off)
    _, _, after, x = _run("add.s64 %g, %g, 65536;\ncp.async.cg.shared.global [%sa], [%g], 16, 0;",
                          "cp.async.wait_all;")
    assert after.tolist() == [0] * 32 and metrics(x)["sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"] == 0


def test_partial_src_size_reads_only_its_bytes_at_the_end_of_a_buffer():
    # the source ends 8 bytes into thread 31's 16-byte window: only the 8 bytes it reads must exist
    src = np.arange(32 * 4 - 2, dtype=np.uint32) + 1
    (_, _, after), _ = run_ptx(cp_kernel("cp.async.ca.shared.global [%sa], [%g], 16, 8;", "cp.async.wait_all;"),
                               "cp_k", (1, 1, 1), (32, 1, 1), [src, np.zeros(32, np.uint32), np.zeros(32, np.uint32)])
    assert after.tolist() == src[::4].tolist()


CACHED = "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum"
BYPASS = "sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"


@pytest.mark.parametrize("cache, sectors, other", [
    ("ca", CACHED, BYPASS),     # LDGSTS through the L1
    ("cg", BYPASS, CACHED)])    # LDGSTS.BYPASS
def test_ldgsts_counters_under_nsights_name_for_the_cache_operator(cache, sectors, other):
    _, _, _, x = _run(f"cp.async.{cache}.shared.global [%sa], [%g], 16;", "cp.async.wait_all;")
    m = metrics(x)
    assert (m["smsp__inst_executed_op_ldgsts.sum"], m[sectors],
            m["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"]) == (1, 16, 4)
    assert other not in m


def test_misaligned_cp_async_names_the_instruction():
    with pytest.raises(MemoryAccessError, match="misaligned.*thread .*16-byte store by cp.async"):
        _run("add.u32 %sa, %sa, 4;\ncp.async.cg.shared.global [%sa], [%g], 16;", "cp.async.wait_all;")


def test_bulk_reduction_is_refused_by_name():
    with pytest.raises(UnsupportedInstruction, match=r"cp\.reduce\.async\.bulk"):
        _run("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%g], [%sa], 16;", "cp.async.wait_all;")


MBAR = HEAD + """.visible .entry mb_k(.param .u64 pout)
{
.shared .align 8 .b64 bar;
.reg .b32 %tx, %w, %sb, %r, %ph;
.reg .b64 %o, %st;
.reg .pred %p, %e, %done;
ld.param.u64 %o, [pout];
mov.u32 %tx, %tid.x; mov.u32 %sb, bar; shr.u32 %w, %tx, 5;
elect.sync %r|%e, -1;
setmaxnreg.inc.sync.aligned.u32 240;
setp.eq.u32 %p, %tx, 0;
@%p mbarrier.init.shared::cta.b64 [%sb], 2;
bar.sync 0;
fence.proxy.async.shared::cta;
mov.u32 %ph, 0;
mbarrier.test_wait.parity.shared::cta.b64 %done, [%sb], %ph;
selp.u32 %r, 1, 0, %done;
@%e mbarrier.arrive.shared::cta.b64 %st, [%sb];
$WAIT:
mbarrier.try_wait.parity.shared::cta.b64 %done, [%sb], %ph;
@!%done bra $WAIT;
mul.wide.u32 %o, %tx, 4;
ld.param.u64 %st, [pout]; add.s64 %o, %o, %st;
st.global.u32 [%o], %r;
ret;
}
"""


def test_mbarrier_phase_completes_after_both_warps_arrive():
    (out,), _ = run_ptx(MBAR, "mb_k", (1, 1, 1), (64, 1, 1), [np.full(64, 7, np.uint32)])
    assert out.tolist() == [0] * 64          # phase 0 incomplete before the arrivals; both warps pass the wait


MBAR_TOKEN = HEAD + """.visible .entry mbt_k(.param .u64 pout)
{
.shared .align 8 .b64 bar;
.reg .b32 %tx, %sb, %r, %odd;
.reg .b64 %o, %st, %tok;
.reg .pred %p, %done;
ld.param.u64 %o, [pout];
mov.u32 %tx, %tid.x; mov.u32 %sb, bar;
setp.eq.u32 %p, %tx, 0;
@%p mbarrier.init.shared::cta.b64 [%sb], 1;
bar.sync 0;
@%p mbarrier.arrive.shared::cta.b64 %st, [%sb];
bar.sync 0;
and.b32 %odd, %tx, 1;
cvt.u64.u32 %tok, %odd; shl.b64 %tok, %tok, 63;
mbarrier.test_wait.shared::cta.b64 %done, [%sb], %tok;
selp.u32 %r, 1, 0, %done;
mul.wide.u32 %st, %tx, 4; add.s64 %o, %o, %st;
st.global.u32 [%o], %r;
ret;
}
"""


def test_a_wait_on_a_state_token_passes_once_that_tokens_phase_completed():
    # one arrival completes phase 0: even threads wait on a phase-0 token (passes), odd ones on a
    # phase-1 token (not yet), every lane of both warps with its own token
    (out,), _ = run_ptx(MBAR_TOKEN, "mbt_k", (1, 1, 1), (64, 1, 1), [np.full(64, 7, np.uint32)])
    assert out.tolist() == [1, 0] * 32


def test_elect_sync_picks_the_lowest_member_lane():
    text = HEAD + """.visible .entry el_k(.param .u64 pout)
{
.reg .b32 %tx, %r, %v; .reg .b64 %o, %a; .reg .pred %e;
ld.param.u64 %a, [pout]; mov.u32 %tx, %tid.x;
elect.sync %r|%e, 0xfffffff0;
selp.u32 %v, 100, 0, %e; add.u32 %v, %v, %r;
mul.wide.u32 %o, %tx, 4; add.s64 %a, %a, %o; st.global.u32 [%a], %v;
ret;
}
"""
    (out,), _ = run_ptx(text, "el_k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32)])
    assert out.tolist() == [4] * 4 + [104] + [4] * 27


def test_setmaxnreg_operand_is_checked():
    bad = MBAR.replace("setmaxnreg.inc.sync.aligned.u32 240", "setmaxnreg.inc.sync.aligned.u32 250")
    with pytest.raises(UnsupportedInstruction, match="setmaxnreg.*multiple of 8"):
        run_ptx(bad, "mb_k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)])


CP_MIX = HEAD + """.visible .entry cpmix_k(.param .u64 psrc, .param .u64 pout)
{
.shared .align 16 .b8 buf[2048];
.reg .b32 %tx, %gt, %sb, %sa, %sz, %w, %m;
.reg .b64 %g, %o, %a;
.reg .pred %p, %q;
ld.param.u64 %g, [psrc]; ld.param.u64 %a, [pout];
mov.u32 %tx, %tid.x; mov.u32 %gt, %ctaid.x; mad.lo.u32 %gt, %gt, 64, %tx;
mov.u32 %sb, buf;
and.b32 %m, %tx, 7; mad.lo.u32 %sa, %m, 128, %sb;       // 8 rows 128 B apart: bank conflicts
shr.u32 %w, %tx, 3; mad.lo.u32 %sa, %w, 16, %sa;
mul.wide.u32 %o, %gt, 16; add.s64 %g, %g, %o;
rem.u32 %m, %tx, 3; setp.ne.u32 %p, %m, 0;             // a guard: every third thread copies nothing
and.b32 %m, %tx, 4; setp.eq.u32 %q, %m, 0;
selp.u32 %sz, 16, 0, %q;                                 // src-size 0 on half the threads ...
@!%q add.s64 %g, %g, 1048576;                            // ... whose source lies far outside
@%p cp.async.cg.shared.global [%sa], [%g], 16, %sz;
cp.async.commit_group;
cp.async.wait_all;
bar.sync 0;
ld.shared.u32 %m, [%sa];
mul.wide.u32 %o, %gt, 4; add.s64 %a, %a, %o; st.global.u32 [%a], %m;
ret;
}
"""


@pytest.mark.parametrize("core", ["fast", "reference"])
def test_cp_async_of_two_blocks_mixed_guards_and_src_sizes(core):
    # fast core (fastpath/async_copy.py) and reference give the same bytes and counters: 42
    # sectors read (copy_counts.copy_pieces: the two 16-byte halves of a global sector go to rows
    # 128 B apart, two shared sectors, so a sector both halves of which are copied is read twice;
    # 8 distinct sectors a warp), and 17 fill wavefronts on average (copy_counts.fill_wavefronts: each reading lane's
    # 16 bytes alone in its global line's share of a row, the zero-filling lanes by row and phase)
    src = np.arange(128 * 4, dtype=np.uint32) + 1
    (_, out), x = run_ptx(CP_MIX, "cpmix_k", (2, 1, 1), (64, 1, 1), [src, np.full(128, 7, np.uint32)], core=core)
    t = np.arange(128) % 64
    want = np.where((t % 3 != 0) & (t & 4 == 0), src[::4], 0)
    assert out.tolist() == want.tolist()
    m = metrics(x)
    assert (m["smsp__inst_executed_op_ldgsts.sum"], m["sm__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"],
            m["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"]) == (4, 42, 68)


def test_the_fast_cp_async_reaches_its_compiled_passes_without_retyping_its_arguments(monkeypatch):
    """numba's compiled dispatch takes no call that leaves out a default argument: each such call
    types its arguments in Python again (0.5-1 ms a cp.async step)."""
    text = cp_kernel("cp.async.ca.shared.global [%sa], [%g], 16;", "cp.async.wait_group 0;")
    src = np.arange(128, dtype=np.uint32) + 1

    def run():
        return run_ptx(text, "cp_k", (1, 1, 1), (32, 1, 1), [src, np.zeros(32, np.uint32), np.zeros(32, np.uint32)],
                       core="fast")[0][2]

    run()
    typed, fast = [], []
    original_typing, original_run = _DispatcherBase._compile_for_args, async_copy.FastCpAsyncOp.run
    monkeypatch.setattr(_DispatcherBase, "_compile_for_args",
                        lambda self, *a, **k: typed.append(self.py_func.__name__) or original_typing(self, *a, **k))
    monkeypatch.setattr(async_copy.FastCpAsyncOp, "run", lambda self, x: fast.append(1) or original_run(self, x))
    assert (run() == src[::4]).all() and fast and typed == []
