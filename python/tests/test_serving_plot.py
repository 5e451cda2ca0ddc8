"""`stacksim plot serving`: the latency-throughput curve of a serving sweep CSV (Agg backend)."""
import csv
import os

import matplotlib

matplotlib.use("Agg")

from stacksim import plot_cli, plots  # noqa: E402

HEADER = ["hardware.gpu", "workload.rate_per_s", "num_gpus", "output_tokens_per_s", "total_tokens_per_s",
          "requests_per_s", "goodput_requests_per_s", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p99",
          "e2e_latency_s_p50", "e2e_latency_s_p99", "kv_capacity_tokens", "kv_utilization_mean", "preemptions",
          "max_rate_under_slo_per_s", "usd_per_million_tokens", "bottleneck", "error"]


def write_sweep(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for gpu, rate, tps, ttft, tpot, e2e, err in rows:
            w.writerow([gpu, rate, 8, tps, tps * 2, rate, rate, ttft / 2, ttft, tpot / 2, tpot, e2e / 2, e2e,
                        1e6, 0.5, 0, "", "", "weight-read HBM", err])


ROWS = [  # written out of load order: the curve is drawn in increasing rate
    ("H100", 8, 2000.0, 400.0, 40.0, 9.0, ""),
    ("H100", 4, 1000.0, 200.0, 30.0, 7.0, ""),
    ("H100", 12, 2600.0, 3000.0, 90.0, 20.0, ""),
    ("H200", 4, 1000.0, 150.0, 25.0, 6.0, ""),
    ("H200", 8, 2000.0, 250.0, 30.0, 7.0, ""),
    ("H200", 12, 3000.0, 600.0, 45.0, 10.0, ""),
    ("H200", 16, 0.0, 0.0, 0.0, 0.0, "workload: does not fit"),  # an error row is left out
]


def test_groups_one_line_per_gpu_in_load_order(tmp_path):
    path = tmp_path / "sweep.csv"
    write_sweep(path, ROWS)
    groups, load = plot_cli.serving_groups(str(path), ["ttft", "tpot"])
    assert load == "workload.rate_per_s"
    assert sorted(groups) == ["gpu=H100", "gpu=H200"]
    assert [p[0] for p in groups["gpu=H100"]] == [4, 8, 12]
    assert [p[1] for p in groups["gpu=H200"]] == [1000.0, 2000.0, 3000.0]
    assert groups["gpu=H100"][2][2]["ttft_ms_p99"] == 3000.0


def test_figure_has_labelled_axes_one_line_per_group_and_slo_lines(tmp_path):
    path = tmp_path / "sweep.csv"
    write_sweep(path, ROWS)
    groups, _ = plot_cli.serving_groups(str(path), ["ttft", "tpot", "e2e"])
    out = tmp_path / "curve.png"
    fig = plots.serving_curve(groups, str(out), ["ttft", "tpot", "e2e"], {"ttft": 2000.0, "tpot": 100.0})
    assert os.path.getsize(out) > 1000
    axes = fig.get_axes()
    assert [ax.get_ylabel() for ax in axes] == ["TTFT p99 (ms)", "TPOT p99 (ms)", "end-to-end latency p99 (s)"]
    assert all(ax.get_xlabel() == "output tokens/s" for ax in axes)
    ttft, tpot, e2e = axes
    curves = [l for l in ttft.get_lines() if l.get_label().startswith("gpu=")]
    assert [l.get_label() for l in curves] == ["gpu=H100", "gpu=H200"]
    assert list(curves[0].get_xdata()) == [1000.0, 2000.0, 2600.0]
    assert list(curves[0].get_ydata()) == [200.0, 400.0, 3000.0]
    assert list(curves[1].get_ydata()) == [150.0, 250.0, 600.0]
    slo = [l for l in ttft.get_lines() if l.get_label().startswith("SLO")]
    assert len(slo) == 1 and list(slo[0].get_ydata()) == [2000.0, 2000.0]
    tpot_curves = [l for l in tpot.get_lines() if l.get_label().startswith("gpu=")]
    assert list(tpot_curves[1].get_ydata()) == [25.0, 30.0, 45.0]
    assert any(l.get_label() == "SLO 100" for l in tpot.get_lines())
    assert not any(l.get_label().startswith("SLO") for l in e2e.get_lines())  # none given


def test_cli_writes_the_curve_and_refuses_bad_input(tmp_path):
    path = tmp_path / "sweep.csv"
    write_sweep(path, ROWS)
    out = tmp_path / "curve.svg"
    args = ["serving", str(path), "-o", str(out), "--ttft-slo-ms", "2000", "--tpot-slo-ms", "100"]
    assert plot_cli.main(args) == 0
    assert os.path.getsize(out) > 1000
    # A training sweep, an unknown metric, a zero SLO, no load column: exit 2, nothing written.
    training = tmp_path / "train.csv"
    training.write_text("parallel.tp,num_gpus,tokens_per_s,error\n8,8,100,\n")
    bad = tmp_path / "bad.png"
    assert plot_cli.main(["serving", str(training), "-o", str(bad)]) == 2
    assert plot_cli.main(["serving", str(path), "-o", str(bad), "--metrics", "ttft,goodput"]) == 2
    assert plot_cli.main(["serving", str(path), "-o", str(bad), "--tpot-slo-ms", "0"]) == 2
    assert plot_cli.main(["serving", str(path), "-o", str(bad), "--load-column", "hardware.gpu"]) == 2  # not numbers
    assert plot_cli.main(["serving", str(path), "-o", str(bad), "--load-column", "workload.requests"]) == 2
    assert not bad.exists()
