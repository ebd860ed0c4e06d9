"""Which 256-B chunks of global memory share an L2 atomic unit (the slice hash), and what a
unit costs per pass (issue 24, docs/mechanisms_24.md sections 1 and 8).

`validate/data/atomic_banks_h200.json` showed that 64 int bins split over two 256-B chunks take
~183 us when the chunks go to different atomic units and ~340 us when they share one, and that
which chunks share depends on their address (a hash), not on banks. That probe only placed
chunks up to 4 KiB apart. This one maps the hash:

- `pairs`: the same-unit test for chunk c0 against c0 ^ m, for chunk-index masks m = one bit
  (addresses 256 B .. 32 MiB apart) and two bits (both below 2 MiB), at several bases c0: if
  the hash is XOR-linear in the address bits, "same" depends on m only;
- `classes`: every 256-B chunk of the first 2 MiB (one large page: virtual = physical bits
  below 21) sorted into units, greedily (each chunk tested against one chunk of every unit
  found so far until one is the same), with a wall-clock budget;
- `sets`: k contiguous chunks (k = 2 .. 256) at a few offsets, uniform keys over the first
  line of each: how many passes run at a time against the hash's collisions;
- `rates`: one chunk, one address, 2 and 4 chunks on different units, for int adds (RED),
  int adds with the old value used (ATOM), float adds (RED, ATOM), and no contention
  (2^17 .. 2^22 bins): each kind's time per pass against the int one (the clock is not
  locked; `sm_clock_mhz` is nvidia-smi's reading while kernels run).

    python -m validate.atomic_units_probe --out $OUT/atomic_units_h200.json

CUDA events only; 1056 x 256 threads. Under 5 minutes on an H200 (classes: `--budget-s`, 150 by
default; what it did not classify is listed as -1).
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import time
from pathlib import Path

import numpy as np
from numba import cuda, float32, int32, uint32

from validate.mechanisms.common import mix32

SEED = 0x2545F491
BLOCKS, THREADS = 1056, 256
CHUNK_WORDS = 64                                  # a 256-B chunk of int32/float32 words
BUF_WORDS = (64 << 20) // 4                       # 64 MiB: chunk-index bits 0..17 (addresses 256 B .. 32 MiB)
PAGE_CHUNKS = (2 << 20) // 256                    # chunks of one 2-MiB page
SPACERS = 4                                       # unpaced launches ahead of every timed batch (_launch_times)
PAIR_ITERS = 2                                    # atomics a thread in a same-unit test: ~160 us one unit, ~80 two


def _kernels(one):
    @cuda.jit
    def pair(buf, a, b, iters, seed):
        """Uniform keys over the first line (32 words) of chunk words a and b."""
        g = uint32(cuda.grid(1))
        for r in range(iters):
            k = mix32(g, uint32(r), seed)
            base = a if (k & uint32(32)) == uint32(0) else b
            cuda.atomic.add(buf, base + (k & uint32(31)), one)

    @cuda.jit
    def table(buf, tab, tmask, wmask, iters, seed):
        """Uniform keys: chunk word offset tab[(k >> 20) & tmask] + (k & wmask)."""
        g = uint32(cuda.grid(1))
        for r in range(iters):
            k = mix32(g, uint32(r), seed)
            cuda.atomic.add(buf, tab[(k >> uint32(20)) & tmask] + (k & wmask), one)

    @cuda.jit
    def table_ret(buf, old, tab, tmask, wmask, iters, seed):
        g = uint32(cuda.grid(1))
        acc = one - one
        for r in range(iters):
            k = mix32(g, uint32(r), seed)
            acc += cuda.atomic.add(buf, tab[(k >> uint32(20)) & tmask] + (k & wmask), one)
        old[g] = acc

    return pair, table, table_ret


K = {"i32": _kernels(int32(1)), "f32": _kernels(float32(1.0))}


def _launch_times(launches) -> list[float]:
    """Each of `launches` ((kernel, args) pairs) in us, run back to back: `SPACERS` unpaced launches
    of the first go ahead, so that no event waits on the host (numba's launch takes tens of us of
    Python; an event recorded on an idle GPU would count that gap: with one spacer of ~80 us, the
    first time of each batch of the 12:51 H100 run was 170-195 us where its repeats gave 79-155),
    then an event between every two launches."""
    k0, a0 = launches[0]
    for _ in range(SPACERS):                       # keep the GPU busy while the first ones are queued
        k0[BLOCKS, THREADS](*a0)
    evs = [cuda.event() for _ in range(len(launches) + 1)]
    evs[0].record()
    for i, (k, a) in enumerate(launches):
        k[BLOCKS, THREADS](*a)
        evs[i + 1].record()
    evs[-1].synchronize()
    return [cuda.event_elapsed_time(evs[i], evs[i + 1]) * 1e3 for i in range(len(launches))]


def _launch_time(kernel, args, reps: int) -> float:
    """Median of `reps` back-to-back launches, in us."""
    return float(np.median(_launch_times([(kernel, args)] * reps)))


class Probe:
    def __init__(self):
        self.buf = {"i32": cuda.to_device(np.zeros(BUF_WORDS, np.int32)),
                    "f32": cuda.to_device(np.zeros(BUF_WORDS // 8, np.float32))}
        self.old = {"i32": cuda.device_array(BLOCKS * THREADS, np.int32),
                    "f32": cuda.device_array(BLOCKS * THREADS, np.float32)}
        self.seed = np.uint32(SEED)
        self.tests = 0

    def _pair_args(self, c0: int, c1: int, iters: int, second_line: int = 0):
        return (K["i32"][0], (self.buf["i32"], np.uint32(c0 * CHUNK_WORDS),
                              np.uint32(c1 * CHUNK_WORDS + 32 * second_line), np.uint32(iters), self.seed))

    def pair(self, c0: int, c1: int, iters: int = PAIR_ITERS, reps: int = 1, second_line: int = 0) -> float:
        """c0 and c1 (chunk indices); second_line: the second line of c1 instead of its first."""
        self.tests += reps
        return float(np.median(_launch_times([self._pair_args(c0, c1, iters, second_line)] * reps)))

    def pairs(self, pairs, iters: int = PAIR_ITERS) -> list[float]:
        """pair() of each (c0, c1), back to back, one launch each."""
        self.tests += len(pairs)
        return _launch_times([self._pair_args(a, b, iters) for a, b in pairs])

    def table(self, chunks, wmask: int, iters: int = 4, dt: str = "i32", ret: bool = False, reps: int = 5,
              words=None) -> float:
        """chunks: chunk indices (a power of two of them); words: word offsets instead."""
        w = np.asarray(words if words is not None else [c * CHUNK_WORDS for c in chunks], np.uint32)
        assert len(w) & (len(w) - 1) == 0
        tab = cuda.to_device(w)
        _, tk, rk = K[dt]
        scal = (np.uint32(len(w) - 1), np.uint32(wmask), np.uint32(iters), self.seed)
        if ret:
            return _launch_time(rk, (self.buf[dt], self.old[dt], tab) + scal, reps)
        return _launch_time(tk, (self.buf[dt], tab) + scal, reps)


def _sm_clock_during(probe: Probe) -> dict:
    """nvidia-smi's SM clock while a queue of contended kernels runs."""
    tab = cuda.to_device(np.zeros(1, np.uint32))
    _, tk, _ = K["i32"]
    for _ in range(300):
        tk[BLOCKS, THREADS](probe.buf["i32"], tab, np.uint32(0), np.uint32(63), np.uint32(4), probe.seed)
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        q = f"nvidia-smi failed: {e}"
    cuda.synchronize()
    return {"nvidia_smi_sm_mhz_current_max": q}


