"""Run every case recorded by `record.py` through gpusim (the GPU's inputs, the program's kernel
and launch) and count the outputs that equal the GPU's bit for bit. No GPU needed:

    python -m validate.tensor_programs.compare data/measurements/tensor_programs_h100.npz [--json OUT.json]
    python -m validate.tensor_programs.compare FILE --sizes default,bf16      # the quick ones only

Prints one line per case (bit-exact, or how many elements differ and the first); exit status 1
when any differs. The tensor-core numerics are pure Python for now: a 128^3 case takes minutes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))     # run as a script from anywhere

import gpusim  # noqa: E402
from programs import load_file  # noqa: E402
from validate.datadir import measurement_file

PROGRAMS = Path(__file__).resolve().parents[2] / "programs" / "cuda_kernels"


def recorded_cases(data) -> list[tuple[str, str]]:
    """(program, size) of every case in a recorded npz, in file order."""
    seen = []
    for key in data.files:
        if key.count("/") == 2 and key.endswith("/C"):
            seen.append(tuple(key.split("/")[:2]))
    return seen


def run_case(data, program: str, size: str):
    """(gpusim's C, the GPU's C) for one recorded case: the program's case at `size`, seed 0,
    with the recorded inputs."""
    case = load_file(PROGRAMS / f"{program}.py").case(size, seed=0)
    a, b = data[f"{program}/{size}/A"], data[f"{program}/{size}/B"]
    want = data[f"{program}/{size}/C"]
    if a.shape != case.args[0].shape or b.shape != case.args[1].shape:
        raise ValueError(f"{program}/{size}: recorded inputs {a.shape}, {b.shape} do not fit the program's "
                         f"{case.args[0].shape}, {case.args[1].shape}")
    c = np.full_like(want, np.nan)
    args = (a.astype(case.args[0].dtype), b.astype(case.args[1].dtype), c) + tuple(case.args[3:])
    gpusim.launch(case.kernel, case.grid, case.block, args, shared_bytes=case.shared_bytes)
    return c, want


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("npz", type=measurement_file)
    ap.add_argument("--sizes", help="comma-separated sizes to run (default: every recorded case)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    data = np.load(args.npz)
    sizes = set(args.sizes.split(",")) if args.sizes else None
    rows, bad = [], 0
    for program, size in recorded_cases(data):
        if sizes is not None and size not in sizes:
            continue
        t = time.time()
        got, want = run_case(data, program, size)
        diff = got.view(np.uint32) != want.view(np.uint32)
        n = int(diff.sum())
        first = tuple(int(i) for i in np.argwhere(diff)[0]) if n else None
        rows.append({"program": program, "size": size, "elements": int(want.size), "differ": n,
                     "first": first, "seconds": round(time.time() - t, 1)})
        bad += n > 0
        print(f"{program:16s} {size:12s} " + ("bit-exact" if not n else
              f"{n} of {want.size} differ, first at {first}: {got[first]!r} vs GPU {want[first]!r}"))
    if args.json:
        prov = json.loads(str(data["provenance"])) if "provenance" in data.files else {}
        args.json.write_text(json.dumps({"data": str(args.npz), "gpu": prov.get("gpu"), "recorded": prov.get("date"),
                                         "cases": rows, "bit_exact": sum(r["differ"] == 0 for r in rows),
                                         "of": len(rows)}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
