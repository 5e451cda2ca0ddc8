"""`stacksim plot` (its Python side): files written from run/compare JSON; bad input exits 2."""
import json
import os

from stacksim import plot_cli


def test_breakdown_and_compare_plots(tmp_path):
    run = {"scenario": "x", "step_time_s": 2.0, "mfu": 0.5, "bottleneck": "GEMM compute",
           "breakdown": {"gemm": 1.5, "tp_comm": 0.5}}
    (tmp_path / "r.json").write_text(json.dumps(run))
    out = tmp_path / "b.png"
    assert plot_cli.main(["breakdown", str(tmp_path / "r.json"), "-o", str(out)]) == 0
    assert os.path.getsize(out) > 1000
    cmp = {"variants": [{"set": {"hardware.gpu": "H200"}, "speedup": 1.02}], "elasticity": [{"resource": "nvlink", "speedup": 1.1}]}
    (tmp_path / "c.json").write_text(json.dumps(cmp))
    assert plot_cli.main(["compare", str(tmp_path / "c.json"), "-o", str(tmp_path / "c.svg")]) == 0
    assert os.path.getsize(tmp_path / "c.svg") > 1000


def test_bad_input_exits_2(tmp_path):
    (tmp_path / "bad.json").write_text("{}")
    assert plot_cli.main(["breakdown", str(tmp_path / "bad.json"), "-o", str(tmp_path / "x.png")]) == 2
    assert plot_cli.main(["compare", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.png")]) == 2
