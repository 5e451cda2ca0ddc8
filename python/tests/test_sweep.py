"""Sweeps: grid size and order, invalid rows with reasons, the same values whatever the thread
count, and a Dask LocalCluster sweep equal to the local one row for row."""
import os

import pytest

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def base():
    # 64 GPUs, pp 4 x cp 2: tp * dp must be 8.
    s = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml"))
    return s.set("model.layers", 8).set("parallelism.vp", 1).set("parallelism.global_batch", 16)


GRID = {"parallelism.tp": [4, 8], "parallelism.dp": [1, 2]}


def test_grid_size_order_and_invalid_rows():
    df = stacksim.sweep(base(), GRID, threads=2)
    assert len(df) == 4
    assert list(zip(df["parallelism.tp"], df["parallelism.dp"])) == [(4, 1), (4, 2), (8, 1), (8, 2)]
    valid = df["error"].isna()
    assert list(valid) == [False, True, True, False]  # tp*pp*dp*cp must be 64
    assert df.loc[0, "error"].find("GPUs") >= 0
    assert (df.loc[valid, "step_time_s"] > 0).all()


def test_same_values_whatever_the_thread_count():
    g = {"hardware.gpu": ["H100-SXM5-80GB", "H200-SXM-141GB"], "parallelism.micro_batch": [1, 2]}
    one = stacksim.sweep(base(), g, threads=1)
    two = stacksim.sweep(base(), g, threads=2)
    assert one.equals(two)
    assert one["step_time_s"].notna().all()


def test_scaling_efficiency_against_the_smallest_run():
    # Nodes and dp together (the off-diagonal points are invalid): 32 and 64 GPUs per GPU type.
    g = {"hardware.gpu": ["H100-SXM5-80GB", "B200"], "cluster.nodes": [4, 8], "parallelism.dp": [1, 2]}
    df = stacksim.sweep(base(), g, threads=2)
    valid = df[df["error"].isna()]
    assert len(valid) == 4
    for _, rows in valid.groupby("hardware.gpu"):
        small, large = rows.sort_values("num_gpus").to_dict("records")
        assert small["scaling_efficiency"] == 1.0
        assert large["scaling_efficiency"] == pytest.approx(large["tokens_per_s_per_gpu"] / small["tokens_per_s_per_gpu"])
        assert large["scaling_efficiency"] <= 1.0 + 1e-9
    assert df.loc[df["error"].notna(), "scaling_efficiency"].isna().all()


def test_dask_local_cluster_equals_local_sweep():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = stacksim.sweep(base(), GRID, client=client)
    local = stacksim.sweep(base(), GRID, threads=1)
    assert remote.equals(local)
