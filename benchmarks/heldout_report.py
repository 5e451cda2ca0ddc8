#!/usr/bin/env python3
"""Prints README's table of the further published runs (validation/extra/*.yaml): per file and kind,
the cases predicted, MAPE, max error and the cases not buildable, by running `stacksim validate`;
then one line on the training rows' direction: how many are predicted too fast (a step time below
the measured one, or a throughput, TFLOP/s or MFU above it) and the median of the signed error
turned that way (positive = too fast); then how well the predictions compare two rows of one
source (ratio_accuracy.py).

usage: /usr/bin/python3 benchmarks/heldout_report.py
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import ratio_accuracy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    binary = os.path.join(ROOT, "build", "bin", "stacksim")
    print("| file | kind | cases | MAPE % | max % | not buildable |")
    print("|---|---|---:|---:|---:|---:|")
    too_fast = []  # per training row: the error turned so that positive means predicted too fast
    every_case = []
    paths = sorted(glob.glob(os.path.join(ROOT, "validation", "extra", "*.yaml")))
    for path in paths:
        fd, out = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            subprocess.run([binary, "validate", path, "--json", out], check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                cases = json.load(f)["cases"]
        finally:
            os.unlink(out)
        every_case += cases
        by_kind = {}
        for c in cases:
            if c["kind"] == "training" and c.get("error_pct") is not None:
                too_fast.append(-c["error_pct"] if c["metric"] == "step_time_s" else c["error_pct"])
            errors, unbuildable = by_kind.setdefault(c["kind"], ([], [0]))
            if c.get("error_pct") is None:
                unbuildable[0] += 1
            else:
                errors.append(abs(c["error_pct"]))
        for kind, (errors, unbuildable) in sorted(by_kind.items()):
            mape = f"{sum(errors) / len(errors):.1f}" if errors else "-"
            worst = f"{max(errors):.1f}" if errors else "-"
            print(f"| `{os.path.basename(path)}` | {kind} | {len(errors)} | {mape} | {worst} | {unbuildable[0]} |")
    if too_fast:
        too_fast.sort()
        n = len(too_fast)
        median = (too_fast[(n - 1) // 2] + too_fast[n // 2]) / 2
        fast = sum(1 for e in too_fast if e > 0)
        print(f"\nTraining rows: {n}; predicted too fast: {fast} ({100.0 * fast / n:.0f} %); "
              f"median signed error toward too fast: {median:+.1f} %")
    print()
    ratio_accuracy.print_table(ratio_accuracy.pair_errors(every_case, ratio_accuracy.case_keys(paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
