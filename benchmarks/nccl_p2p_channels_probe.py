"""send_recv and all_to_all on 2 GPUs with NCCL's p2p channels capped, 1-128 MiB: whether the
4-GPU send_recv shape (measured faster than the model at 4-8 MiB, then a step in fixed cost
between 8 and 16 MiB; DEVIATIONS.md, issue 8's misses) follows from the channels per peer.

On 4 GPUs NCCL 2.28 starts an operation to one peer on 8 of its 32 p2p channels (per peer
halved while per_peer x ranks > p2p channels); on 2 GPUs on 16. `NCCL_MAX_P2P_NCHANNELS=16`
on 2 GPUs gives the 4-GPU start (8 a peer), `=8` the 8-GPU start (4 a peer), so their shape
can be measured where only a 2-GPU machine is lent. Run on a 2-GPU machine (device kind
nvidia-h200-x2), from the repository root:

    NCCL_NVLS_ENABLE=0 python benchmarks/nccl_p2p_channels_probe.py --out FILE

Each setting runs in its own process (NCCL reads its environment once); timing is
`validate.measure_nccl.Ranks.timed` (CUDA graphs of up to 200 calls), every size twice,
interleaved. Writes one record per (setting, op, size, round) with the NCCL INFO lines that
name the p2p channels, and provenance (GPU names, driver, NCCL version, date, command).
Only numpy and cupy are needed.

    python benchmarks/nccl_p2p_channels_probe.py --compare FILE     # on any machine

prints the model against such a file (`validate.compare_multi.channel_setting_rows`: each
setting whose NCCL variables the spec can say, `NCCL_MAX_P2P_NCHANNELS` -> `nccl.max_channels`,
which sets the p2p channels as NCCL's cap does, `NCCL_P2P_NVL_CHUNKSIZE` -> `nccl.p2p_chunk_bytes`;
the median of its rounds per size).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

MIB = 1 << 20
SIZES = [m * MIB for m in (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 32, 64, 128)]
SETTINGS = {"default": {}, "max_p2p_16": {"NCCL_MAX_P2P_NCHANNELS": "16"},
            "max_p2p_8": {"NCCL_MAX_P2P_NCHANNELS": "8"}}
OPS = ("send_recv", "all_to_all")
ROTATE = "GPUSIM_ROTATE"     # a setting's buffer pairs per GPU, used in turn by successive calls (default 1)


def rotating_ranks(n: int, rotate: int):
    """`Ranks` whose successive calls use `rotate` different buffer pairs per GPU (a call's data
    footprint x rotate across the CUDA graph's back-to-back calls, its size unchanged)."""
    from validate.measure_nccl import Ranks  # GPU side: validate.measure_nccl imports CuPy

    class RotatingRanks(Ranks):
        turn = 0

        def bufs(self, nbytes: int):
            if rotate == 1:
                return super().bufs(nbytes)
            whole = super().bufs(nbytes * rotate)
            k, n4 = self.turn % rotate, nbytes // 4
            self.turn += 1
            return tuple((s[k * n4:(k + 1) * n4], r[k * n4:(k + 1) * n4]) for s, r in whole)

    return RotatingRanks(n)


def worker(setting: str, rounds: int, out: str, ops=OPS, sizes=SIZES) -> int:
    rotate = int(os.environ.get(ROTATE, "1"))
    ranks = rotating_ranks(2, rotate)
    records = []
    for rnd in range(rounds):
        for op in ops:
            for size in sizes:
                rec = ranks.timed(op, size)
                rec.update({"setting": setting, "round": rnd, "rotate": rotate})
                records.append(rec)
                print(f"{setting:11s} {op:10s} {size // MIB:4d} MiB {rec['time_us']:9.2f} us "
                      f"busbw {rec['busbw_GBps']:6.1f}", flush=True)
    with open(out, "w") as f:
        json.dump(records, f)
    return 0


def compare(path: str) -> int:
    from validate.compare_multi import channel_setting_rows  # GPU side: validate.measure_nccl imports CuPy
    with open(path) as f:
        rows, left_out = channel_setting_rows(json.load(f))
    for name in left_out:
        print(f"{name}: not modelled")
    print(f"{'setting':16s} {'op':10s} {'MiB':>4s} {'measured us':>11s} {'model us':>9s} {'error':>7s} channels")
    for r in rows:
        print(f"{r['setting']:16s} {r['op']:10s} {r['bytes'] // MIB:4d} {r['measured_us']:11.2f} "
              f"{r['predicted_us']:9.2f} {r['time_err_pct']:+6.1f}% {r['channels']}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--compare", metavar="FILE", help="print the model against a measured file")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--setting", action="append", metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                    help="a setting of NCCL variables, and GPUSIM_ROTATE=K for K buffer pairs used in turn "
                         "(repeatable; default: the three of SETTINGS)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma list of measure_nccl.OPS")
    ap.add_argument("--sizes", default=",".join(str(s // MIB) for s in SIZES), help="comma list of MiB")
    ap.add_argument("--worker")
    a = ap.parse_args(argv)
    ops = tuple(o for o in a.ops.split(",") if o)
    sizes = [int(m) * MIB for m in a.sizes.split(",") if m]
    if a.compare:
        return compare(a.compare)
    if not a.out:
        ap.error("--out FILE is needed to measure")
    if a.worker:
        return worker(a.worker, a.rounds, a.out, ops, sizes)
    settings = SETTINGS
    if a.setting:
        settings = {}
        for text in a.setting:
            name, _, pairs = text.partition(":")
            settings[name] = dict(p.split("=", 1) for p in pairs.split(",") if p)
    from cupy.cuda import nccl  # GPU machine only: CuPy / the CUDA driver are not installed on CPU machines
    records, info = [], {}
    for setting, env_extra in settings.items():
        part = f"{a.out}.{setting}.json"
        env = dict(os.environ, NCCL_NVLS_ENABLE="0", NCCL_DEBUG="INFO", **env_extra)
        r = subprocess.run([sys.executable, __file__, "--worker", setting, "--rounds", str(a.rounds), "--out", part,
                            "--ops", ",".join(ops), "--sizes", a.sizes],
                           env=env, capture_output=True, text=True, timeout=400)
        lines = (r.stdout + r.stderr).splitlines()
        sys.stdout.write("\n".join(x for x in lines if "NCCL INFO" not in x) + "\n")
        info[setting] = {"env": env_extra, "returncode": r.returncode,
                         "nccl_info": [x for x in lines if "p2p" in x.lower() and "NCCL INFO" in x][:12]}
        if os.path.exists(part):
            with open(part) as f:
                records += json.load(f)
            os.remove(part)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    prov = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": "NCCL_NVLS_ENABLE=0 python benchmarks/nccl_p2p_channels_probe.py " + " ".join(sys.argv[1:]),
            "nvidia_smi": smi, "nccl_version": nccl.get_version(), "settings": info}
    with open(a.out, "w") as f:
        json.dump({"provenance": prov, "records": records}, f, indent=1)
    return 0 if all(v["returncode"] == 0 for v in info.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
