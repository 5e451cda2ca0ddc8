#!/usr/bin/env python3
"""Prints README's accuracy table per software-stack family: for the training rows of the research
set (validation/cases.yaml) and of validation/extra/*.yaml, run through `stacksim validate` with the
committed stack fit (stacks/fitted.yaml): rows, sources, macro-MAPE (each source weighs the same),
the share predicted too fast, 80 % interval coverage; and the leave-one-source-out CV error that
`stacksim fit` wrote into stacks/fitted.yaml. Then the totals the issue's targets read.

usage: /usr/bin/python3 benchmarks/stack_report.py
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def validate(path):
    binary = os.path.join(ROOT, "build", "bin", "stacksim")
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        subprocess.run([binary, "validate", path, "--kind", "training", "--json", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["cases"]
    finally:
        os.unlink(out)


def summary(cases):
    """rows, sources, macro-MAPE %, max |error| %, % predicted too fast, coverage %."""
    ok = [c for c in cases if c.get("error_pct") is not None]
    if not ok:
        return None
    by_source = {}
    for c in ok:
        by_source.setdefault(c["source"], []).append(abs(c["error_pct"]))
    macro = sum(sum(v) / len(v) for v in by_source.values()) / len(by_source)
    time_like = lambda c: c["metric"].startswith("step_time") or c["metric"].startswith("layer")
    fast = sum(1 for c in ok if (c["error_pct"] < 0) == time_like(c))
    with_iv = [c for c in ok if "inside" in c]
    cov = 100.0 * sum(1 for c in with_iv if c["inside"]) / len(with_iv) if with_iv else float("nan")
    return len(ok), len(by_source), macro, max(abs(c["error_pct"]) for c in ok), 100.0 * fast / len(ok), cov


def fitted_cv():
    import yaml  # Debian python3-yaml
    path = os.path.join(ROOT, "stacks", "fitted.yaml")
    if not os.path.exists(path):
        return {}, None
    with open(path) as f:
        data = yaml.safe_load(f)
    return {k: v.get("cv_mape_pct") for k, v in (data.get("families") or {}).items()}, data["global"].get("cv_mape_pct")


def main():
    research = validate(os.path.join(ROOT, "validation", "cases.yaml"))
    extra = []
    for path in sorted(glob.glob(os.path.join(ROOT, "validation", "extra", "*.yaml"))):
        extra += validate(path)
    cv, cv_all = fitted_cv()
    families = sorted({c.get("software", "?") for c in research + extra if c.get("error_pct") is not None})
    print("| stack family | research rows | research MAPE % | extra rows (sources) | extra MAPE % | "
          "too fast % | CV MAPE % | 80 % coverage % |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    fmt = lambda x: "-" if x is None or x != x else f"{x:.1f}"
    for fam in families:
        r = summary([c for c in research if c.get("software") == fam])
        e = summary([c for c in extra if c.get("software") == fam])
        both = summary([c for c in research + extra if c.get("software") == fam])
        print(f"| `{fam}` | {r[0] if r else 0} | {fmt(r[2]) if r else '-'} | "
              f"{(str(e[0]) + ' (' + str(e[1]) + ')') if e else '0'} | {fmt(e[2]) if e else '-'} | "
              f"{fmt(both[4])} | {fmt(cv.get(fam))} | {fmt(both[5])} |")
    r, e, both = summary(research), summary(extra), summary(research + extra)
    print(f"| **all** | {r[0]} | {fmt(r[2])} | {e[0]} ({e[1]}) | {fmt(e[2])} | {fmt(both[4])} | {fmt(cv_all)} | "
          f"{fmt(both[5])} |")
    print(f"\nResearch set training: macro-MAPE {r[2]:.1f} %, max {r[3]:.1f} %; research + extra: "
          f"{both[0]} rows, macro-MAPE {both[2]:.1f} % (in-sample), predicted too fast {both[4]:.0f} %, "
          f"80 % coverage {both[5]:.0f} %; leave-one-source-out CV macro-MAPE {fmt(cv_all)} % (stacks/fitted.yaml).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
