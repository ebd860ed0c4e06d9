#!/usr/bin/env bash
# On the GPU machine's 16 CPU cores: `validate compare` of several measured sets at once, with the
# toolchain kit of benchmarks/device_kit.sh (so predictions are bit-identical to this machine's).
# Each argument is SET:PRESET[:LABEL] (data/measurements/SET.json predicted with PRESET, written
# as compare_LABEL.json, LABEL defaulting to SET); the sets run side by side, JOBS processes each
# (default: 15 shared by the sets' committed CPU seconds, below), every kernel given up after TL seconds
# (default 550), the whole call after LIMIT seconds (default 570). Results, journals and logs go
# into one archive, $OUT/cmp.tgz (a device call brings back only a few files). EXTRA: more options for
# every compare (for example EXTRA="--max-waves 8").
#
#   bash benchmarks/device_setup.sh && LIMIT=570 TL=550 bash benchmarks/device_compare.sh \
#       h100_tensor:h100 h200_tensor:h200 h100_tensor:h100-from-h200:h100_tensor_from_h200
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
. /opt/gpusim-kit/env.sh
LIMIT=${LIMIT:-570}
TL=${TL:-550}
# processes a set: JOBS each where given; else the 15 shared in proportion to the CPU seconds the set's
# launches took in its committed benchmarks/results/compare_LABEL.json (a set without one counts as the
# mean), at least 1 each: held-out 2 (1,150 s) beside the calibration sets (800 s) and held-out (658 s)
# got 3 where an even share gave it 2 and ran into LIMIT (2026-11-28)
declare -A SET_JOBS
while read -r label jobs; do SET_JOBS[$label]=$jobs; done < <(python3 - "$@" <<'PY'
import json, pathlib, sys
labels = [(a.split(":") + [""] * 2)[:3] for a in sys.argv[1:]]
labels = [lab or s for s, _, lab in labels]
cost = {}
for lab in labels:
    f = pathlib.Path(f"benchmarks/results/compare_{lab}.json")
    try:
        cost[lab] = sum(k["seconds"] for k in json.loads(f.read_text())["kernels"])
    except (OSError, ValueError, KeyError):
        cost[lab] = None
known = [c for c in cost.values() if c]
mean = sum(known) / len(known) if known else 1.0
cost = {lab: c or mean for lab, c in cost.items()}
total = sum(cost.values())
jobs = {lab: max(1, int(15 * c / total)) for lab, c in cost.items()}
for lab in sorted(cost, key=lambda lab: -(15 * cost[lab] / total - jobs[lab])):
    if sum(jobs.values()) >= 15:
        break
    jobs[lab] += 1
for lab in labels:
    print(lab, jobs[lab])
PY
)
W=${OUT:-/tmp/out}/cmp
mkdir -p "$W"
export GPUSIM_CACHE_DIR=/tmp/gpusim-cache
for arg in "$@"; do
  IFS=: read -r set preset label <<< "$arg"
  label=${label:-$set}
  timeout "$LIMIT" python3 -m validate compare --data "data/measurements/$set.json" --preset "$preset" \
      --jobs "${JOBS:-${SET_JOBS[$label]:-1}}" --time-limit "$TL" --json --out "$W/compare_$label.json" ${EXTRA:-} \
      > "$W/$label.summary.json" 2> "$W/$label.log" &
done
wait
python3 - "$W" <<'PY'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.summary.json")):
    try:
        s = json.loads(p.read_text())
        print(p.stem, round(s["duration_mape_pct"], 2), "max", round(s["duration_max_ape_pct"], 1),
              "no prediction", len(s.get("no_prediction") or {}), s.get("duration_worst"))
    except Exception as e:
        print(p.stem, "no summary:", type(e).__name__, p.with_suffix("").with_suffix(".log").read_text()[-400:])
PY
tar -C "$W/.." -czf "${OUT:-/tmp/out}/cmp.tgz" cmp && rm -rf "$W"
