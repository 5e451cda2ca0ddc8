"""benchmarks/ratio_accuracy.py: the error of a predicted ratio between two rows of one source, and
which pairs count as an upgrade (GPU type changed) or scaling (GPU count changed)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import ratio_accuracy  # noqa: E402


def case(id_, error_pct, metric="step_time_s"):
    return {"id": id_, "kind": "training", "metric": metric, "error_pct": error_pct}


KEYS = {
    "h100": ("src", "H100", 8, "Llama 8B", "bf16"),
    "b200": ("src", "B200", 8, "Llama 8B", "bf16"),
    "h100x64": ("src", "H100", 64, "Llama 8B", "bf16"),
    "other": ("elsewhere", "B200", 8, "Llama 8B", "bf16"),
}


def test_a_shared_shortfall_cancels_and_the_error_is_symmetric():
    # Both rows 20 % too fast: the ratio between them is exact.
    groups = ratio_accuracy.pair_errors([case("h100", -20.0), case("b200", -20.0)], KEYS)
    assert groups["GPU type"] == [0.0]
    assert groups["GPU count"] == []
    # -20 % and +20 %: predicted ratio 0.8 / 1.2 = 2/3 of the measured one, a 50 % error either way.
    a = ratio_accuracy.pair_errors([case("h100", -20.0), case("b200", 20.0)], KEYS)["GPU type"]
    b = ratio_accuracy.pair_errors([case("b200", 20.0), case("h100", -20.0)], KEYS)["GPU type"]
    assert abs(a[0] - 50.0) < 1e-9 and abs(b[0] - 50.0) < 1e-9


def test_pairs_stay_within_a_source_and_a_metric():
    cases = [case("h100", 0.0), case("h100x64", 10.0), case("other", 30.0), case("b200", 5.0, metric="mfu")]
    groups = ratio_accuracy.pair_errors(cases, KEYS)
    assert len(groups["GPU count"]) == 1 and abs(groups["GPU count"][0] - 10.0) < 1e-9
    assert groups["GPU type"] == []  # the B200 rows are another source's or another metric's
    assert len(groups["any two rows"]) == 1
