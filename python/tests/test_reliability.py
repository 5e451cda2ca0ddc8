"""Input safety of the Python API (issue 37): Scenario.load reads files with the CLI's reader
(duplicate keys, several documents and alias bombs refused as there), and bad values or calls
raise ScenarioError naming the file and key, never AttributeError/TypeError/RecursionError.
Property-based: any scenario dict built from scenario-like keys and hostile values either runs to
finite numbers or raises ScenarioError."""
import math
import os
import time

import pytest

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = {
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "model": {"layers": 4, "hidden": 1024, "heads": 16, "ffn_hidden": 4096, "vocab": 32000, "seq_len": 1024},
    "parallelism": {"tp": 2, "pp": 2, "dp": 4, "micro_batch": 1, "global_batch": 16},
}


def write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_load_refuses_duplicate_keys_as_the_cli_does(tmp_path):
    path = write(tmp_path, "cluster: {node: dgx-h100, nodes: 2}\ncluster: {node: dgx-a100, nodes: 1}\n")
    with pytest.raises(stacksim.ScenarioError, match="cluster.*given twice"):
        stacksim.Scenario.load(path)


def test_load_refuses_several_documents(tmp_path):
    with pytest.raises(stacksim.ScenarioError, match="2 YAML documents"):
        stacksim.Scenario.load(write(tmp_path, "a: 1\n---\nb: 2\n"))


def test_load_stops_an_alias_bomb_quickly(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    path = write(tmp_path, "\n".join(lines) + "\n")
    t = time.monotonic()
    with pytest.raises(stacksim.ScenarioError, match="YAML nodes"):
        stacksim.Scenario.load(path)
    assert time.monotonic() - t < 20  # refused while counting, not after expanding 10^9 nodes


def test_load_refuses_devices_and_missing_files():
    with pytest.raises(stacksim.ScenarioError, match="not a regular file"):
        stacksim.Scenario.load("/dev/zero")
    with pytest.raises(stacksim.ScenarioError, match="does not exist"):
        stacksim.Scenario.load(os.path.join(ROOT, "no-such-file.yaml"))


def test_loaded_values_keep_their_yaml_types():
    s = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml"))
    d = s.to_dict()
    assert isinstance(d["parallelism"]["tp"], int)
    assert isinstance(d["cluster"]["node"], str)


@pytest.mark.parametrize("call", [
    lambda: stacksim.Scenario([1, 2]),
    lambda: stacksim.Scenario.load(42),
    lambda: stacksim.Scenario(SMALL).set("", 1),
    lambda: stacksim.Scenario(SMALL).set("model..layers", 1),
    lambda: stacksim.Scenario(SMALL).set(3, 1),
    lambda: stacksim.Scenario(SMALL).set("model.layers.deeper", 1),
    lambda: stacksim.Scenario(SMALL).set("model.layers", object()).run(),
    lambda: stacksim.Scenario(SMALL).set("model.layers", float("nan")).run(),
    lambda: stacksim.Scenario(SMALL).set("model.layers", float("inf")).run(),
    lambda: stacksim.Scenario({**SMALL, "model": 5}).set("model.layers", 4),
    lambda: stacksim.Scenario({**SMALL, "prices": {"gpu_hour_usd": 1e308}}).run(),
    lambda: stacksim.Scenario({**SMALL, "hardware": {"gpu": "H100-FAKE-1TB"}}).run(),
])
def test_bad_calls_raise_the_api_error(call):
    with pytest.raises(stacksim.ScenarioError):
        call()


def test_a_self_referencing_dict_is_a_scenario_error():
    d = dict(SMALL)
    d["model"] = dict(SMALL["model"])
    d["model"]["self"] = d
    with pytest.raises(stacksim.ScenarioError):
        stacksim.Scenario(d).run()


def finite(x):
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(finite(v) for v in x.values())
    if isinstance(x, list):
        return all(finite(v) for v in x)
    return True


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

KEYS = ["cluster.nodes", "cluster.node", "model.layers", "model.hidden", "model.heads", "model.seq_len",
        "model.vocab", "parallelism.tp", "parallelism.pp", "parallelism.dp", "parallelism.micro_batch",
        "parallelism.global_batch", "parallelism.zero", "parallelism.recompute", "hardware.gpu",
        "prices.gpu_hour_usd", "failures.restart_s", "failures.mtbf_hours_per_gpu", "storage.read_GBps",
        "checkpoint.every_steps", "model.moe.experts", "model.moe.imbalance", "model.typo"]
VALUES = st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["", "abc", "H200-SXM-141GB", "dgx-a100", "auto", "1e308", "450 GB/s", None,
                                    True, [], {}, [1, 2], {"a": 1}]),
                   st.text(max_size=8))


@hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
@hypothesis.given(st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=3))
def test_any_changed_scenario_runs_to_finite_numbers_or_raises_scenario_error(changes):
    s = stacksim.Scenario(SMALL)
    try:
        for k, v in changes:
            s.set(k, v)
        r = s.run().to_dict()
    except stacksim.ScenarioError:
        return
    assert finite(r), r
    assert 0 < r["mfu"] <= 1


@hypothesis.settings(max_examples=40, deadline=None, derandomize=True)
@hypothesis.given(st.text(max_size=200))
def test_any_text_loads_as_a_scenario_or_raises_scenario_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("h") / "s.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        stacksim.Scenario.load(str(path)).run()
    except stacksim.ScenarioError:
        pass
