"""Compare gpusim's outputs of the Triton tensor-core programs with those recorded on a GPU by
`validate/triton_record.py` (no GPU needed):

    python -m validate.triton_compare data/measurements/triton_outputs_h100.npz [--write FILE.json]

For every case of the file it checks that the program builds the recorded inputs (seed 0), then
runs, on the preset of the recording GPU (h100 or h200) unless noted:
- `recorded_ptx`: the very PTX the GPU ran (Triton's own sm_90a compile, and the sm_80 compile
  JIT-run on the same GPU) through `gpusim.PtxSource` with the recorded launch: same PTX, same
  inputs, so any difference is gpusim's execution;
- `gpusim_triton`: the program as a gpusim user runs it (`gpusim.launch(case.kernel, ...)`, this
  machine's Triton compiling it): sm_90 on the recording GPU's preset, sm_80 on `a100`. Its PTX can
  differ from the GPU's where the Triton versions differ (the file's provenance names the GPU's).
Each comparison is bit for bit over every output element: equal count, total, the largest
difference in units in the last place of the output type. Exit status 1 when any differs.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import gpusim
from validate.datadir import measurement_file
from validate.triton_record import _TYPES, bits, load_case

PRESETS = {"h100": "h100", "h200": "h200"}


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance in representable values between same-typed float arrays (NaN = equal if both)."""
    ia = bits(a).astype(np.int64)
    ib = bits(b).astype(np.int64)
    sign = 1 << (8 * a.dtype.itemsize - 1)
    ia = np.where(ia & sign, sign - ia, ia)          # sign-magnitude -> a monotone integer line
    ib = np.where(ib & sign, sign - ib, ib)
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    d = np.where(both_nan, 0, np.abs(ia - ib))
    return int(d.max()) if d.size else 0


def _verdict(got: dict, want: dict) -> dict:
    eq = tot = 0
    worst = 0
    for i, w in want.items():
        g = got[i]
        same = bits(g) == bits(w)
        eq += int(same.sum())
        tot += same.size
        worst = max(worst, _ulps(g, w))
    return {"equal": eq, "total": tot, "bit_exact": eq == tot, "max_ulp": worst}


def _run_ptx(case, path: dict, args: list, preset: str) -> dict:
    fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    vals = []
    for a in args:
        vals.append(fresh[a[1]] if a[0] == "array" else _TYPES[a[1]](a[2]))
    vals += [np.zeros(s, np.uint8) if s else np.uint64(0) for s in path["scratch"]]
    gpusim.launch(gpusim.PtxSource(path["ptx"], path["name"]), tuple(path["grid"]), (path["block"], 1, 1),
                  tuple(vals), shared_bytes=path["shared"], gpu=preset)
    return {i: fresh[i] for i in case.expected}


def _run_triton(case, preset: str) -> dict:
    fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    gpusim.launch(case.kernel, case.grid, case.block, tuple(fresh), gpu=preset, **case.options)
    return {i: fresh[i] for i in case.expected}


def compare(npz_path: Path) -> dict:
    data = np.load(npz_path)
    meta = json.loads(str(data["meta"]))
    prov = meta["provenance"]
    preset = PRESETS.get(prov["tag"], "h100")
    out = {"file": str(npz_path), "gpu": prov.get("gpu"), "gpu_versions": prov.get("versions"),
           "preset": preset, "gpusim_triton": __import__("triton").__version__, "cases": {}}
    for key, entry in meta["cases"].items():
        res = out["cases"][key] = {}
        case = load_case(entry["program"], entry["size"])
        for i, info in entry["inputs"].items():
            if not np.array_equal(bits(case.args[int(i)]), data[f"{key}__in{i}"]):
                res["error"] = f"input {i} differs from the recorded one: the program or its seed changed"
        if "error" in res:
            continue
        args = entry["ptx_args"]
        for name, path in entry["paths"].items():
            gpu_keys = {i: f"{key}__{name}__out{i}" for i in case.expected}
            if "error" in path or not all(k in data for k in gpu_keys.values()):
                res[name] = {"gpu_error": path.get("error", "no output recorded")}
                continue
            want = {i: data[k].view(case.args[i].dtype).reshape(case.args[i].shape) for i, k in gpu_keys.items()}
            r = res[name] = {}
            if "ptx" in path and "grid" in path:
                t = time.perf_counter()
                try:
                    r["recorded_ptx"] = _verdict(_run_ptx(case, path, args, preset), want)
                except gpusim.GpusimError as e:
                    r["recorded_ptx"] = {"error": str(e)}
                r["recorded_ptx"]["seconds"] = round(time.perf_counter() - t, 1)
            own = preset if name.startswith("sm90") else "a100"
            if name != "sm90_ptx":          # the same PTX as sm90: one gpusim run of the program is enough
                t = time.perf_counter()
                try:
                    r["gpusim_triton"] = _verdict(_run_triton(case, own), want)
                except gpusim.GpusimError as e:
                    r["gpusim_triton"] = {"error": str(e)}
                r["gpusim_triton"].update(preset=own, seconds=round(time.perf_counter() - t, 1))
        print(f"{key}: {json.dumps(res)}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("npz", type=measurement_file)
    ap.add_argument("--write", type=Path, help="write the comparison as JSON here")
    a = ap.parse_args(argv)
    out = compare(a.npz)
    if a.write:
        a.write.write_text(json.dumps(out, indent=1) + "\n")
    bad = [f"{k}/{p}/{w}" for k, c in out["cases"].items() for p, r in c.items() if isinstance(r, dict)
           for w, v in r.items() if isinstance(v, dict) and not v.get("bit_exact", False)]
    print("all bit-exact" if not bad else f"not bit-exact: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
