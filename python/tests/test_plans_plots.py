"""Plan search (the best plan fits and beats a naive plan) and plots (files written, non-empty)."""
import os

import stacksim
from stacksim import plots

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def small():
    s = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml"))
    s.set("cluster.nodes", 2).set("model.layers", 8).set("model.hidden", 4096).set("model.heads", 32)
    s.set("model.ffn_hidden", 14336).set("model.seq_len", 4096).set("parallelism.global_batch", 32)
    return s


def test_best_plan_fits_and_beats_a_naive_plan():
    top = stacksim.best_plans(small(), top=3, micro_batches=(1,), recompute=("none", "full"), zero=(1,), threads=2)
    assert 1 <= len(top) <= 3
    assert (top["oom"] == False).all()  # noqa: E712
    assert list(top["step_time_s"]) == sorted(top["step_time_s"])
    naive = small().set("parallelism.tp", 1).set("parallelism.pp", 1).set("parallelism.cp", 1)
    naive = naive.set("parallelism.vp", 1).set("parallelism.dp", 16).set("parallelism.recompute", "full").run()
    assert top["step_time_s"].iloc[0] <= naive.step_time_s


def test_plan_search_reports_what_auto_recompute_chose():
    top = stacksim.best_plans(small(), top=2, micro_batches=(1,), zero=(1,), threads=2)
    assert set(top["parallelism.recompute"]) == {"auto"}
    assert all(r.split(" ")[0] in ("none", "selective", "full") for r in top["recompute"])


def test_plots_are_written(tmp_path):
    def plan(s):  # 16 GPUs: tp 4, pp 2, cp 1, dp 2
        return s.set("parallelism.vp", 1).set("parallelism.pp", 2).set("parallelism.cp", 1).set("parallelism.dp", 2)

    a = plan(small()).run()
    b = plan(small()).set("hardware.gpu", "H200-SXM-141GB").run()
    for name, draw in [
        ("breakdown.png", lambda p: plots.breakdown_bars([a, b], ["H100", "H200"], p)),
        ("scaling.svg", lambda p: plots.scaling_curve([8, 16, 32], [1.0e5, 1.9e5, 3.5e5], p)),
        ("speedup.png", lambda p: plots.speedup_bars(["H200", "2x NIC"], [1.02, 1.3], p)),
    ]:
        path = str(tmp_path / name)
        draw(path)
        assert os.path.getsize(path) > 1000


def test_best_plans_read_the_shape_of_a_preset():
    # A preset-only model: the search takes the catalogue's shape (Qwen3 8B: 36 layers, 32 heads)
    # for its candidates, so every plan it returns divides them.
    import json
    from stacksim import _core

    assert json.loads(_core.catalog_model("QWEN3_8B"))["layers"] == 36  # any spelling, as model.preset
    assert json.loads(_core.catalog_model("Qwen3 9B")) is None
    base = stacksim.Scenario(cluster={"node": "dgx-h100", "nodes": 1}, model={"preset": "Qwen3 8B", "seq_len": 1024},
                             parallelism={"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 16})
    df = stacksim.best_plans(base, top=20, micro_batches=(1,), zero=(1,))
    assert len(df) >= 1
    assert all(36 % pp == 0 for pp in df["parallelism.pp"])
    assert all(32 % tp == 0 for tp in df["parallelism.tp"])


def test_plan_calls_the_cpp_two_stage_search():
    df = stacksim.plan(small(), k=2)
    assert df.attrs["fit"] == len(df) and df.attrs["replayed"] == 2
    assert {"tp", "pp", "dp", "cp", "vp", "micro_batch", "recompute", "zero", "fast_step_time_s", "step_time_s"} <= set(df.columns)
    replayed = df[df["replayed"]]
    assert len(replayed) == 2 and (replayed["step_time_s"] > 0).all()
    assert replayed["step_time_s"].is_monotonic_increasing  # the confirmed plans first, fastest first
    rest = df[~df["replayed"]]
    assert rest["fast_step_time_s"].is_monotonic_increasing and rest["step_time_s"].isna().all()
