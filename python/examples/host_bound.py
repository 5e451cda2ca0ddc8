"""A host-bound job: which upgrade helps? Compares faster GPUs with CUDA graphs on story (f).

    PYTHONPATH=build/python /usr/bin/python3 python/examples/host_bound.py
"""
import os

import stacksim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
base = stacksim.Scenario.load(os.path.join(ROOT, "scenarios", "story-host-bound.yaml"))
report = stacksim.compare(base, [{"hardware.gpu": "B200"}, {"hardware.gpu": "H200-SXM-141GB"},
                                 {"parallelism.cuda_graphs": "full"},
                                 {"parallelism.cuda_graphs": ["attn", "mlp"]}])
print(f"baseline: {report['baseline']['step_time_s'] * 1e3:.1f} ms/step, bottleneck: {report['baseline']['bottleneck']}")
for v in report["variants"]:
    print(f"  {v['set']}: {v['speedup']:.2f}x ({v['bottleneck']})")
