"""busbw against message size, one line per series (matplotlib, Agg backend)."""
from __future__ import annotations

from pathlib import Path


def busbw_plot(results, path, title: str, measured: list[tuple[int, float]] | None = None) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r.bytes for r in results], [r.busbw_GBps for r in results], marker="o", label="gpusim")
    if measured:
        ax.plot([b for b, _ in measured], [v for _, v in measured], marker="x", label="measured")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)                    # bandwidths start at zero: no exaggerated slopes
    ax.set_xlabel("size (bytes, nccl-tests convention)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out
