"""`stacksim plot` (the CLI hands plotting to this module, since the plots are matplotlib's).

    stacksim plot breakdown RESULT.json [RESULT.json ...] -o breakdown.png
    stacksim plot compare COMPARE.json -o speedup.svg      # from `stacksim compare --json`
    stacksim plot scaling SWEEP.csv --gpus-column KEY -o scaling.png   # tokens/s vs a GPU-count column
"""
import argparse
import csv
import json
import os
import sys

from . import Result, plots


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="stacksim plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["breakdown", "compare", "scaling"])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", required=True, help="PNG or SVG file")
    ap.add_argument("--gpus-column", default="num_gpus", help="scaling: the CSV column holding the GPU count")
    a = ap.parse_args(argv)
    try:
        if a.kind == "breakdown":
            results, labels = [], []
            for path in a.inputs:
                with open(path) as f:
                    d = json.load(f)
                if "breakdown" not in d:
                    raise ValueError(f"{path}: no 'breakdown' (expected `stacksim run --json` output)")
                results.append(Result(d))
                labels.append(d.get("scenario", os.path.basename(path)))
            plots.breakdown_bars(results, labels, a.output)
        elif a.kind == "compare":
            with open(a.inputs[0]) as f:
                d = json.load(f)
            labels = [", ".join(f"{k}={v}" for k, v in x["set"].items()) for x in d.get("variants", [])]
            speedups = [x["speedup"] for x in d.get("variants", [])]
            labels += [f"2x {e['resource']}" for e in d.get("elasticity", [])]
            speedups += [e["speedup"] for e in d.get("elasticity", [])]
            if not speedups:
                raise ValueError(f"{a.inputs[0]}: no variants or elasticity (expected `stacksim compare --json` output)")
            plots.speedup_bars(labels, speedups, a.output)
        else:
            with open(a.inputs[0]) as f:
                rows = [r for r in csv.DictReader(f) if r.get("tokens_per_s")]
            if not rows or a.gpus_column not in rows[0]:
                raise ValueError(f"{a.inputs[0]}: needs rows with tokens_per_s and a '{a.gpus_column}' column")
            rows.sort(key=lambda r: float(r[a.gpus_column]))
            plots.scaling_curve([int(float(r[a.gpus_column])) for r in rows], [float(r["tokens_per_s"]) for r in rows], a.output)
    except (OSError, ValueError, KeyError) as e:
        print(f"stacksim plot: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
