#!/usr/bin/python3
"""A sweep of 10^8 points streams in constant memory and resumes without simulating a row again:
starts `stacksim sweep` on a 10^8-point grid of the Llama 3 70B scenario, stops it with SIGTERM
after a while, reads its peak memory (VmHWM) just before, then reruns it for a while and checks
that the rerun resumed every row of the first (none simulated twice) and that the file holds the
grid's first points in order.

    /usr/bin/python3 benchmarks/sweep_stream.py [build/bin/stacksim] [--seconds 30]
"""
import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_for(cmd, seconds):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    rss = peak_rss_mb(p.pid)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stacksim", nargs="?", default=os.path.join(ROOT, "build", "bin", "stacksim"))
    ap.add_argument("--seconds", type=float, default=30)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sweep-stream-")
    sweep = os.path.join(d, "sweep.yaml")
    scenario = os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml")
    ten = lambda start: "[" + ", ".join(str(start + i) for i in range(10)) + "]"
    with open(sweep, "w") as f:  # 10^8 points: eight keys of ten values
        f.write(f"scenario: {scenario}\nset: {{model.layers: 8, parallelism.pp: 2, parallelism.vp: 1}}\ngrid:\n")
        f.write(f"  parallelism.micro_batch: {ten(1)}\n  parallelism.global_batch: {ten(64)}\n")
        f.write(f"  model.seq_len: {ten(1024)}\n  model.vocab: {ten(32000)}\n  model.heads: {ten(64)}\n")
        f.write(f"  model.ffn_hidden: {ten(28672)}\n  model.kv_heads: {ten(8)}\n  parallelism.zero: {ten(0)}\n")
    out = os.path.join(d, "rows.csv")
    cmd = [a.stacksim, "sweep", sweep, "-o", out]
    rc1, _, err1, rss1 = run_for(cmd, a.seconds)
    with open(out) as f:
        rows1 = sum(1 for _ in f) - 1
    rc2, out2, err2, rss2 = run_for(cmd, a.seconds)
    with open(out) as f:
        r = list(csv.reader(f))
    rows2 = len(r) - 1
    summary = out2.strip().splitlines()[-1] if out2.strip() else ""
    resumed = int(summary.split(" resumed")[0].split()[-1]) if " resumed" in summary else -1
    print(f"grid: 10^8 points; first run: exit {rc1}, {rows1} rows, peak RSS {rss1:.0f} MB")
    print(f"  {err1.strip().splitlines()[-1] if err1.strip() else ''}")
    print(f"rerun: exit {rc2}, {rows2} rows, resumed {resumed}, peak RSS {rss2:.0f} MB")
    ok = rc1 == 128 + signal.SIGTERM and resumed == rows1 and rows2 > rows1 and max(rss1, rss2) < 500
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