def part_pairs(probe: Probe, res: dict) -> tuple[float, float]:
    """Same-unit tests c0 vs c0 ^ m; returns (same, different) reference times."""
    # reference: the two lines of chunk 0 (one unit by definition); different units: the fastest pairs
    t_one = probe.pair(0, 0, reps=5, second_line=1)
    bases = (0, 1, 2, 3, 6, 77, 1000, 4097)
    singles = [1 << k for k in range(18)]
    doubles = [(1 << j) | (1 << k) for j in range(13) for k in range(j + 1, 13)]
    rows = {}
    for c0 in bases:
        ms = [m for m in singles + doubles if (c0 ^ m) * CHUNK_WORDS + CHUNK_WORDS <= BUF_WORDS]
        t = np.median([probe.pairs([(c0, c0 ^ m) for m in ms]) for _ in range(3)], axis=0)
        rows[c0] = {m: round(float(v), 2) for m, v in zip(ms, t)}
    allt = np.array([v for r in rows.values() for v in r.values()])
    t_diff = float(np.percentile(allt, 10))
    res["pairs"] = {"unit": f"us, median of 3 launches of 1056 x 256 threads x {PAIR_ITERS} int32 RED, uniform over the "
                            "first 128 B of chunk c0 and of chunk c0 ^ mask (chunk = 256 B)",
                    "one_chunk_both_lines_us": round(t_one, 2), "fast_reference_us": round(t_diff, 2),
                    "times": {str(c0): {str(m): v for m, v in r.items()} for c0, r in rows.items()}}
    return t_one, t_diff


