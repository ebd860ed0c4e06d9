"""Where the points run changes no number: local processes and a real dask.distributed
cluster (LocalCluster, 2 worker processes) give the serial run's table."""
import pandas as pd
import pytest

import gpusim

PROGRAMS = ["vector_add", "reduce_sequential"]
SIZES = ["tiny"]
VARY = {"hbm.bandwidth_GBps": [2000, 3000, 4000, 5000]}


def _metrics(df):
    drop = [c for c in df.columns if c in ("wall_s", "functional_run")]
    return df.drop(columns=drop).reset_index(drop=True)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return gpusim.sweep(["vector_add"], ["default"], VARY, replay=False,
                        cache_dir=str(tmp_path_factory.mktemp("serial")))


def test_local_processes_equal_serial(serial, tmp_path):
    par = gpusim.sweep(["vector_add"], ["default"], VARY, workers=2, cache_dir=str(tmp_path))
    pd.testing.assert_frame_equal(_metrics(par), _metrics(serial), check_exact=True)
    # one group, two workers: the second worker takes a point at once and records its own copy unless the
    # first recording is already on disk when it starts; every later point replays
    hows = par["functional_run"].value_counts()
    assert hows.get("recorded", 0) in (1, 2) and hows.get("replayed", 0) == 4 - hows.get("recorded", 0)


@pytest.fixture(scope="module")
def dask_client():
    """gpusim's own LocalCluster (the one `dask="local"` starts), 2 worker processes."""
    import distributed

    from gpusim.sweep.executors import local_cluster
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        yield client


def test_dask_local_cluster_equals_serial(serial, dask_client, tmp_path):
    df = gpusim.sweep(["vector_add"], ["default"], VARY, client=dask_client, cache_dir=str(tmp_path))
    assert len(dask_client.run(lambda: 1)) == 2
    pd.testing.assert_frame_equal(_metrics(df), _metrics(serial), check_exact=True)


def test_local_cluster_workers_keep_glibc_mmap_threshold(dask_client):
    # dask's nanny would start them with MALLOC_TRIM_THRESHOLD_=65536 (a point ~15% slower: executors.py)
    import os
    assert set(dask_client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values()) == {None}
