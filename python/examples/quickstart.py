"""Quickstart: simulate the default scenario, then ask whether an H200 upgrade would help.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/quickstart.py
"""
import os

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
scenario = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "llama3-70b-64xh100.yaml"))
# A smaller copy so the example runs in a second.
scenario.set("model.layers", 20).set("parallelism.global_batch", 32)

h100 = scenario.run()
h200 = stacksim.Scenario(scenario.to_dict()).set("hardware.gpu", "H200-SXM-141GB").run()
print(f"H100: {h100.step_time_s:.3f} s/step, MFU {h100.mfu:.1%}, bottleneck: {h100.bottleneck}")
print(f"H200: {h200.step_time_s:.3f} s/step ({h100.step_time_s / h200.step_time_s:.2f}x)")
print(h100.breakdown_frame().sort_values("seconds", ascending=False).head(5).to_string(index=False))
