#!/usr/bin/python3
"""Fits the host model (host.kernel_launch, host.step_overhead) to measured PyTorch steps.

probe/torch_step.py times real training steps on one GPU; with --config small it times models so
small that their steps are host-bound (the GPU waits for the Python process, which spends a fixed
time per step plus a time per kernel it launches). Each measured row becomes the one-GPU scenario
benchmarks/torch_step_check.py builds and is replayed by stacksim, whose host chain and GPU stream
interleave as in the real run, so host-bound and GPU-bound rows both inform the fit. The two keys
are chosen to minimise the sum of squared relative errors over every row given (a pattern search:
each step a replay of every row); prints them, each row's GPU-alone step, kernels per step and
error at the fit, and the error at the current defaults.

    /usr/bin/python3 benchmarks/host_fit.py [STEPS.yaml ...] [--gpu H100-SXM5-80GB] [--binary build/bin/stacksim]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step_check import NODES, ROOT, scenario  # noqa: E402

DEFAULT_STEPS = [os.path.join(ROOT, "calibration/measurements", f)
                 for f in ("h100-sxm5-80gb-devicevm-2026-11-24-torch-step-small.yaml",
                           "h100-sxm5-80gb-devicevm-2026-11-24-torch-step.yaml")]
DEFAULT_KEYS = (41.0, 2.3)  # us per kernel, ms per step: the defaults (models/host/host.hpp)


class Rows:
    """The measured rows as scenarios, replayed at given host costs."""

    def __init__(self, binary, rows, gpu, workdir):
        self.binary, self.rows, self.paths = binary, rows, []
        for i, row in enumerate(rows):
            path = os.path.join(workdir, f"row-{i}.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(scenario(row, gpu, NODES[gpu]), f)
            self.paths.append(path)

    def run(self, launch_us, step_ms):
        """(step seconds, kernels per step) of every row."""
        out = []
        for row, path in zip(self.rows, self.paths):
            res = subprocess.run([self.binary, "run", path, "--json", path + ".json",
                                  "--set", f"host.kernel_launch={launch_us:.4f} us",
                                  "--set", f"host.step_overhead={step_ms:.4f} ms"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if res.returncode != 0:
                sys.exit(f"host_fit: stacksim failed on {row['model']} mb{row['micro_batch']}: {res.stderr}")
            with open(path + ".json") as f:
                doc = json.load(f)
            out.append((doc["step_time_s"], doc["host_launches_per_step"]))
        return out

    def errors(self, launch_us, step_ms):
        return [s / row["step_time_s"] - 1 for row, (s, _) in zip(self.rows, self.run(launch_us, step_ms))]


def sse(errors):
    return sum(e * e for e in errors)


def pattern_search(rows, start):
    """Minimises the squared relative errors over (us per kernel, ms per step), both >= 0."""
    x, best = list(start), sse(rows.errors(*start))
    steps = [8.0, 1.0]
    while steps[0] > 0.25 or steps[1] > 0.03:
        improved = False
        for k in (0, 1):
            for sign in (1, -1):
                y = list(x)
                y[k] = max(0.0, y[k] + sign * steps[k])
                v = sse(rows.errors(*y))
                if v < best:
                    x, best, improved = y, v, True
        if not improved:
            steps = [s / 2 for s in steps]
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steps", nargs="*", default=DEFAULT_STEPS)
    ap.add_argument("--gpu", default="H100-SXM5-80GB", help="catalogue GPU of the measured machine")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/bin/stacksim"))
    args = ap.parse_args()
    if args.gpu not in NODES:
        sys.exit(f"host_fit: no node for --gpu {args.gpu}; known: {', '.join(NODES)}")
    rows, machine = [], None
    for path in args.steps:
        with open(path) as f:
            doc = yaml.safe_load(f)
        if not isinstance(doc, dict) or doc.get("format") != "stacksim-torch-step/1":
            sys.exit(f"host_fit: {path} is not a stacksim-torch-step/1 file (probe/torch_step.py writes one)")
        rows += doc["steps"]
        machine = machine or doc["machine"]["gpu_name"]
    if len(rows) < 2:
        sys.exit("host_fit: needs at least two measured steps (probe/torch_step.py --config small, docs/probe.md)")
    with tempfile.TemporaryDirectory() as tmp:
        r = Rows(args.binary, rows, args.gpu, tmp)
        alone = r.run(0.0, 0.0)
        launch_us, step_ms = pattern_search(r, DEFAULT_KEYS)
        fitted, default = r.errors(launch_us, step_ms), r.errors(*DEFAULT_KEYS)
    print(f"measured: {machine}, {len(rows)} steps ({', '.join(os.path.relpath(p, ROOT) for p in args.steps)})")
    print(f"{'model':14s} {'mb':>3s} {'measured ms':>12s} {'GPU alone ms':>13s} {'kernels':>8s} {'err% fit':>9s} {'err% default':>13s}")
    for row, (g, n), ef, ed in zip(rows, alone, fitted, default):
        print(f"{row['model']:14s} {row['micro_batch']:3d} {1e3 * row['step_time_s']:12.2f} {1e3 * g:13.2f} {n:8.0f} "
              f"{100 * ef:+9.1f} {100 * ed:+13.1f}")
    mape = lambda e: 100 * sum(abs(x) for x in e) / len(e)  # noqa: E731
    print(f"fit: MAPE {mape(fitted):.1f} % (defaults {DEFAULT_KEYS[0]:g} us, {DEFAULT_KEYS[1]:g} ms: {mape(default):.1f} %)")
    print("scenario keys:")
    print(f"  host:\n    kernel_launch: {launch_us:.1f} us\n    step_overhead: {step_ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
