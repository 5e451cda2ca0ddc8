"""`stacksim plot` (the CLI hands plotting to this module, since the plots are matplotlib's).

    stacksim plot breakdown RESULT.json [RESULT.json ...] -o breakdown.png
    stacksim plot compare COMPARE.json -o speedup.svg      # from `stacksim compare --json`
    stacksim plot scaling SWEEP.csv --gpus-column KEY -o scaling.png   # tokens/s vs a GPU-count column
    stacksim plot serving SWEEP.csv -o curve.png [--metrics ttft,tpot,e2e] [--load-column KEY]
        [--ttft-slo-ms MS] [--tpot-slo-ms MS] [--e2e-slo-s S]
        # a serving sweep over workload.rate_per_s (or workload.concurrency): p99 latency against
        # output tokens/s, one line per value of the other swept keys, SLO limits as dashed lines
"""
import argparse
import csv
import json
import os
import sys

from . import Result, plots


def _number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def serving_groups(path: str, metrics, load_column=None):
    """The points of a serving sweep CSV: ({group label: [(load, output tokens/s, row)]}, load column).
    The swept keys are the columns before num_gpus; the load is workload.rate_per_s or
    workload.concurrency unless named; the groups are the other swept keys' values. Rows with an
    error or without the figures drawn are left out."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        rows = list(reader)
    need = ["output_tokens_per_s"] + [plots.SERVING_LATENCIES[m][0] for m in metrics]
    if "num_gpus" not in header or any(c not in header for c in need):
        raise ValueError(f"{path}: not a serving sweep (expected the CSV `stacksim sweep` writes for a serving "
                         f"scenario, with columns {', '.join(need)})")
    swept = header[: header.index("num_gpus")]
    if load_column is None:
        load_column = next((c for c in ("workload.rate_per_s", "workload.concurrency") if c in swept), None)
    if load_column not in swept:
        raise ValueError(f"{path}: no swept load column (expected workload.rate_per_s or workload.concurrency "
                         f"among {swept}; name it with --load-column)")
    others = [c for c in swept if c != load_column and len({r[c] for r in rows}) > 1]
    groups = {}
    for r in rows:
        values = {c: _number(r.get(c)) for c in need}
        load = _number(r.get(load_column))
        if r.get("error") or load is None or any(v is None for v in values.values()):
            continue
        label = ", ".join(f"{c.split('.')[-1]}={r[c]}" for c in others) or "all"
        groups.setdefault(label, []).append((load, values["output_tokens_per_s"], values))
    if not groups:
        raise ValueError(f"{path}: no row without an error has {', '.join(need)}")
    for points in groups.values():
        points.sort(key=lambda p: p[0])
    return groups, load_column


def _serving(a) -> None:
    metrics = [m.strip() for m in a.metrics.split(",") if m.strip()]
    bad = [m for m in metrics if m not in plots.SERVING_LATENCIES]
    if bad or not metrics:
        raise ValueError(f"--metrics: unknown {bad or 'empty list'} (expected a comma list of ttft, tpot, e2e)")
    groups, load_column = serving_groups(a.inputs[0], metrics, a.load_column)
    given = {"ttft": ("--ttft-slo-ms", a.ttft_slo_ms), "tpot": ("--tpot-slo-ms", a.tpot_slo_ms),
             "e2e": ("--e2e-slo-s", a.e2e_slo_s)}
    slos = {}
    for m, (flag, v) in given.items():
        if v is None:
            continue
        if not v > 0 or v == float("inf"):
            raise ValueError(f"{flag}: {v} is not a positive, finite limit")
        slos[m] = v
    plots.serving_curve(groups, a.output, metrics, slos, load_label=load_column)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="stacksim plot", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["breakdown", "compare", "scaling", "serving"])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", required=True, help="PNG or SVG file")
    ap.add_argument("--gpus-column", default="num_gpus", help="scaling: the CSV column holding the GPU count")
    ap.add_argument("--metrics", default="ttft,tpot", help="serving: the p99 latencies to draw (ttft, tpot, e2e)")
    ap.add_argument("--load-column", help="serving: the swept load key (default workload.rate_per_s or workload.concurrency)")
    ap.add_argument("--ttft-slo-ms", type=float, help="serving: TTFT p99 limit to draw")
    ap.add_argument("--tpot-slo-ms", type=float, help="serving: TPOT p99 limit to draw")
    ap.add_argument("--e2e-slo-s", type=float, help="serving: end-to-end p99 limit to draw")
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
        elif a.kind == "serving":
            _serving(a)
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
