"""The Python API: load, change keys, run, results as dicts/DataFrames, errors as ScenarioError."""
import os

import pytest

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml")


def small():
    s = stacksim.Scenario.load(SCENARIO)
    s.set("model.layers", 8).set("parallelism.vp", 1).set("parallelism.pp", 2).set("parallelism.dp", 4)
    s.set("parallelism.global_batch", 16)
    return s


def test_run_returns_the_cli_fields():
    r = small().run()
    d = r.to_dict()
    for key in ("step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "memory_per_gpu_bytes", "breakdown", "bottleneck"):
        assert key in d
    assert r.step_time_s > 0
    assert abs(sum(d["breakdown"].values()) - r.step_time_s) < 1e-6 * r.step_time_s
    frame = r.breakdown_frame()
    assert abs(frame["fraction"].sum() - 1.0) < 1e-9
    # One layer alone: backward (dgrad + wgrad) costs more than forward, and the 8 layers a
    # micro-batch runs through fit inside the step.
    layer = d["layer_timing"]
    assert 0 < layer["forward_s"] < layer["backward_s"]
    assert 8 * (layer["forward_s"] + layer["backward_s"]) < r.step_time_s


def test_same_input_same_output():
    a, b = small().run().to_dict(), small().run().to_dict()
    a["engine"].pop("wall_s"), b["engine"].pop("wall_s")
    assert a == b


def test_faster_gpu_memory_changes_the_result():
    base = small().run()
    h200 = small().set("hardware.gpu", "H200-SXM-141GB").run()
    assert h200.step_time_s <= base.step_time_s


def test_bad_input_raises_scenario_error():
    s = small().set("parallelism.tp", 3)
    with pytest.raises(stacksim.ScenarioError) as e:
        s.run()
    assert isinstance(e.value, ValueError)
    assert "tp" in str(e.value)
    with pytest.raises(ValueError):
        small().set("cluster.nodez", 2).run()


def test_a_step_past_the_simulation_horizon_is_a_scenario_error():
    # An hour of CPU per sample on one loader worker: the step would outlast the engine's horizon.
    s = small().set("host.cpu_seconds_per_sample", 3600).set("host.loader_workers", 1)
    s = s.set("parallelism.global_batch", 65536)
    with pytest.raises(stacksim.ScenarioError) as e:
        s.run()
    assert "horizon" in str(e.value)


def test_validate_collectives():
    report = stacksim.validate(os.path.join(ROOT, "validation", "cases.yaml"), kinds=["collective"])
    assert report["summary"]["n"] == 76
    assert report["summary"]["mape_pct"] < 15


def test_validate_selects_cases_by_id_substring():
    report = stacksim.validate(os.path.join(ROOT, "validation", "cases.yaml"), ids=["narayanan2021-t1-1.7b"])
    assert [c["id"] for c in report["cases"]] == ["narayanan2021-t1-1.7b"]


def test_compare_reports_speedups():
    out = stacksim.compare(small(), [{"hardware.gpu": "H200-SXM-141GB"}, {"cluster.nics_per_node": 4}])
    assert len(out["variants"]) == 2
    assert out["variants"][0]["speedup"] >= 1.0
    assert out["variants"][0]["set"] == {"hardware.gpu": "H200-SXM-141GB"}


def test_compare_is_the_cli_comparison_with_reasons_and_elasticity():
    # The C++ comparison (no second rule in Python): a reason in words per variant, speedups that
    # are the step-time ratios of plain runs, and the elasticity ranking, fastest first.
    base = small()
    out = stacksim.compare(base, [{"parallelism.micro_batch": 2}], elasticity=True)
    v = out["variants"][0]
    assert v["reason"]
    alone = stacksim.Scenario(base.to_dict()).set("parallelism.micro_batch", 2).run().step_time_s
    assert v["speedup"] == pytest.approx(base.run().step_time_s / alone, rel=1e-12)
    speedups = [e["speedup"] for e in out["elasticity"]]
    assert len(speedups) >= 8 and speedups == sorted(speedups, reverse=True)
    with pytest.raises(stacksim.ScenarioError, match="did you mean"):
        stacksim.compare(base, [{"parallelism.tpp": 2}])


def test_a_sweep_over_bundled_models_by_preset():
    # The same cluster and plan, the model named from the catalogue: a bigger model takes longer.
    base = stacksim.Scenario(cluster={"node": "dgx-h100", "nodes": 1},
                             model={"preset": "Llama 3 8B", "seq_len": 2048},
                             parallelism={"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8, "zero": 3})
    small_step = base.run().step_time_s
    bigger = stacksim.Scenario(base.to_dict()).set("model.preset", "Qwen3 14B").run().step_time_s
    assert bigger > 1.3 * small_step
    with pytest.raises(stacksim.ScenarioError, match="did you mean"):
        stacksim.Scenario(base.to_dict()).set("model.preset", "Llama 3 9B").run()


def test_setting_a_preset_swaps_the_whole_model():
    s = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "fsdp-7b-8xh100.yaml"))
    s.set("model.preset", "Llama 3 8B")
    assert s.to_dict()["model"] == {"seq_len": 2048, "attention": "flash", "preset": "Llama 3 8B"}
    swapped = s.run()
    direct = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "fsdp-7b-8xh100.yaml")).run()
    assert swapped.step_time_s != direct.step_time_s


def test_the_model_catalogue_lists_presets():
    listed = {m["name"]: m for m in stacksim.models()}
    assert listed["Llama 3 70B"]["layers"] == 80
    assert abs(listed["DeepSeek-V3"]["params"] / 671e9 - 1) < 0.02
    assert listed["DeepSeek-V3"]["active_params"] < listed["DeepSeek-V3"]["params"] / 10
    assert listed["Mistral 7B"]["seq_len"] is None
    # Every listed name works as a preset (given a sequence length where none is published).
    name = "Qwen3 30B-A3B"
    s = stacksim.Scenario(cluster={"node": "dgx-h100", "nodes": 1}, model={"preset": name},
                          parallelism={"tp": 1, "pp": 1, "dp": 8, "ep": 8, "micro_batch": 1, "global_batch": 8})
    assert s.run().step_time_s > 0
