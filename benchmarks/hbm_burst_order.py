"""How the model's HBM serves a burst of many-line copies issued at once (issue 29's loaded TMA
latency, benchmarks/tma_latency_check.py's `bulk_load` rows): N blocks' 8 KB copies, 32 chunks of
256 B each, all reaching the HBM at cycle 0 in block order, as the SMs' requests do in one
quantum. Prints when each copy's last burst is back (min / median / max over the copies) and
how many chunks each channel queues.

    python benchmarks/hbm_burst_order.py [--gpu h100] [--blocks 132]

Every channel serves its queue in the order the requests were processed, so block 0's chunks
come first on every channel and block N-1's last: the copies end one after another through the
drain (median about half of it), and the blocks, issuing again as they end, fall out of step.
On the GPUs (tma_latency_h*_run3.json) a copy from 132 blocks at once takes about the unloaded
latency plus the whole drain, as if every copy waited for a late chunk on some channel: the
channels do not serve the SMs in one common order.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusim.specs import get  # noqa: E402
from gpusim.timing.memory import HBM  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--blocks", type=int, default=132)
    a = ap.parse_args(argv)
    h = HBM(get(a.gpu))
    band = 24 * 65536                                # each block's bytes, as tma_latency_check lays them out
    done = []
    for b in range(a.blocks):
        ends = [h.read_burst(0.0, (b * band + off) // h.granularity_bytes) for off in range(0, 8192, h.granularity_bytes)]
        done.append(max(ends))
    chans = np.bincount([h.locate((b * band + off) // h.granularity_bytes)[0]
                         for b in range(a.blocks) for off in range(0, 8192, 256)], minlength=h.channels)
    print(f"{a.gpu}: {a.blocks} copies of 8 KB at once; last burst back (cycles from arrival, DRAM only): "
          f"min {min(done):.0f}, median {np.median(done):.0f}, max {max(done):.0f}; "
          f"chunks a channel: mean {chans.mean():.1f}, max {chans.max()}; unloaded {h.closed_latency_cycles:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
