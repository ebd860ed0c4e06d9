"""Device addresses of measured launches, merged into a committed measurement file.

    python -m validate.address_merge REPLAY.json data/measurements/h200_heldout2.json \
        --command "..." [--date ...]

`validate measure` records each array argument's device address (`arg_addresses`,
`measure_worker._addresses`) since 2026-11-27; files measured before have none. Where the GPU's
allocator put an array decides which L2 slice and which atomic unit its lines go to
(`gpusim/timing/memory/l2_atomics.py`: 256 int bins run on four units at 512 B mod 1 KiB and on two
at 0), and `validate compare` places gpusim's arrays there (`gpusim.launch(device_addresses=)`).
For an older file, an events-only replay of the same suite on the same kind of GPU
(`python -m validate measure --suite S --no-ncu`: a fresh process allocating the same arrays in the
same order, as the original's events pass did) gives the addresses. The replay's event times
say whether its placements behave as the original's did: each kernel keeps the replay's time
beside its addresses (`arg_addresses_event_time_us`), and the provenance gets the median ratio
and the kernels whose times differ by more than 8% (launches under 100 us differ by launch noise).
The measured figures themselves are not touched.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from validate.datafile import write_data

TOLERANCE = 0.08            # replay event time against the original's, beyond which a kernel is listed
NOISE_US = 100.0            # shorter launches are listed only for the record (launch noise)


def merge(data: dict, replay: dict, command: str, date: str) -> dict:
    """`data` (a measurement file's JSON) with the replay's `arg_addresses` on every kernel the replay
    ran, and a provenance entry `arg_addresses` saying where they came from and how the times agree."""
    ran = {k["name"]: k for k in replay["kernels"] if "arg_addresses" in k}
    ratios, differ = [], []
    merged = 0
    for k in data["kernels"]:
        r = ran.get(k["name"])
        if r is None:
            continue
        k["arg_addresses"] = [int(a) for a in r["arg_addresses"]]
        merged += 1
        if "event_time_us" in r and k.get("event_time_us"):
            k["arg_addresses_event_time_us"] = r["event_time_us"]
            ratio = r["event_time_us"] / k["event_time_us"]
            ratios.append(ratio)
            if abs(ratio - 1) > TOLERANCE and k["event_time_us"] >= NOISE_US:
                differ.append(k["name"])
    prov = replay.get("provenance", {})
    data.setdefault("provenance", {})["arg_addresses"] = {
        "command": command, "date": date, "gpu": prov.get("gpu_name"), "driver": prov.get("driver"),
        "numba_cuda": prov.get("numba_cuda"), "numpy": prov.get("numpy"), "kernels": merged,
        "replay_event_time_ratio_median": round(statistics.median(ratios), 4) if ratios else None,
        f"replay_differs_over_{int(TOLERANCE * 100)}pct_at_{int(NOISE_US)}us_or_more": differ,
        "note": "an events-only replay of the suite in a fresh process (the original's events pass allocated the "
                "same arrays in the same order); the measured figures are the original's"}
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("replay", type=Path, help="validate measure --no-ncu output with arg_addresses")
    ap.add_argument("data", type=Path, help="the measurement file to add them to (rewritten in place)")
    ap.add_argument("--command", required=True, help="the replay's exact command (provenance)")
    ap.add_argument("--date", required=True, help="when the replay ran (provenance)")
    args = ap.parse_args(argv)
    data = json.loads(args.data.read_text())
    replay = json.loads(args.replay.read_text())
    merge(data, replay, args.command, args.date)
    write_data(args.data, data["provenance"], data["kernels"])
    p = data["provenance"]["arg_addresses"]
    print(f"{args.data}: {p['kernels']} kernels with addresses; replay/original event time median "
          f"{p['replay_event_time_ratio_median']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
