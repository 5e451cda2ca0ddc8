"""Serving scenarios from Python: run() and to_dict() give the CLI's --json fields, sweeps give the
serving columns, bad input raises ScenarioError naming the key."""
import os

import pytest

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "scenarios", "serve-llama3-70b-8xh100-fp8.yaml")


def small():
    s = stacksim.Scenario.load(SCENARIO)
    s.set("workload.requests", 80).set("slo", None)
    return s


def test_run_returns_the_serving_fields():
    r = small().run()
    d = r.to_dict()
    assert d["kind"] == "serving"
    for metric in ("ttft_ms", "tpot_ms", "e2e_latency_s"):
        p = d[metric]
        assert 0 < p["p50"] <= p["p90"] <= p["p95"] <= p["p99"]
    assert r.output_tokens_per_s > 0
    assert d["usd_per_million_tokens"] == pytest.approx(d["usd_per_hour"] / (d["output_tokens_per_s"] * 3600 / 1e6))
    assert "bottleneck" in repr(r)


def test_run_with_overrides_and_a_bad_key():
    r = stacksim.run(SCENARIO, workload__requests=60, slo=None, serving__kv_cache_dtype="fp8")
    assert r.completed_requests == 60
    with pytest.raises(stacksim.ScenarioError, match="serving.engine"):
        stacksim.run(SCENARIO, workload__requests=60, serving__engine="nonesuch")


def test_sweep_has_serving_columns():
    df = stacksim.sweep(small(), {"workload.rate_per_s": [2, 6]}, threads=1)
    assert list(df["workload.rate_per_s"]) == [2, 6]
    for col in ("output_tokens_per_s", "ttft_ms_p99", "tpot_ms_p99", "kv_capacity_tokens", "error"):
        assert col in df
    assert df["error"].isna().all()


def test_purchase_search_for_a_serving_scenario():
    path = os.path.join(ROOT, "scenarios", "purchase-serve-llama3-70b.yaml")
    doc = stacksim.purchase(path, purchase__rate_per_s=10, purchase__tp=[4, 8], workload__requests=200)
    assert doc["found"] and doc["rate_per_s"] == 10
    best = doc["options"][0]
    assert best["replicas"] * best["rate_per_replica_per_s"] >= 10
    assert best["gpus"] == best["replicas"] * best["tp"]
    costs = [o["usd_per_hour"] for o in doc["options"] if o["feasible"]]
    assert costs == sorted(costs)
    assert all(o["why"] for o in doc["options"][1:])
    with pytest.raises(stacksim.ScenarioError, match="purchase.rate_per_s"):
        stacksim.purchase(path, purchase__rate_per_s=-1)
