"""benchmarks/host_fit.py on the shipped host-bound H100 steps (calibration/measurements/) recovers the
host model's defaults (models/host/host.hpp: 41 us per kernel, 2.3 ms per step), which were set
from its output: the test fails if the replay or the measurements move the fit away from them."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = os.path.join(ROOT, "calibration", "measurements", "h100-sxm5-80gb-devicevm-2026-11-24-torch-step-small.yaml")


def test_host_fit_recovers_the_defaults():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "host_fit.py"), SMALL],
                         check=True, capture_output=True, text=True).stdout
    launch_us = float(re.search(r"kernel_launch: ([0-9.]+) us", out).group(1))
    step_ms = float(re.search(r"step_overhead: ([0-9.]+) ms", out).group(1))
    assert abs(launch_us - 41.0) <= 1.0, out
    assert abs(step_ms - 2.3) <= 0.3, out
    fit, default = map(float, re.search(r"fit: MAPE ([0-9.]+) % \(defaults .*: ([0-9.]+) %\)", out).groups())
    assert fit <= default + 0.1, out
