"""The numerics and layout steps of the tensor-core probe (`validate/semantics/tensor_probe.py`):
write the operands of every `mma.sync` / `wgmma` case as registers and shared-memory images,
run them through `tensor_cu/numerics.cu` in batches, and keep the raw result registers.

- `mma`: operands from `tensor_inputs.build`, packed by `isa.semantics.mma_layout.frag_map`;
  case 0 of each form (small integers) must come back exact, which checks the fragment layouts.
- `ldsm`: ldmatrix/stmatrix/movmatrix on canonical and random lane addresses; the loads are
  compared with the PTX ISA's documented lane mapping (`ldsm_expected`).
- `wgmma`: a layout stage first (the same exact product through every candidate
  (swizzle, descriptor convention) of `mma_layout.smem_offsets`; K-major forms decide the
  K-major choice, MN-major forms vary only their MN-major operand), then every form through the
  chosen layouts (K-major 128B swizzle where it is exact). The last case of every form repeats
  case 0 with scale-d = 0 (D = A B).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from isa.semantics import mma_layout as L
from isa.semantics.tensor_formats import FORMATS, decode
from validate.semantics import tensor_forms as T
from validate.semantics import tensor_inputs as I
from validate.semantics.probe_run import Run, run_jobs

UDTYPE = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
LDSM_VARIANTS = ("ld_x1", "ld_x2", "ld_x4", "ld_x1_t", "ld_x2_t", "ld_x4_t",
                 "st_x1", "st_x2", "st_x4", "st_x1_t", "st_x2_t", "st_x4_t", "movmatrix_t")
LAYOUT_STAGE_FORMS = ("w_f16_f32_n64", "w_e4m3e4m3_f32_n64", "w_tf32_f32_n128",
                      "w_f16_f32_n64_ta", "w_f16_f32_n64_tb", "w_f16_f32_n128_tb")


# ----------------------------------------------------------------------------- inputs
def mma_inputs(quick: bool) -> dict[str, dict]:
    out = {}
    for i, f in enumerate(T.MMA_FORMS):
        m, n, k = f.mnk
        out[f.name] = I.build(f.atype, f.btype, f.ctype, k, m, n, quick, i)
    return out


def wgmma_inputs(quick: bool) -> dict[str, dict]:
    out = {}
    for i, f in enumerate(T.WGMMA_FORMS):
        full = f.n == 8
        d = I.build(f.atype, f.btype, f.dtype, f.k, 64, f.n, quick or not full, 1000 + i, crafted=full)
        if not full:      # layout forms: the layout case and up to 3 random cases
            keep = [0] + [j for j, lab in enumerate(d["labels"]) if lab.startswith("r_")][:3]
            d = {"A": d["A"][keep], "B": d["B"][keep], "C": d["C"][keep],
                 "labels": [d["labels"][j] for j in keep], "tests": []}
        # one more copy of the layout case with scale-d = 0 (D = A B, C ignored)
        for key in ("A", "B", "C"):
            d[key] = np.concatenate([d[key], d[key][:1]])
        d["labels"] = list(d["labels"]) + ["layout_scale_d0"]
        d["scale_d"] = np.ones(len(d["labels"]), np.int64)
        d["scale_d"][-1] = 0
        out[f.name] = d
    return out


def bits_of(t: str) -> int:
    return T.TYPES[t][0]


def exact_value(bits: np.ndarray, t: str) -> np.ndarray:
    """Decode bit patterns of type t to float64 (ints as two's complement)."""
    b = np.asarray(bits)
    if t in ("s8", "u8", "s32"):
        w = bits_of(t)
        v = b.astype(np.int64) & ((1 << w) - 1)
        if t != "u8":
            v = np.where(v >= 1 << (w - 1), v - (1 << w), v)
        return v.astype(np.float64)
    if t == "f64":
        return b.astype(np.uint64).view(np.float64)
    return decode(b, FORMATS[t])


def expected_layout_d(A, B, C, atype, btype, ctype, scale_d=1) -> np.ndarray:
    a, b, c = exact_value(A, atype), exact_value(B, btype), exact_value(C, ctype)
    return a @ b + (c if scale_d else 0)


def put_form(store: dict, name: str, d: dict, atype: str, btype: str, ctype: str, D: np.ndarray) -> None:
    store[f"{name}:A"] = d["A"].astype(UDTYPE[bits_of(atype)])
    store[f"{name}:B"] = d["B"].astype(UDTYPE[bits_of(btype)])
    store[f"{name}:C"] = d["C"].astype(UDTYPE[bits_of(ctype)])
    store[f"{name}:D_regs"] = D.astype(np.uint32)
    store[f"{name}:labels"] = np.array(d["labels"])
    store[f"{name}:test_case_col"] = np.array([(c, col) for c, col, _ in d["tests"]], np.int32).reshape(-1, 2)
    store[f"{name}:test_label"] = np.array([lab for _, _, lab in d["tests"]])


# ----------------------------------------------------------------------------- mma + ldsm jobs
def mma_jobs(inputs: dict, tmp: Path) -> list:
    jobs = []
    for i, f in enumerate(T.MMA_FORMS):
        d = inputs[f.name]
        ab, cb = bits_of(f.atype), bits_of(f.ctype)
        ra = L.pack(d["A"], L.frag_map(f.shape, "a", ab), ab)
        rb = L.pack(d["B"], L.frag_map(f.shape, "b", ab), ab)
        rc = L.pack(d["C"], L.frag_map(f.shape, "c", cb), cb)
        fin, fout = tmp / f"mma_{i}.in", tmp / f"mma_{i}.out"
        fin.write_bytes(ra.astype(np.uint32).tobytes() + rb.astype(np.uint32).tobytes() + rc.astype(np.uint32).tobytes())
        jobs.append((f"mma:{f.name}", ["mma", str(i), str(d["A"].shape[0]), str(fin), str(fout)], fout))
    return jobs


def mma_collect(run: Run, inputs: dict, tmp: Path, store: dict, summary: dict) -> None:
    for i, f in enumerate(T.MMA_FORMS):
        fout = tmp / f"mma_{i}.out"
        d = inputs[f.name]
        ncase = d["A"].shape[0]
        if not fout.exists():
            summary[f.name] = {"error": "no output"}
            continue
        m, n, _ = f.mnk
        cb = bits_of(f.ctype)
        D = np.frombuffer(fout.read_bytes(), np.uint32).reshape(ncase, 32, -1)
        dm = L.unpack(D[0], L.frag_map(f.shape, "c", cb), cb, (m, n))
        want = expected_layout_d(d["A"][0], d["B"][0], d["C"][0], f.atype, f.btype, f.ctype)
        ok = bool(np.array_equal(exact_value(dm, f.ctype), want))
        put_form(store, f.name, d, f.atype, f.btype, f.ctype, D)
        summary[f.name] = {"ptx": f.ptx, "cases": ncase, "tests": len(d["tests"]), "layout_exact": ok}
        run.log(f"  {f.name}: {ncase} cases, layout check {'ok' if ok else 'MISMATCH'}")


def ldsm_sets() -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(I.SEED)
    sets = []
    for v in range(len(LDSM_VARIANTS)):
        canon = np.array([(lane % 8) * 64 + (lane // 8) * 16 for lane in range(32)], np.uint32)
        rand = (rng.choice(16384 // 16 - 1, 32, replace=False) * 16).astype(np.uint32)
        sets += [(v, canon), (v, rand)]
    return sets


def ldsm_job(tmp: Path) -> tuple:
    sets = ldsm_sets()
    raw = np.concatenate([np.concatenate([[v], a]).astype(np.uint32) for v, a in sets])
    fin, fout = tmp / "ldsm.in", tmp / "ldsm.out"
    fin.write_bytes(raw.tobytes())
    return ("ldsm", ["ldsm", str(len(sets)), str(fin), str(fout)], fout)


def ldsm_expected(variant: str, addrs: np.ndarray) -> np.ndarray:
    """Documented (PTX ISA) ldmatrix registers (32, 4): row addresses from lanes 8j..8j+7."""
    lane = np.arange(32)
    x = int(variant.split("_")[1][1])
    regs = np.full((32, 4), 0xDEADBEEF, np.int64)
    for j in range(x):
        row = addrs[8 * j: 8 * j + 8] // 2                     # halfword index of each row
        if not variant.endswith("_t"):
            lo = row[lane // 4] + (lane % 4) * 2
            hi = lo + 1
        else:
            lo = row[2 * (lane % 4)] + lane // 4
            hi = row[2 * (lane % 4) + 1] + lane // 4
        regs[:, j] = lo | (hi << 16)
    return regs


def ldsm_collect(run: Run, tmp: Path, store: dict, summary: dict) -> None:
    sets = ldsm_sets()
    fout = tmp / "ldsm.out"
    if not fout.exists():
        summary["_ldsm"] = {"error": "no output"}
        return
    b = fout.read_bytes()
    nr = len(sets) * 128 * 4
    regs = np.frombuffer(b[:nr], np.uint32).reshape(len(sets), 32, 4)
    smem = np.frombuffer(b[nr:], np.uint16).reshape(len(sets), 8192)
    store["ldsm:variant"] = np.array([LDSM_VARIANTS[v] for v, _ in sets])
    store["ldsm:addr"] = np.stack([a for _, a in sets])
    store["ldsm:regs"] = regs
    store["ldsm:smem"] = smem
    res = {}
    for s, (v, a) in enumerate(sets):
        name = LDSM_VARIANTS[v]
        ok = None              # stores and movmatrix: compared offline against the stored values
        if name.startswith("ld_"):
            x = int(name[4])
            ok = bool(np.array_equal(regs[s, :, :x].astype(np.int64), ldsm_expected(name, a.astype(np.int64))[:, :x]))
        res[f"{name}#{s % 2}"] = ok
    summary["_ldsm"] = res
    run.log(f"  ldmatrix: {sum(1 for v in res.values() if v)} of {sum(1 for v in res.values() if v is not None)} as documented")


# ----------------------------------------------------------------------------- wgmma jobs
def wgmma_image(f: T.WgmmaForm, A: np.ndarray, B: np.ndarray, lay_a: tuple, lay_b: tuple):
    """Shared-memory image bytes and (desc A, desc B) for one case; lay_* = (swizzle, convention)."""
    ab, bb = bits_of(f.atype), bits_of(f.btype)
    offa, lboa, sboa = L.smem_offsets(64, f.k, ab, "mn" if f.trans_a else "k", *lay_a)
    offb, lbob, sbob = L.smem_offsets(f.n, f.k, bb, "mn" if f.trans_b else "k", *lay_b)
    b0 = (int(offa.max()) + ab // 8 + 1023) // 1024 * 1024
    size = (b0 + int(offb.max()) + bb // 8 + 1023) // 1024 * 1024
    img = np.zeros(size, np.uint8)
    if not f.a_regs:
        L.write_operand(img, 0, A, offa, ab)
    L.write_operand(img, b0, B.T, offb, bb)
    return img, L.make_desc(0, lboa, sboa, lay_a[0]), L.make_desc(b0, lbob, sbob, lay_b[0])


def wgmma_job(f: T.WgmmaForm, idx: int, A, B, C, scale_d, layouts, tmp: Path, label: str) -> tuple:
    """Write one job: cases each with their own ((swizzle, conv) of A, of B)."""
    imgs, descs = [], []
    for c in range(A.shape[0]):
        img, da, db = wgmma_image(f, A[c], B[c], *layouts[c])
        imgs.append(img)
        descs.append((da, db, int(scale_d[c])))
    size = max(len(x) for x in imgs)
    image = np.zeros((len(imgs), size), np.uint8)
    for c, x in enumerate(imgs):
        image[c, :len(x)] = x
    cb = bits_of(f.dtype)
    rc = L.pack(C, L.wgmma_acc_map(f.n, cb), cb)
    if f.a_regs:
        ab = bits_of(f.atype)
        ra = L.pack(A, L.wgmma_a_regs_map(f.k, ab), ab)
    else:
        ra = np.zeros((A.shape[0], 128, 4), np.uint32)
    fin, fout = tmp / f"wg_{idx}_{label}.in", tmp / f"wg_{idx}_{label}.out"
    fin.write_bytes(image.tobytes() + np.array(descs, np.uint64).tobytes() + ra.astype(np.uint32).tobytes()
                    + rc.astype(np.uint32).tobytes())
    return (f"wgmma:{f.name}:{label}", ["wgmma", str(idx), str(A.shape[0]), str(size), str(fin), str(fout)], fout)


def read_d(job: tuple, ncase: int) -> np.ndarray | None:
    out = job[2]
    if not out.exists():
        return None
    return np.frombuffer(out.read_bytes(), np.uint32).reshape(ncase, 128, -1)


def wgmma_exact(f: T.WgmmaForm, D, A, B, C, scale_d) -> bool:
    cb = bits_of(f.dtype)
    dm = L.unpack(D, L.wgmma_acc_map(f.n, cb), cb, (64, f.n))
    return bool(np.array_equal(exact_value(dm, f.dtype), expected_layout_d(A, B, C, f.atype, f.btype, f.dtype, scale_d)))


CANDIDATES = [(sw, conv) for sw in ("128B", "64B", "32B", "none") for conv in L.DESC_CONVENTIONS]


def _stage_layouts(f: T.WgmmaForm, kchoice: tuple) -> list:
    """Per candidate: (layout of A, layout of B); a K-major operand of an MN-major form keeps kchoice."""
    if not (f.trans_a or f.trans_b):
        return [(c, c) for c in CANDIDATES]
    return [(c if f.trans_a else kchoice, c if f.trans_b else kchoice) for c in CANDIDATES]


def _pick(ok: dict) -> tuple | None:
    good = [c for c in CANDIDATES if ok.get(f"{c[0]}/{c[1]}")]
    return next((c for c in good if c[0] == "128B"), good[0] if good else None)


def layout_stage(run: Run, exe: Path, inputs: dict, tmp: Path, store: dict, summary: dict) -> dict:
    """Run the candidate layouts; K-major forms first (they fix the K-major choice)."""
    idx = {f.name: i for i, f in enumerate(T.WGMMA_FORMS)}
    stage, choice = {}, {}
    nc = len(CANDIDATES)
    for group in (LAYOUT_STAGE_FORMS[:3], LAYOUT_STAGE_FORMS[3:]):
        jobs, meta = [], []
        for name in group:
            f, d = T.WGMMA_BY_NAME[name], inputs[name]
            A, B, C = (np.repeat(d[key][:1], nc, 0) for key in ("A", "B", "C"))
            lays = _stage_layouts(f, choice.get("k", ("128B", "lbo_k")))
            jobs.append(wgmma_job(f, idx[name], A, B, C, np.ones(nc, np.int64), lays, tmp, "layout"))
            meta.append((name, f, A, B, C, lays))
        run_jobs(run, exe, jobs, f"layout{len(stage)}", tmp)
        for job, (name, f, A, B, C, lays) in zip(jobs, meta):
            D = read_d(job, nc)
            if D is None:          # a candidate may fault: one by one
                single = [wgmma_job(f, idx[name], A[c:c + 1], B[c:c + 1], C[c:c + 1], np.ones(1, np.int64),
                                    lays[c:c + 1], tmp, f"layout{c}") for c in range(nc)]
                run_jobs(run, exe, single, f"layout_{name}", tmp)
                parts = [read_d(j, 1) for j in single]
                if all(p is None for p in parts):
                    stage[name] = {"error": "no output"}
                    continue
                D = np.stack([p[0] if p is not None else np.full((128, f.nacc), 0xFFFFFFFF, np.uint32) for p in parts])
            ok = {f"{sw}/{conv}": wgmma_exact(f, D[c], A[c], B[c], C[c], 1) for c, (sw, conv) in enumerate(CANDIDATES)}
            for key, arr, t in (("A", A, f.atype), ("B", B, f.btype), ("C", C, f.dtype)):
                store[f"layout:{name}:{key}"] = arr[0].astype(UDTYPE[bits_of(t)])
            store[f"layout:{name}:D_regs"] = D
            stage[name] = ok
            run.log(f"  layout {name}: exact for {[k for k, v in ok.items() if v]}")
        if "k" not in choice:
            choice["k"] = _pick(stage.get("w_f16_f32_n64", {})) or ("128B", "lbo_k")
    choice["mn_a"] = _pick(stage.get("w_f16_f32_n64_ta", {})) or choice["k"]
    choice["mn_b"] = _pick(stage.get("w_f16_f32_n128_tb", {})) or choice["k"]
    summary["_layout_stage"] = {"candidates": [f"{sw}/{conv}" for sw, conv in CANDIDATES], "exact": stage,
                                "note": "MN-major forms vary only their MN-major operand; the other keeps the K-major choice"}
    summary["_layout_choice"] = {k: list(v) for k, v in choice.items()}
    run.log(f"  wgmma layouts used: {choice}")
    return choice


def wgmma_numerics(run: Run, exe: Path, inputs: dict, tmp: Path, store: dict, summary: dict, choice: dict) -> None:
    jobs, meta = [], []
    for i, f in enumerate(T.WGMMA_FORMS):
        d = inputs[f.name]
        lay = (choice["mn_a"] if f.trans_a else choice["k"], choice["mn_b"] if f.trans_b else choice["k"])
        n = d["A"].shape[0]
        jobs.append(wgmma_job(f, i, d["A"], d["B"], d["C"], d["scale_d"], [lay] * n, tmp, "num"))
        meta.append((f, d, lay, n))
    run_jobs(run, exe, jobs, "wgmma", tmp)
    for job, (f, d, lay, n) in zip(jobs, meta):
        D = read_d(job, n)
        if D is None:
            summary[f.name] = {"error": "no output"}
            continue
        ok = wgmma_exact(f, D[0], d["A"][0], d["B"][0], d["C"][0], 1)
        ok0 = wgmma_exact(f, D[-1], d["A"][-1], d["B"][-1], d["C"][-1], 0)
        put_form(store, f.name, d, f.atype, f.btype, f.dtype, D)
        store[f"{f.name}:scale_d"] = d["scale_d"]
        store[f"{f.name}:layout"] = np.array([list(lay[0]), list(lay[1])])
        summary[f.name] = {"ptx": f.ptx, "a_regs": f.a_regs, "trans_a": f.trans_a, "trans_b": f.trans_b,
                           "cases": n, "tests": len(d["tests"]), "layout_a_b": [list(lay[0]), list(lay[1])],
                           "layout_exact": ok, "scale_d0_exact": ok0}
        run.log(f"  {f.name}: {n} cases, layout check {'ok' if ok else 'MISMATCH'}, scale-d 0 {'ok' if ok0 else 'MISMATCH'}")


def run_all(run: Run, exe: Path, mma_in: dict, wg_in: dict, tmp: Path, store_mma: dict, store_wg: dict,
            summary: dict) -> None:
    """Batch 1: every mma form and the ldmatrix sets; then the wgmma layout stage; then wgmma."""
    jobs = (run.guard("mma jobs", mma_jobs, mma_in, tmp) or []) + [ldsm_job(tmp)]
    run_jobs(run, exe, jobs, "mma", tmp)
    run.guard("mma collect", mma_collect, run, mma_in, tmp, store_mma, summary)
    run.guard("ldsm collect", ldsm_collect, run, tmp, store_wg, summary)
    if wg_in:
        choice = run.guard("wgmma layout stage", layout_stage, run, exe, wg_in, tmp, store_wg, summary)
        choice = choice or {"k": ("128B", "lbo_k"), "mn_a": ("128B", "lbo_k"), "mn_b": ("128B", "lbo_k")}
        run.guard("wgmma numerics", wgmma_numerics, run, exe, wg_in, tmp, store_wg, summary, choice)
