"""Scenario.set() checks keys and values against the C++ scenario schema (config/schema.hpp)."""
import os

import pytest

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml")


def test_a_typo_in_a_key_suggests_the_declared_one():
    s = stacksim.Scenario.load(SCENARIO)
    with pytest.raises(stacksim.ScenarioError) as e:
        s.set("parallelism.micro_batchh", 2)
    msg = str(e.value)
    assert "key 'parallelism.micro_batchh': unknown key" in msg
    assert "did you mean 'micro_batch'" in msg
    assert "a whole number" in msg  # the suggested key's type comes with it
    assert "micro_batchh" not in s.to_dict()["parallelism"]  # nothing was written


def test_a_typo_in_a_section_suggests_the_section():
    with pytest.raises(stacksim.ScenarioError, match="did you mean 'parallelism'"):
        stacksim.Scenario.load(SCENARIO).set("paralelism.tp", 2)


def test_a_bad_type_names_what_the_key_expects():
    s = stacksim.Scenario.load(SCENARIO)
    with pytest.raises(stacksim.ScenarioError) as e:
        s.set("parallelism.tp", "four")
    assert "expected a whole number (GPUs, from 1 to 16777216), got 'four'" in str(e.value)
    with pytest.raises(stacksim.ScenarioError, match="expected true or false"):
        s.set("parallelism.sequence_parallel", "maybe")
    with pytest.raises(stacksim.ScenarioError, match="expected a map of keys, got a list"):
        s.set("cluster", [1, 2])
    assert s.to_dict()["parallelism"]["tp"] == 4  # unchanged


def test_a_value_out_of_its_range_is_refused_at_set():
    with pytest.raises(stacksim.ScenarioError, match="must be from 1 to 16777216, got 0"):
        stacksim.Scenario.load(SCENARIO).set("parallelism.tp", 0)


def test_good_values_pass_and_run():
    s = stacksim.Scenario.load(SCENARIO)
    s.set("parallelism.zero", "fsdp").set("parallelism.zero", 1).set("parallelism.cuda_graphs", ["attn"])
    s.set("host.storage_read_bandwidth", "5 GB/s").set("slo", None).set("prices", {"gpu_hour_usd": 2.5})
    assert s.to_dict()["prices"] == {"gpu_hour_usd": 2.5}
