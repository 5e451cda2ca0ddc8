#!/usr/bin/env python3
"""How the plan search's fast tier ranks against the replay, and how fast it is (issue 36).

For every bundled training scenario (scenarios/*.yaml with a parallelism: section): runs
`stacksim plan SCENARIO -k 10 --replay-sample N --json`, i.e. the fast tier over the whole plan
space, the replay on its best 10 and on about N more plans spread evenly over the fast ranking,
and prints per scenario: plans valid / fitting / replayed, Spearman's rank correlation between
fast tier and replay over the replayed plans, whether the replay's best (among the replayed) is in
the fast top 5, the fast tier's worst error on its top 10, fast evaluations per second and the
search's wall time. Targets: Spearman >= 0.95, best in the fast top 5, within 5 % on the top 10,
>= 2,000 fast evaluations/s on 2 cores for 64-GPU plans, Llama-3 405B on 16,384 H100 ranked with
its top 10 replayed in <= 60 s.

usage: /usr/bin/python3 benchmarks/plan_rank_report.py [--sample N] [--threads T] [SCENARIO...]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    m = (n - 1) / 2
    sab = sum((x - m) * (y - m) for x, y in zip(ra, rb))
    saa = sum((x - m) ** 2 for x in ra)
    sbb = sum((y - m) ** 2 for y in rb)
    return sab / (saa * sbb) ** 0.5 if saa > 0 and sbb > 0 else float("nan")


def training_scenarios():
    import yaml

    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.yaml"))):
        with open(path) as f:
            data = yaml.safe_load(f)
        if isinstance(data, dict) and "parallelism" in data and "purchase" not in data:
            out.append(path)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", nargs="*")
    ap.add_argument("--sample", type=int, default=150, help="plans replayed besides the top 10 (spread over the ranking)")
    ap.add_argument("--stacksim", default=os.path.join(ROOT, "build", "bin", "stacksim"))
    args = ap.parse_args()
    print(f"{'scenario':34s} {'valid':>6s} {'fit':>6s} {'repl':>5s} {'spearman':>8s} {'best@5':>6s} "
          f"{'top10 err':>9s} {'fast/s':>8s} {'wall s':>7s}")
    for path in args.scenarios or training_scenarios():
        fd, out = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        t0 = time.time()
        proc = subprocess.run([args.stacksim, "plan", path, "-k", "10", "--replay-sample", str(args.sample), "--json", out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.time() - t0
        if proc.returncode != 0:
            print(f"{os.path.basename(path):34s} error: {proc.stderr.strip()[:100]}")
            continue
        with open(out) as f:
            doc = json.load(f)
        os.unlink(out)
        if "plans" not in doc:  # a purchase: section makes `plan` a purchase search
            print(f"{os.path.basename(path)[:-5]:34s} skipped: its purchase: section makes plan a purchase search")
            continue
        plans = doc["plans"]
        rep = [p for p in plans if p.get("replayed")]
        fast = [p["fast_step_time_s"] for p in rep]
        real = [p["step_time_s"] for p in rep]
        rho = spearman(fast, real) if len(rep) >= 3 else float("nan")
        by_fast = sorted(plans, key=lambda p: p["fast_step_time_s"])
        top5 = {id(p) for p in by_fast[:5]}
        best = min(rep, key=lambda p: p["step_time_s"]) if rep else None
        in_top5 = best is not None and id(best) in top5
        err = max((abs(p["fast_step_time_s"] - p["step_time_s"]) / p["step_time_s"] for p in by_fast[:10] if p.get("replayed")),
                  default=float("nan"))
        rate = doc["fit"] / doc["fast_seconds"] if doc["fast_seconds"] > 0 else float("nan")
        print(f"{os.path.basename(path)[:-5]:34s} {doc['evaluated']:6d} {doc['fit']:6d} {len(rep):5d} {rho:8.3f} "
              f"{'yes' if in_top5 else 'NO':>6s} {100 * err:8.1f}% {rate:8.0f} {wall:7.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
