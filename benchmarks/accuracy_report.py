#!/usr/bin/env python3
"""Regenerates README's accuracy tables: runs `stacksim validate` on the bundled validation set and
prints Markdown tables (per kind and source: cases, MAPE, max error, not buildable; then how well
the training predictions compare two rows of one source, ratio_accuracy.py).

usage: /usr/bin/python3 benchmarks/accuracy_report.py [--cases FILE] [--json existing.json]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import ratio_accuracy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=os.path.join(ROOT, "validation", "cases.yaml"))
    ap.add_argument("--json", help="use an existing `stacksim validate --json` output instead of running")
    args = ap.parse_args()
    path = args.json
    if not path:
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        subprocess.run([os.path.join(ROOT, "build", "bin", "stacksim"), "validate", args.cases, "--json", path],
                       check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        data = json.load(f)
    rows = collections.defaultdict(list)
    unbuildable = collections.Counter()
    for c in data["cases"]:
        if "error" in c:
            unbuildable[(c["kind"], c["source"])] += 1
        else:
            rows[(c["kind"], c["source"])].append(abs(c["error_pct"]))
    keys = sorted(set(rows) | set(unbuildable))
    print("| kind | source | cases | MAPE % | max % | not buildable |")
    print("|---|---|---:|---:|---:|---:|")
    for k in keys:
        errs = rows.get(k, [])
        mape = f"{sum(errs) / len(errs):.1f}" if errs else "-"
        worst = f"{max(errs):.1f}" if errs else "-"
        print(f"| {k[0]} | {k[1]} | {len(errs)} | {mape} | {worst} | {unbuildable.get(k, 0)} |")
    print()
    print("| kind | cases | MAPE % (all cases) | macro MAPE % (each source weighs the same) | max % |")
    print("|---|---:|---:|---:|---:|")
    for kind, s in sorted(data["summary"]["by_kind"].items()):
        print(f"| {kind} | {s['n']} | {s['mape_pct']:.1f} | {s['macro_mape_pct']:.1f} | {s['max_abs_error_pct']:.1f} |")
    print()
    ratio_accuracy.print_table(ratio_accuracy.pair_errors(data["cases"], ratio_accuracy.case_keys([args.cases])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
