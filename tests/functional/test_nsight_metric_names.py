"""The tensor-core and async-copy counters carry names Nsight Compute has: every metric of
`EXTRA_METRICS` is in the list ncu 2025.3 printed on an H100 (`ncu --query-metrics`, kept in
data/measurements/ncu_tensor_metric_names_h100.txt), so `validate measure` can read each of them."""
import json

from gpusim.functional.counters import EXTRA_METRICS
from validate.ncu import TENSOR_METRICS
from validate.datadir import DATA_DIR

DATA = DATA_DIR
LISTED = set((DATA / "ncu_tensor_metric_names_h100.txt").read_text().split())


def _base(metric: str) -> str:
    return metric.rsplit(".", 1)[0] if metric.endswith((".sum", ".max", ".avg")) else metric


def test_every_tensor_and_async_copy_counter_is_a_metric_ncu_lists():
    assert sorted(m for m in EXTRA_METRICS if _base(m) not in LISTED) == []


def test_validate_measure_asks_ncu_for_none_of_the_names_it_refused_on_the_h100():
    """ncu drops a metric name it does not have (validate.ncu); the H100 tensor run recorded which."""
    prov = json.loads((DATA / "h100_tensor.json").read_text())["provenance"]
    refused = prov["supersedes"]["ncu_metrics_dropped"]          # the first run's six
    assert len(refused) == 6 and sorted(set(refused) & set(TENSOR_METRICS)) == []
    assert prov["ncu_metrics_dropped"] == []                      # the run with these names
