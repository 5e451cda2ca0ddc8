"""Sweep tensor- and data-parallel sizes for a 16-layer Llama-style model on 64 H100s.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/sweep_tp.py
"""
import os

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
base = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml"))
base.set("model.layers", 16).set("parallelism.vp", 1).set("parallelism.global_batch", 32)
df = stacksim.sweep(base, {"parallelism.tp": [2, 4, 8], "parallelism.dp": [1, 2, 4]})
ok = df[df["error"].isna()]
print(ok[["parallelism.tp", "parallelism.dp", "step_time_s", "mfu", "bottleneck"]].to_string(index=False))
print(f"{len(df) - len(ok)} of {len(df)} combinations are invalid (their reasons are in df['error'])")
