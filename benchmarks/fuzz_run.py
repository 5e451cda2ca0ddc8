#!/usr/bin/python3
"""Runs the libFuzzer targets of the `sanitize` build (fuzz/) for a fixed time each and prints how
many inputs each executed. Seeds: scenarios/ for the scenario reader; one file per case of the
validation case files for the case reader (written to the corpus folder). A crash, leak, timeout or
sanitizer report fails the run, and its input is copied to fuzz/regressions/<target>/, where the
`fuzz_*.regressions` tests replay it from then on (commit it with the fix).

    /usr/bin/python3 benchmarks/fuzz_run.py [--build build-sanitize] [--seconds 45] [--jobs 1]
    # a longer run, e.g. ten million executions in all: --seconds 3600 --jobs 2
    # one target only, on one core: --only fuzz_scenario --seconds 4500
    # CI's reproducible smoke run: a fixed seed and execution count instead of a time, so the
    # inputs CI tries are the ones tried here (fuzz_cases gets a tenth: its inputs are whole case files)
    /usr/bin/python3 benchmarks/fuzz_run.py --runs 20000 --seed 1
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def case_seeds(folder):
    """One small case file per case (the whole files are too large to mutate quickly)."""
    os.makedirs(folder, exist_ok=True)
    n = 0
    for path in [os.path.join(ROOT, "validation", "cases.yaml")] + sorted(glob.glob(os.path.join(ROOT, "validation", "extra", "*.yaml"))):
        with open(path) as f:
            data = yaml.safe_load(f)
        for case in (data or {}).get("cases", [])[::7]:  # a spread, not all 4,000
            with open(os.path.join(folder, f"seed-{n:05d}.yaml"), "w") as out:
                yaml.safe_dump({"format": "stacksim-validation/1", "cases": [case]}, out, sort_keys=False)
            n += 1
    return n


def run(binary, corpus, seeds, dictionary, seconds, jobs, artifacts, runs=None, seed=None):
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    limit = [f"-runs={runs}"] if runs else [f"-max_total_time={seconds}"]
    if seed is not None:
        limit.append(f"-seed={seed}")
    cmd = [binary, corpus] + seeds + [f"-dict={dictionary}", "-print_final_stats=1",
                                      "-max_len=8192", "-timeout=20", "-rss_limit_mb=2048",
                                      f"-artifact_prefix={artifacts}/"] + limit
    if jobs > 1:
        cmd += [f"-fork={jobs}"]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    execs = sum(int(x) for x in re.findall(r"stat::number_of_executed_units:\s*(\d+)", p.stderr))
    if jobs > 1:  # fork mode reports a running total instead ("#N: cov: ... job: J")
        totals = re.findall(r"^#(\d+):?\s", p.stderr, re.MULTILINE)
        execs = max([execs] + [int(t) for t in totals])
    return p.returncode, execs, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-sanitize"))
    ap.add_argument("--seconds", type=int, default=45)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--runs", type=int, default=None,
                    help="executions of fuzz_scenario (fuzz_cases: a tenth) instead of --seconds")
    ap.add_argument("--seed", type=int, default=None, help="libFuzzer's random seed (reproducible with --runs)")
    ap.add_argument("--only", choices=["fuzz_scenario", "fuzz_cases"], default=None,
                    help="run one target (e.g. a long fuzz_scenario run on one core while the other works)")
    a = ap.parse_args()
    if a.runs and a.jobs > 1:
        ap.error("--runs counts one process's executions: use it with --jobs 1")
    work = os.path.join(a.build, "fuzz-work")
    if a.runs:  # a reproducible run starts from the seeds alone, not from an earlier run's corpus
        shutil.rmtree(work, ignore_errors=True)
    seeds_cases = os.path.join(work, "seeds-cases")
    n = case_seeds(seeds_cases)
    targets = [
        ("fuzz_scenario", "scenario", [os.path.join(ROOT, "scenarios")], "scenario.dict", a.runs),
        ("fuzz_cases", "cases", [seeds_cases], "cases.dict", a.runs and max(1, a.runs // 10)),
    ]
    failed, total = False, 0
    for binary, name, seeds, dictionary, runs in targets:
        if a.only and binary != a.only:
            continue
        path = os.path.join(a.build, "bin", binary)
        artifacts = os.path.join(work, "artifacts-" + name)
        start = time.monotonic()
        shutil.rmtree(artifacts, ignore_errors=True)
        rc, execs, log = run(path, os.path.join(work, "corpus-" + name), seeds + [os.path.join(ROOT, "fuzz", "regressions", name)],
                             os.path.join(ROOT, "fuzz", dictionary), a.seconds, a.jobs, artifacts, runs, a.seed)
        total += execs
        seconds = time.monotonic() - start
        print(f"{binary}: {execs} executions in {seconds:.0f} s ({execs / max(1, seconds):.0f}/s), exit {rc}", flush=True)
        if rc != 0:
            failed = True
            kept = os.path.join(ROOT, "fuzz", "regressions", name)
            for f in glob.glob(os.path.join(artifacts, "*")):
                shutil.copy(f, kept)
                print(f"  finding kept as {os.path.join(kept, os.path.basename(f))}")
            print("\n".join(log.splitlines()[-40:]))
    print(f"total: {total} executions ({n} case seeds)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