def part_classes(probe: Probe, res: dict, t_same: float, t_diff: float, budget_s: float, nchunks: int) -> None:
    """Greedy: each chunk against one chunk of every unit found so far: chunks 0 .. nchunks - 1,
    then chunks beyond the first page (one and two high bits, and random ones up to 64 MiB)."""
    thr = math.sqrt(t_same * t_diff)
    rng = np.random.default_rng(1)
    high = [1 << j for j in range(13, 18)] + [(1 << j) | (1 << k) for j in range(13, 18) for k in range(j + 1, 18)]
    extra = high + [int(x) for x in rng.integers(PAGE_CHUNKS, BUF_WORDS // CHUNK_WORDS, 64)]
    order = list(range(min(nchunks, 2048))) + extra + list(range(2048, nchunks))     # the high bits early
    reps, cls, ambiguous, doubles = [], {}, 0, 0
    t0 = time.time()
    for c in order:
        if time.time() - t0 > budget_s:
            break
        if c in cls:
            continue
        if reps:                                    # against every unit found so far, back to back
            t = probe.pairs([(r, c) for r in reps])
            u = int(np.argmax(t))
            if u == 0 or 0.85 * thr < t[u] < 1.15 * thr:     # a batch's first, or near the threshold: again
                ambiguous += 1
                t[u] = probe.pair(reps[u], c, reps=5)
            second = sorted(t)[-2] if len(t) > 1 else 0.0
            if second > thr:
                doubles += 1                            # two units look alike: the test is not sharp
            if t[u] > thr:
                cls[c] = u
                continue
        cls[c] = len(reps)
        reps.append(c)
    res["classes"] = {"chunks": nchunks, "classified": sum(1 for c in range(nchunks) if c in cls),
                      "units_found": len(reps), "threshold_us": round(thr, 2), "ambiguous_retested": ambiguous,
                      "two_units_above_threshold": doubles, "wall_s": round(time.time() - t0, 1), "representatives": reps,
                      "unit_of_chunk": [cls.get(c, -1) for c in range(nchunks)],
                      "extra_chunks": {str(c): cls[c] for c in extra if c in cls}}


def part_sets(probe: Probe, res: dict) -> None:
    out = {}
    for k in (2, 4, 8, 16, 32, 64, 128, 256):
        for off in (0, 2, 5, 64, 1000, 4096):
            chunks = [off + i for i in range(k)]
            out[f"k{k}_at{off}"] = round(probe.table(chunks, 31, iters=4), 2)
    res["sets"] = {"unit": "us, median of 5 launches, 1056 x 256 threads x 4 int32 RED, uniform over the first "
                           "128 B of each of k contiguous 256-B chunks starting at chunk `at`", "times": out}


def part_rates(probe: Probe, res: dict) -> None:
    out = {}
    same = [0, 0]
    diff2 = [0, 1]
    diff4 = [8192 + 2, 8192 + 3, 8192 + 4, 8192 + 5]   # 512 mod 1024: 4 units on the H200 (atomic_banks_h200)
    for dt in ("i32", "f32"):
        for ret in (False, True):
            kind = f"{dt}{'_ret' if ret else ''}"
            out[f"{kind}_one_address"] = probe.table(same, 0, dt=dt, ret=ret)
            out[f"{kind}_one_sector"] = probe.table(same, 7, dt=dt, ret=ret)
            out[f"{kind}_one_chunk"] = probe.table(same, 63, dt=dt, ret=ret)
            out[f"{kind}_two_chunks_apart"] = probe.table(diff2, 31, dt=dt, ret=ret)
            out[f"{kind}_four_chunks_1KiB_at_512"] = probe.table(diff4, 31, dt=dt, ret=ret)
            nmax = 22 if dt == "i32" else 19                # the float buffer is 8 MiB
            for nb in (17, 20, nmax):
                out[f"{kind}_uncontended_2^{nb}_bins"] = probe.table(same, (1 << nb) - 1, iters=16, dt=dt, ret=ret)
    res["rates"] = {"unit": "us, median of 5 launches, 1056 x 256 threads x 4 atomics (uncontended: 16)",
                    "times": {k: round(v, 2) for k, v in out.items()}}


# ---- analysis (on the host, from the file) ----------------------------------------------------

def _reduce(basis: list[int], v: int) -> int:
    """v reduced by a GF(2) basis kept in echelon form (highest bit first)."""
    for b in basis:
        if v ^ b < v:
            v ^= b
    return v


def _span_add(basis: list[int], v: int) -> bool:
    """Add v to the echelon basis; False if it was already in the span."""
    v = _reduce(basis, v)
    if not v:
        return False
    basis.append(v)                          # its leading bit is no other element's
    basis.sort(reverse=True)
    return True


def _null_space(rows: list[int], bits: int) -> list[int]:
    """A basis of {h : parity(h & r) = 0 for every r in rows}, over `bits` bits."""
    piv: dict[int, int] = {}                 # pivot bit -> row, fully reduced
    for r in rows:
        for p, q in piv.items():
            if r >> p & 1:
                r ^= q
        if r:
            p = r.bit_length() - 1
            for p2 in piv:
                if piv[p2] >> p & 1:
                    piv[p2] ^= r
            piv[p] = r
    out = []
    for f in range(bits):
        if f in piv:
            continue
        h = 1 << f
        for p, q in piv.items():
            if q >> f & 1:
                h |= 1 << p
        out.append(h)
    return out


def fit_linear_hash(res: dict, bits: int = 18) -> dict:
    """From the pairs part: the chunk-index masks m with c0 and c0 ^ m on one unit (the hash's
    kernel, if it is XOR-linear), whether every base agrees, and address-bit masks whose parities
    give the unit (a basis of the kernel's annihilator, bits 8 .. 8 + bits - 1)."""
    thr = math.sqrt(res["pairs"]["one_chunk_both_lines_us"] * res["pairs"]["fast_reference_us"])
    same: dict[int, set] = {}
    for c0, row in res["pairs"]["times"].items():
        for m, t in row.items():
            same.setdefault(int(m), set()).add(t > thr)
    disagree = sorted(m for m, v in same.items() if len(v) > 1)
    kernel: list[int] = []
    for m, v in sorted(same.items()):
        if v == {True}:
            _span_add(kernel, m)
    contradictions = sorted(m for m, v in same.items() if v == {False} and _reduce(kernel, m) == 0)
    ann = _null_space(kernel, bits)           # h with parity(h & k) = 0 for every k of the kernel
    return {"threshold_us": round(thr, 2), "kernel_chunk_masks": [hex(k) for k in kernel],
            "bases_disagree_on": [hex(m) for m in disagree], "contradictions": [hex(m) for m in contradictions],
            "unit_bits": len(ann), "address_masks": [hex(h << 8) for h in ann]}


def fit_from_classes(res: dict) -> dict:
    """The hash from the classes part, if XOR-linear: the chunks on chunk 0's unit are its kernel
    (a subspace), every other unit a coset of it; chunks beyond the page add the high bits."""
    cl = res["classes"]
    cls = {c: u for c, u in enumerate(cl["unit_of_chunk"]) if u >= 0}
    cls.update({int(c): u for c, u in cl.get("extra_chunks", {}).items()})
    kernel: list[int] = []
    for c, u in sorted(cls.items()):
        if u == cls[0]:
            _span_add(kernel, c)
    # linear iff c and c' share a unit exactly when c ^ c' is in the kernel: check every chunk
    # against its unit's first chunk, and every unit's first chunk against the others
    first: dict[int, int] = {}
    for c, u in sorted(cls.items()):
        first.setdefault(u, c)
    bad_same = sum(1 for c, u in cls.items() if _reduce(kernel, c ^ first[u]))
    firsts = sorted(first.values())
    bad_diff = sum(1 for i, a in enumerate(firsts) for b in firsts[i + 1:] if not _reduce(kernel, a ^ b))
    ann = _null_space(kernel, max(cls).bit_length())
    sizes: dict[int, int] = {}
    for u in cls.values():
        sizes[u] = sizes.get(u, 0) + 1
    return {"chunks_classified": len(cls), "units": len(first), "kernel_dim": len(kernel),
            "kernel_chunk_masks": [hex(k) for k in kernel], "chunks_off_their_coset": bad_same,
            "units_that_should_be_one": bad_diff, "unit_bits": len(ann),
            "address_masks": [hex(h << 8) for h in ann],
            "chunks_per_unit_min_max": [min(sizes.values()), max(sizes.values())]}


def difference_profile(res: dict, top: int = 40) -> dict:
    """For every chunk-index difference d inside the classified range: the share of chunks c with
    c and c ^ d on one unit (1 or 0 for every d if the hash is XOR-linear; between for others),
    the d sharing most often, and the XOR-linear hash whose kernel is the span of the d shared
    by more than half (its agreement with the measured units over every pair (c, c ^ d))."""
    cls = np.array(res["classes"]["unit_of_chunk"])
    n = 1 << int(np.log2(max(1, int((cls >= 0).sum()))))
    cls = cls[:n]
    idx = np.arange(n)
    share = np.array([float((cls == cls[idx ^ d]).mean()) for d in range(n)])
    order = np.argsort(-share[1:]) + 1
    kernel: list[int] = []
    for d in order:
        if share[d] > 0.5:
            _span_add(kernel, int(d))
    ann = _null_space(kernel, n.bit_length() - 1)
    h = np.zeros(n, np.int64)
    for i, m in enumerate(ann):
        h |= ((np.bitwise_count(idx & m) & 1) << i).astype(np.int64)
    agree = float(np.mean([((cls == cls[idx ^ d]) == (h == h[idx ^ d])).mean() for d in range(1, n)]))
    hist = np.histogram(share[1:], bins=10, range=(0, 1))[0].tolist()
    return {"chunks": n, "share_histogram_0_to_1": hist,
            "most_shared": [[hex(int(d)), round(float(share[d]), 3)] for d in order[:top]],
            "linear_fit_kernel": [hex(k) for k in kernel], "linear_fit_unit_bits": len(ann),
            "linear_fit_address_masks": [hex(m << 8) for m in ann], "linear_fit_pair_agreement": round(agree, 4)}


def _addr(arr) -> int:
    """The device address of a device array (-1 under the CUDA simulator)."""
    ptr = getattr(arr, "device_ctypes_pointer", None)
    return int(ptr.value) if ptr is not None else -1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget-s", type=float, default=150.0, help="wall-clock budget of the classes part")
    ap.add_argument("--chunks", type=int, default=PAGE_CHUNKS, help="chunks the classes part sorts (from 0)")
    ap.add_argument("--parts", default="pairs,rates,sets,classes")
    ap.add_argument("--analyse", action="store_true", help="read --out (a measured file) and print the fitted hash")
    args = ap.parse_args(argv)
    if args.analyse:
        res = json.loads(args.out.read_text())
        fit = fit_linear_hash(res)
        print(json.dumps(fit, indent=1))
        if "classes" in res:
            print(json.dumps(fit_from_classes(res), indent=1))
            print(json.dumps(difference_profile(res), indent=1))
        return 0
    dev = cuda.get_current_device()
    probe = Probe()
    res = {"gpu": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
           "buffer_mod2MiB": {k: _addr(v) % (2 << 20) for k, v in probe.buf.items()},
           "buffer_addr_hex": {k: hex(_addr(v)) for k, v in probe.buf.items()},
           "blocks": BLOCKS, "threads": THREADS, "chunk_bytes": CHUNK_WORDS * 4}
    t0 = time.time()
    probe.pair(0, 1, reps=3)                              # compile and warm up
    probe.table([0], 31)
    probe.table([0], 31, ret=True)
    probe.table([0], 31, dt="f32")
    probe.table([0], 31, dt="f32", ret=True)
    res["clock"] = _sm_clock_during(probe)
    parts = args.parts.split(",")
    t_same, t_diff = probe.pair(0, 0, reps=5, second_line=1), probe.pair(0, 1, reps=5)
    if "pairs" in parts:
        t_same, t_diff = part_pairs(probe, res)
        print("pairs", round(time.time() - t0, 1), "s", flush=True)
    if "rates" in parts:
        part_rates(probe, res)
        print("rates", round(time.time() - t0, 1), "s", flush=True)
    if "sets" in parts:
        part_sets(probe, res)
        print("sets", round(time.time() - t0, 1), "s", flush=True)
    if "classes" in parts:
        part_classes(probe, res, t_same, t_diff, args.budget_s, args.chunks)
        print("classes", res["classes"]["classified"], "chunks,", res["classes"]["units_found"], "units",
              round(time.time() - t0, 1), "s", flush=True)
    res["tests"] = probe.tests
    res["wall_s"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
