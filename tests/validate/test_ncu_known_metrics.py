"""validate.ncu.profile_worker_known without ncu: a metric the profiler refuses is dropped and the
worker profiled again with the rest."""
from types import SimpleNamespace

from validate import ncu


def test_a_refused_metric_is_dropped_and_the_run_repeated(monkeypatch, tmp_path):
    runs = []

    def fake(module, metrics, log_file):
        runs.append(list(metrics))
        if "bad__metric.sum" in metrics:
            return ["ncu"], SimpleNamespace(stdout="==ERROR== Failed to find metric bad__metric.sum"), []
        return ["ncu"], SimpleNamespace(stdout=""), [{"kernel_name": "k", "metrics": {}}]

    monkeypatch.setattr(ncu, "profile_worker", fake)
    monkeypatch.setattr(ncu, "unknown_metrics", lambda text: ["bad__metric.sum"] if "bad__metric" in text else [])
    _, _, kernels, kept = ncu.profile_worker_known("m", ["good.sum", "bad__metric.sum"], tmp_path / "log.csv")
    assert kept == ["good.sum"] and len(kernels) == 1 and runs == [["good.sum", "bad__metric.sum"], ["good.sum"]]
