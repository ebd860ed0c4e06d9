"""The collectives and nccl-tests' conventions (nccl-tests doc/PERFORMANCE.md).

`size` is nccl-tests' size: the per-rank buffer of all_reduce, broadcast, reduce and
send_recv; the gathered output of all_gather; the input of reduce_scatter; the whole send
buffer of all_to_all. algbw = size / time; busbw = algbw x factor(n), the factor that makes
busbw comparable with the link bandwidth whatever the rank count: a ring all-reduce moves
2(n-1)/n of the data over every GPU's link, so its busbw is what each link carried.
"""
from __future__ import annotations

from gpusim.errors import ConfigError

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")

_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


def check_op(op: str) -> str:
    key = op.lower().replace("-", "_").replace("allreduce", "all_reduce").replace("allgather", "all_gather") \
        .replace("reducescatter", "reduce_scatter").replace("alltoall", "all_to_all").replace("sendrecv", "send_recv")
    if key not in OPS:
        raise ConfigError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
    return key


def busbw_factor(op: str, n: int) -> float:
    return _FACTORS[check_op(op)](n)
